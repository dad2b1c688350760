package probe

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseMix(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Mix
		err  string
	}{
		{"1KiB:50,16KiB:30,512KiB:20", Mix{{1024, 50}, {16384, 30}, {524288, 20}}, ""},
		{" 100 : 1 , 2MiB:3", Mix{{100, 1}, {2 << 20, 3}}, ""},
		{"1kB:1,1MB:1,7B:2", Mix{{1000, 1}, {1000_000, 1}, {7, 2}}, ""},
		{"16MiB:1", Mix{{16 << 20, 1}}, ""},
		{"", nil, "mix: empty"},
		{"1KiB", nil, `mix entry 1 "1KiB": want SIZE:WEIGHT`},
		{"1KiB:1,,2KiB:1", nil, `mix entry 2 "": want SIZE:WEIGHT`},
		{"1KB:1", nil, `size "1KB": want a whole number`},
		{"1kib:1", nil, `size "1kib"`},
		{"-1:1", nil, `size "-1"`},
		{"0:1", nil, "is 0 bytes: must be 1 to 16777216"},
		{"17MiB:1", nil, "must be 1 to 16777216"},
		{"1.5KiB:1", nil, `size "1.5KiB"`},
		{"9999999999:1", nil, `size "9999999999"`},
		{"1KiB:0", nil, `weight "0" must be a whole number from 1 to 1000000`},
		{"1KiB:-3", nil, "weight"},
		{"1KiB:1000001", nil, "weight"},
		{"1KiB:x", nil, "weight"},
		{"1024:1,1KiB:1", nil, "mix entry 2: size 1024 bytes is listed twice"},
		{strings.Repeat("1:1,", 64) + "1:1", nil, "65 entries, at most 64"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			m, err := ParseMix(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrOptions) {
					t.Fatalf("ParseMix(%q) = %v, %v; want an ErrOptions error containing %q", tt.in, m, err, tt.err)
				}
				return
			}
			if err != nil || len(m) != len(tt.want) {
				t.Fatalf("ParseMix(%q) = %v, %v; want %v", tt.in, m, err, tt.want)
			}
			for i := range m {
				if m[i] != tt.want[i] {
					t.Fatalf("ParseMix(%q) = %v; want %v", tt.in, m, tt.want)
				}
			}
			if back, err := ParseMix(m.String()); err != nil || back.String() != m.String() {
				t.Fatalf("ParseMix(%q) = %v, %v: String does not read back", m.String(), back, err)
			}
		})
	}
}

// FuzzParseMix: a mix is refused or valid (sizes 1 to MaxObjectSize,
// weights 1 to MaxMixWeight, no size twice) and reads back from String.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"1KiB:50,16KiB:30,512KiB:20", "1:1", "", ":", "1MB:1,1000kB:1", "0:0", "16MiB:1000000", "1 B:2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMix(s)
		if err != nil {
			if !errors.Is(err, ErrOptions) {
				t.Fatalf("ParseMix(%q): %v does not wrap ErrOptions", s, err)
			}
			return
		}
		if err := m.check(); err != nil {
			t.Fatalf("ParseMix(%q) = %v, which check refuses: %v", s, m, err)
		}
		if mean := m.MeanSize(); !(mean >= 1 && mean <= MaxObjectSize) {
			t.Fatalf("mean %v", mean)
		}
		back, err := ParseMix(m.String())
		if err != nil || back.String() != m.String() {
			t.Fatalf("String %q reads back as %v, %v", m.String(), back, err)
		}
		for i := range 64 {
			if k := m.EntryOf(i); k < 0 || k >= len(m) {
				t.Fatalf("EntryOf(%d) = %d of %d", i, k, len(m))
			}
		}
	})
}

// Arrival i's entry is a function of i alone, and the draws follow the
// weights.
func TestMixEntryOf(t *testing.T) {
	m := Mix{{1024, 50}, {16384, 30}, {524288, 20}}
	const n = 100_000
	var counts [3]int
	for i := range n {
		k := m.EntryOf(i)
		if k != m.EntryOf(i) {
			t.Fatal("EntryOf is not a function of i")
		}
		counts[k]++
	}
	for k, e := range m {
		want := float64(n) * float64(e.Weight) / 100
		if got := float64(counts[k]); math.Abs(got-want) > 4*math.Sqrt(want) {
			t.Fatalf("entry %d drawn %v times of %d; want about %v", k, got, n, want)
		}
	}
	if got := m.MeanSize(); got != (1024*50+16384*30+524288*20)/100.0 {
		t.Fatalf("MeanSize %v", got)
	}
	// The first arrivals are not all one size (a trial of few arrivals
	// still sees the mix).
	seen := map[int]bool{}
	for i := range 20 {
		seen[m.EntryOf(i)] = true
	}
	if len(seen) != 3 {
		t.Fatalf("the first 20 arrivals draw %d sizes", len(seen))
	}
}

