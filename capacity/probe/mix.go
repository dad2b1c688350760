package probe

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A traffic mix (Options.Mix; RFC 9411 section 7.1's application traffic
// mix, reduced to what an HTTP device under test sees of it: object
// sizes): TPS and Throughput fetch /bytes/N with N drawn by weight for
// each arrival. Arrival i's size is a pure function of i and the mix
// (MixEntryOf: a hash of i, not a shared random source), so every run of a
// trial of n arrivals fetches the same sizes in the same order, whichever
// connection serves each, and two trials of one load offer the same bytes.
// Throughput converts Mbit/s to transactions per second by the mix's
// weighted mean size (Mix.MeanSize).

// MaxMixEntries bounds a mix's sizes; MaxMixWeight a weight.
const (
	MaxMixEntries = 64
	MaxMixWeight  = 1_000_000
	// MaxObjectSize is the largest object a mix may name (the built-in
	// target's /bytes/N limit, 16 MiB).
	MaxObjectSize = 16 << 20
)

// MixEntry is one object size and its weight.
type MixEntry struct {
	Size   int64
	Weight int
}

// Mix is a traffic mix: sizes and weights, in the order given.
type Mix []MixEntry

// ParseMix reads "SIZE:WEIGHT,...": SIZE a whole number of bytes with an
// optional unit B, KiB or MiB (1024-based) or kB or MB (1000-based), case
// as written; WEIGHT a whole number from 1 to MaxMixWeight. Example:
// "1KiB:50,16KiB:30,512KiB:20". Errors name the entry (from 1) and wrap
// ErrOptions.
func ParseMix(s string) (Mix, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: mix: empty (want SIZE:WEIGHT,..., e.g. 1KiB:50,16KiB:30,512KiB:20)", ErrOptions)
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxMixEntries {
		return nil, fmt.Errorf("%w: mix: %d entries, at most %d", ErrOptions, len(parts), MaxMixEntries)
	}
	m := make(Mix, 0, len(parts))
	for i, part := range parts {
		part = strings.TrimSpace(part)
		size, weight, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("%w: mix entry %d %q: want SIZE:WEIGHT", ErrOptions, i+1, part)
		}
		n, err := ParseSize(strings.TrimSpace(size))
		if err != nil {
			return nil, fmt.Errorf("%w: mix entry %d %q: %w", ErrOptions, i+1, part, err)
		}
		w, err := strconv.Atoi(strings.TrimSpace(weight))
		if err != nil || w < 1 || w > MaxMixWeight {
			return nil, fmt.Errorf("%w: mix entry %d %q: weight %q must be a whole number from 1 to %d", ErrOptions, i+1, part, weight, MaxMixWeight)
		}
		m = append(m, MixEntry{Size: n, Weight: w})
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"kB", 1000}, {"MB", 1000_000}, {"B", 1}}

// ParseSize reads a size in bytes: digits with an optional unit B, KiB,
// MiB, kB or MB (case as written: "KB" and "kb" are refused as ambiguous),
// from 1 byte to MaxObjectSize.
func ParseSize(s string) (int64, error) {
	digits, mult := s, int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			digits, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" || len(digits) > 9 {
		return 0, fmt.Errorf("size %q: want a whole number with an optional unit B, KiB, MiB, kB or MB", s)
	}
	n, _ := strconv.ParseInt(digits, 10, 64)
	n *= mult
	if n < 1 || n > MaxObjectSize {
		return 0, fmt.Errorf("size %q is %d bytes: must be 1 to %d", s, n, MaxObjectSize)
	}
	return n, nil
}

// check refuses an unusable mix (nil is no mix).
func (m Mix) check() error {
	if m == nil {
		return nil
	}
	if len(m) == 0 || len(m) > MaxMixEntries {
		return fmt.Errorf("%w: mix: %d entries, want 1 to %d", ErrOptions, len(m), MaxMixEntries)
	}
	seen := map[int64]bool{}
	for i, e := range m {
		switch {
		case e.Size < 1 || e.Size > MaxObjectSize:
			return fmt.Errorf("%w: mix entry %d: size %d must be 1 to %d bytes", ErrOptions, i+1, e.Size, MaxObjectSize)
		case e.Weight < 1 || e.Weight > MaxMixWeight:
			return fmt.Errorf("%w: mix entry %d: weight %d must be 1 to %d", ErrOptions, i+1, e.Weight, MaxMixWeight)
		case seen[e.Size]:
			return fmt.Errorf("%w: mix entry %d: size %d bytes is listed twice (add the weights)", ErrOptions, i+1, e.Size)
		}
		seen[e.Size] = true
	}
	return nil
}

// TotalWeight is the sum of the weights.
func (m Mix) TotalWeight() int {
	t := 0
	for _, e := range m {
		t += e.Weight
	}
	return t
}

// MeanSize is the weighted mean object size in bytes.
func (m Mix) MeanSize() float64 {
	var sum float64
	for _, e := range m {
		sum += float64(e.Size) * float64(e.Weight)
	}
	return sum / float64(m.TotalWeight())
}

// String is "1024:50,16384:30" (sizes in bytes), which ParseMix reads back.
func (m Mix) String() string {
	var b strings.Builder
	for i, e := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(e.Size, 10))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Weight))
	}
	return b.String()
}

// EntryOf returns the index of the entry arrival i draws: the hash of i
// (splitmix64) modulo the total weight, placed on the weights' cumulative
// sums. The mix must not be empty.
func (m Mix) EntryOf(i int) int {
	x := uint64(i) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	r := int(x % uint64(m.TotalWeight()))
	for k, e := range m {
		if r < e.Weight {
			return k
		}
		r -= e.Weight
	}
	return len(m) - 1
}

// schedule paces a throughput trial of a mix by bytes: arrival i is due
// when the bytes of the arrivals before it, offered at bytesPerSec, have
// gone out, so the trial offers exactly bytesPerSec whatever sizes its
// few arrivals drew. n is the arrivals due within d (at least 1);
// dueOf(n) is the planned length, the offered bytes over bytesPerSec.
func (m Mix) schedule(bytesPerSec float64, d time.Duration) (n int, dueOf func(i int) time.Duration) {
	budget := bytesPerSec * d.Seconds()
	offsets := []float64{0} // offsets[i]: the bytes of arrivals 0..i-1
	for sum := 0.0; n == 0 || sum < budget; n++ {
		sum += float64(m[m.EntryOf(n)].Size)
		offsets = append(offsets, sum)
		if n >= maxScheduled {
			break
		}
	}
	return n, func(i int) time.Duration {
		return time.Duration(offsets[min(i, n)] / bytesPerSec * float64(time.Second))
	}
}

// maxScheduled bounds a mix trial's arrivals (a schedule's memory).
const maxScheduled = 1 << 24