// The byte schedule: the arrivals due within the trial, no arrival before
// the previous one, the planned length the offered bytes at the rate.
func TestMixSchedule(t *testing.T) {
	for _, tt := range []struct {
		m   Mix
		bps float64
		d   time.Duration
	}{
		{Mix{{1024, 50}, {16384, 30}, {524288, 20}}, 5e6, time.Second},
		{Mix{{1000, 1}}, 1e6, 500 * time.Millisecond},
		{Mix{{16 << 20, 1}}, 1000, time.Second}, // one object longer than the trial
	} {
		n, dueOf := tt.m.schedule(tt.bps, tt.d)
		var bytes int64
		for i := range n {
			bytes += tt.m[tt.m.EntryOf(i)].Size
			if dueOf(i) >= tt.d && i > 0 || i > 0 && dueOf(i) < dueOf(i-1) {
				t.Fatalf("%v: arrival %d due %v (trial %v, previous %v)", tt.m, i, dueOf(i), tt.d, dueOf(i-1))
			}
		}
		if n < 1 || dueOf(n) < tt.d && n > 0 && bytes < int64(tt.bps*tt.d.Seconds()) {
			t.Fatalf("%v: %d arrivals, planned %v", tt.m, n, dueOf(n))
		}
		if got := dueOf(n).Seconds() * tt.bps; math.Abs(got-float64(bytes)) > 1 {
			t.Fatalf("%v: planned length offers %v bytes, the arrivals %d", tt.m, got, bytes)
		}
	}
	if n, _ := (Mix{{1000, 1}}).schedule(1e6, 500*time.Millisecond); n != 500 {
		t.Fatalf("1000-byte objects at 1 MB/s for 500 ms: %d arrivals; want 500", n)
	}
}

func BenchmarkMixEntryOf(b *testing.B) {
	m := Mix{{1024, 50}, {16384, 30}, {524288, 20}, {100, 7}, {1 << 20, 1}}
	b.ReportAllocs()
	s := 0
	for i := 0; b.Loop(); i++ {
		s += m.EntryOf(i)
	}
	_ = s
}

// TPS and Throughput with a mix against the target: every transaction's
// body is its drawn size, the counts per size add up, and two trials of
// one load draw the same sizes.
func TestMixTrials(t *testing.T) {
	addr := startTarget(t)
	o := loose(addr)
	o.Mix = Mix{{1000, 3}, {5000, 1}, {20000, 1}}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var first []int64
	for run := range 2 {
		tr, err := p.TPS(ctx, 200) // 100 arrivals
		if err != nil {
			t.Fatal(err)
		}
		if tr.Attempted != 100 || tr.Failed != 0 || len(tr.Mix) != 3 {
			t.Fatalf("attempted %d failed %d (%v) mix %v", tr.Attempted, tr.Failed, tr.Errors, tr.Mix)
		}
		var n, bytes int64
		var counts []int64
		for k, c := range tr.Mix {
			if c.Size != o.Mix[k].Size || c.Bytes != c.Size*c.Count || c.Failed != 0 {
				t.Fatalf("entry %d: %+v", k, c)
			}
			n += c.Count
			bytes += c.Bytes
			counts = append(counts, c.Count)
		}
		if n != tr.Attempted || bytes != tr.Bytes {
			t.Fatalf("per size %d transactions %d bytes; the trial %d, %d", n, bytes, tr.Attempted, tr.Bytes)
		}
		var want [3]int64
		for i := range 100 {
			want[o.Mix.EntryOf(i)]++
		}
		for k := range counts {
			if counts[k] != want[k] {
				t.Fatalf("run %d: counts %v; the draws of arrivals 0-99 are %v", run, counts, want)
			}
		}
		if first == nil {
			first = counts
		}
	}
	// Throughput: 8 Mbit/s paced by bytes (mix.go's schedule).
	tr, err := p.Throughput(ctx, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, dueOf := o.Mix.schedule(1e6, o.Duration)
	if tr.Attempted != int64(n) || tr.Failed != 0 || tr.Bytes != int64(dueOf(n).Seconds()*1e6+0.5) {
		t.Fatalf("throughput: %d attempted (%v), %d bytes; want %d, %v", tr.Attempted, tr.Errors, tr.Bytes, n, dueOf(n).Seconds()*1e6)
	}
	// Its achieved rate is what it offered, unless the machine stretched
	// the trial.
	if tr.Achieved < 4 || tr.Achieved > 8*1.0001 {
		t.Fatalf("throughput achieved %v Mbit/s of 8", tr.Achieved)
	}
	if _, err := p.TrialFunc("cps", 0); err == nil || !strings.Contains(err.Error(), "a traffic mix is for tps and throughput") {
		t.Fatalf("TrialFunc(cps) with a mix: %v", err)
	}
}
