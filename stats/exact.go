package stats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// The exact histogram ("cicada_latency" on the wire) records every sample at
// microsecond resolution in HDR-style log-linear buckets: values below 128
// µs get one bucket per microsecond, and every power-of-two range
// [2^e, 2^(e+1)) µs above is split into 128 equal buckets. A bucket is at
// most 1/128 of its lower bound wide, and a percentile is reported as the
// middle of its bucket (clamped to the exact minimum and maximum), so the
// reported value v' of a true sample v satisfies
//
//	|v' − v| ≤ 0.5 µs + v/256      (0.39 % plus the rounding to whole µs)
//
// for v up to ExactMax; longer samples count in the top bucket (the maximum
// stays exact). Memory: 1 KiB per 128-bucket power-of-two range actually
// used, allocated on first use.
const (
	exactSubBits   = 7
	exactSubCount  = 1 << exactSubBits // buckets per chunk
	exactChunks    = 30                // chunk 0: [0,128) µs; chunk c ≥ 1: [2^(c+6), 2^(c+7)) µs
	exactNumBucket = exactChunks * exactSubCount

	// ExactRelativeError is the relative error bound of exact percentiles
	// (in addition to ExactAbsoluteError).
	ExactRelativeError = 1.0 / 256
	// ExactAbsoluteError is the absolute error bound of exact percentiles
	// from rounding samples to whole microseconds.
	ExactAbsoluteError = 500 * time.Nanosecond
	// ExactMax is the largest duration the exact histogram resolves with
	// the stated error: 2^36 µs, about 19 hours.
	ExactMax = time.Duration(1<<(exactChunks+6)) * time.Microsecond

	exactVersion = 1
)

// ErrMalformedExact is returned (wrapped) by DecodeExact for a byte string
// that is not an exact histogram.
var ErrMalformedExact = errors.New("stats: malformed exact histogram")

// exactHist is the exact latency histogram. The zero value is empty.
type exactHist struct {
	count    uint64
	min, max uint64 // µs, valid when count > 0
	chunks   [exactChunks]*[exactSubCount]uint64
	// nz marks the non-zero buckets of each chunk, so that encoding and
	// resetting touch only those (a chunk is 1 KiB, the bitmap 16 bytes).
	nz [exactChunks][exactSubCount / 64]uint64
}

// exactIndex returns the bucket index of a value in µs.
func exactIndex(v uint64) int {
	if v < exactSubCount {
		return int(v)
	}
	e := bits.Len64(v) - 1 // ≥ exactSubBits
	c := e - exactSubBits + 1
	if c >= exactChunks {
		return exactNumBucket - 1
	}
	return c*exactSubCount + int(v>>uint(e-exactSubBits)) - exactSubCount
}

// exactBounds returns the smallest value of bucket idx and its width, in µs.
func exactBounds(idx int) (lo, width uint64) {
	c, i := idx/exactSubCount, uint64(idx%exactSubCount)
	if c == 0 {
		return i, 1
	}
	shift := uint(c - 1)
	return (exactSubCount + i) << shift, 1 << shift
}

func toMicros(rt time.Duration) uint64 {
	if rt <= 0 {
		return 0
	}
	return uint64((rt + 500*time.Nanosecond) / time.Microsecond)
}

func (h *exactHist) record(us uint64) {
	h.addN(exactIndex(us), 1)
	if h.count == 0 || us < h.min {
		h.min = us
	}
	if h.count == 0 || us > h.max {
		h.max = us
	}
	h.count++
}

func (h *exactHist) addN(idx int, n uint64) {
	c := idx / exactSubCount
	ch := h.chunks[c]
	if ch == nil {
		ch = new([exactSubCount]uint64)
		h.chunks[c] = ch
	}
	i := idx % exactSubCount
	ch[i] += n
	h.nz[c][i>>6] |= 1 << (i & 63)
}

func (h *exactHist) reset() {
	for c, ch := range h.chunks {
		if ch == nil {
			continue
		}
		for w, word := range h.nz[c] {
			for word != 0 {
				ch[w*64+bits.TrailingZeros64(word)] = 0
				word &= word - 1
			}
			h.nz[c][w] = 0
		}
	}
	h.count, h.min, h.max = 0, 0, 0
}

// merge adds o into h. Only the worker merges (its total), where no count
// can overflow: each is at most the samples recorded in one report window.
// The master adds reports with addEncoded, which refuses an overflow.
func (h *exactHist) merge(o *exactHist) {
	if o.count == 0 {
		return
	}
	for c, ch := range o.chunks {
		if ch == nil {
			continue
		}
		dst := h.chunks[c]
		if dst == nil {
			dst = new([exactSubCount]uint64)
			h.chunks[c] = dst
		}
		for w, word := range o.nz[c] {
			h.nz[c][w] |= word
			for word != 0 {
				i := w*64 + bits.TrailingZeros64(word)
				dst[i] += ch[i]
				word &= word - 1
			}
		}
	}
	h.mergeMinMax(o.count, o.min, o.max)
}

func (h *exactHist) mergeMinMax(count, lo, hi uint64) {
	if h.count == 0 || lo < h.min {
		h.min = lo
	}
	if h.count == 0 || hi > h.max {
		h.max = hi
	}
	h.count += count
}

// appendEncoded appends the wire form of h:
//
//	version byte (1)
//	if not empty: uvarint min µs, uvarint (max − min) µs,
//	              then for every non-empty bucket in ascending order:
//	              uvarint (index − previous index − 1, the first: index), uvarint count
//
// An empty histogram is the single version byte.
func (h *exactHist) appendEncoded(dst []byte) []byte {
	dst = append(dst, exactVersion)
	if h.count == 0 {
		return dst
	}
	dst = binary.AppendUvarint(dst, h.min)
	dst = binary.AppendUvarint(dst, h.max-h.min)
	prev := -1
	for c, ch := range h.chunks {
		if ch == nil {
			continue
		}
		for w, word := range h.nz[c] {
			for word != 0 {
				i := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				idx := c*exactSubCount + i
				dst = binary.AppendUvarint(dst, uint64(idx-prev-1))
				dst = binary.AppendUvarint(dst, ch[i])
				prev = idx
			}
		}
	}
	return dst
}

// exactView walks an encoded histogram without allocating.
type exactView struct {
	count, min, max uint64
	body            []byte // the (delta, count) pairs
}

// nextUvarint reads the uvarint at b[i:]: its value and the offset after it,
// or a negative offset if b[i:] does not start with a valid uvarint.
func nextUvarint(b []byte, i int) (uint64, int) {
	if uint(i) < uint(len(b)) && b[i] < 0x80 {
		return uint64(b[i]), i + 1
	}
	return slowUvarint(b, i)
}

func slowUvarint(b []byte, i int) (uint64, int) {
	if i < 0 || i >= len(b) {
		return 0, -1
	}
	v, n := binary.Uvarint(b[i:])
	if n <= 0 {
		return 0, -1
	}
	return v, i + n
}

var (
	errCountOverflow = fmt.Errorf("%w: count overflows", ErrMalformedExact)
	errBadVarint     = fmt.Errorf("%w: bad varint", ErrMalformedExact)
	errIndexRange    = fmt.Errorf("%w: bucket index out of range", ErrMalformedExact)
)

// parseExact validates an encoded histogram completely.
func parseExact(b []byte) (exactView, error) {
	var v exactView
	if len(b) == 0 {
		return v, fmt.Errorf("%w: empty", ErrMalformedExact)
	}
	if b[0] != exactVersion {
		return v, fmt.Errorf("%w: unknown version %d", ErrMalformedExact, b[0])
	}
	b = b[1:]
	if len(b) == 0 {
		return v, nil
	}
	var span uint64
	i := 0
	if v.min, i = nextUvarint(b, i); i < 0 {
		return v, errBadVarint
	}
	if span, i = nextUvarint(b, i); i < 0 {
		return v, errBadVarint
	}
	if span > math.MaxUint64-v.min {
		return v, fmt.Errorf("%w: maximum overflows", ErrMalformedExact)
	}
	v.max = v.min + span
	b = b[i:]
	v.body = b
	first := -1
	idx := -1
	for i = 0; i < len(b); {
		var d, n uint64
		if i+1 < len(b) && (b[i]|b[i+1]) < 0x80 {
			// Both one-byte varints, the common case, inlined.
			d, n = uint64(b[i]), uint64(b[i+1])
			i += 2
		} else {
			if d, i = slowUvarint(b, i); i < 0 {
				return v, errBadVarint
			}
			if n, i = slowUvarint(b, i); i < 0 {
				return v, errBadVarint
			}
		}
		if d >= exactNumBucket || idx+1+int(d) >= exactNumBucket {
			return v, errIndexRange
		}
		idx += 1 + int(d)
		if n == 0 {
			return v, fmt.Errorf("%w: zero count", ErrMalformedExact)
		}
		if n > math.MaxUint64-v.count {
			return v, fmt.Errorf("%w: count overflows", ErrMalformedExact)
		}
		v.count += n
		if first < 0 {
			first = idx
		}
	}
	if first < 0 {
		return v, fmt.Errorf("%w: minimum without buckets", ErrMalformedExact)
	}
	if exactIndex(v.min) != first || exactIndex(v.max) != idx {
		return v, fmt.Errorf("%w: minimum or maximum outside the buckets", ErrMalformedExact)
	}
	return v, nil
}

// each calls f for every bucket of a validated view, in ascending order.
func (v exactView) each(f func(idx int, n uint64) bool) {
	b := v.body
	idx := -1
	for i := 0; i < len(b); {
		var d, n uint64
		if d, i = nextUvarint(b, i); i < 0 {
			return
		}
		if n, i = nextUvarint(b, i); i < 0 {
			return
		}
		idx += 1 + int(d)
		if !f(idx, n) {
			return
		}
	}
}

// addEncoded validates b and adds it to h; h is unchanged on error. It
// decodes b in one pass, adding every bucket to h as soon as it is
// validated; on error the buckets added so far are subtracted again (the
// chunks allocated for them stay, empty).
func (h *exactHist) addEncoded(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty", ErrMalformedExact)
	}
	if b[0] != exactVersion {
		return fmt.Errorf("%w: unknown version %d", ErrMalformedExact, b[0])
	}
	b = b[1:]
	if len(b) == 0 {
		return nil
	}
	lo, k := binary.Uvarint(b) // inlined, unlike nextUvarint
	if k <= 0 {
		return errBadVarint
	}
	b = b[k:]
	span, k := binary.Uvarint(b)
	if k <= 0 {
		return errBadVarint
	}
	if span > math.MaxUint64-lo {
		return fmt.Errorf("%w: maximum overflows", ErrMalformedExact)
	}
	hi := lo + span
	b = b[k:]
	if len(b) == 0 {
		return fmt.Errorf("%w: minimum without buckets", ErrMalformedExact)
	}
	// b[:i] has been added, the last bucket being idx, count samples in
	// all.
	first := exactIndex(lo)
	i, idx, count := 0, -1, uint64(0)
	var err error
	for {
		i, idx, count = h.addFast(b, i, idx, count, first)
		if i >= len(b) {
			break
		}
		if i, idx, count, err = h.addStep(b, i, idx, count, first); err != nil {
			break
		}
	}
	if err == nil && exactIndex(hi) != idx {
		err = fmt.Errorf("%w: minimum or maximum outside the buckets", ErrMalformedExact)
	}
	if err == nil && count > math.MaxUint64-h.count {
		// Refused rather than saturated: a saturated count would no longer
		// be the sum of the buckets. A bucket that wrapped meanwhile is
		// restored exactly by subtract (modular arithmetic).
		err = errCountOverflow
	}
	if err != nil {
		h.subtract(b[:i])
		return err
	}
	h.mergeMinMax(count, lo, hi)
	return nil
}

// That is, a chunk's non-zero marks are nz[c][0] and nz[c][1].
var _ = [1]struct{}{}[exactSubCount/64-2]

// addStep decodes, validates and adds the bucket at b[i:], whatever its
// encoding, after bucket idx and count samples (the first bucket must be
// first); it returns the new state, or the old one and an error.
func (h *exactHist) addStep(b []byte, i, idx int, count uint64, first int) (int, int, uint64, error) {
	d, k := nextUvarint(b, i)
	if k < 0 {
		return i, idx, count, errBadVarint
	}
	n, k := nextUvarint(b, k)
	if k < 0 {
		return i, idx, count, errBadVarint
	}
	if d >= exactNumBucket || idx+1+int(d) >= exactNumBucket {
		return i, idx, count, errIndexRange
	}
	next := idx + 1 + int(d)
	if n == 0 {
		return i, idx, count, fmt.Errorf("%w: zero count", ErrMalformedExact)
	}
	if n > math.MaxUint64-count {
		return i, idx, count, fmt.Errorf("%w: count overflows", ErrMalformedExact)
	}
	if count == 0 && next != first {
		return i, idx, count, fmt.Errorf("%w: minimum or maximum outside the buckets", ErrMalformedExact)
	}
	c, j := next>>exactSubBits, next&(exactSubCount-1)
	if h.chunks[c] == nil {
		h.chunks[c] = new([exactSubCount]uint64)
	}
	h.chunks[c][j] += n
	h.nz[c][j>>6] |= 1 << (j & 63)
	return k, next, count + n, nil
}

// addFast is addStep for as many buckets as are of the common kind: delta
// of one or two bytes, count of one byte, valid, in an allocated chunk. It
// makes no calls, so that the loop's state stays in registers (the current
// chunk's non-zero marks too), and stops at the first other bucket.
func (h *exactHist) addFast(b []byte, i, idx int, count uint64, first int) (int, int, uint64) {
	c := -1
	var ch *[exactSubCount]uint64
	var nz0, nz1 uint64
	for i+1 < len(b) {
		var d uint64
		k := i
		if c0 := b[k]; c0 < 0x80 {
			d, k = uint64(c0), k+1
		} else if c1 := b[k+1]; c1 < 0x80 {
			d, k = uint64(c0&0x7f)|uint64(c1)<<7, k+2
		} else {
			break
		}
		if k >= len(b) || b[k] >= 0x80 || b[k] == 0 {
			break
		}
		n := uint64(b[k])
		next := idx + 1 + int(d) // d < 2^14: no overflow
		if next >= exactNumBucket || n > math.MaxUint64-count || (count == 0 && next != first) {
			break
		}
		if cc := next >> exactSubBits; cc != c {
			nch := h.chunks[cc]
			if nch == nil {
				break
			}
			if c >= 0 {
				h.nz[c][0], h.nz[c][1] = nz0, nz1
			}
			c, ch = cc, nch
			nz0, nz1 = h.nz[c][0], h.nz[c][1]
		}
		j := next & (exactSubCount - 1)
		ch[j] += n
		bit, upper := uint64(1)<<(j&63), -uint64(j>>6)
		nz0 |= bit &^ upper
		nz1 |= bit & upper
		i, idx, count = k+1, next, count+n
	}
	if c >= 0 {
		h.nz[c][0], h.nz[c][1] = nz0, nz1
	}
	return i, idx, count
}

// subtract takes the buckets of a valid body out of h again, unmarking a
// bucket back at zero. This restores h exactly: a bucket is marked if and
// only if its count is non-zero, short of a count wrapping around 2^64.
func (h *exactHist) subtract(b []byte) {
	idx := -1
	for i := 0; i < len(b); {
		var d, n uint64
		d, i = nextUvarint(b, i)
		n, i = nextUvarint(b, i)
		idx += 1 + int(d)
		c, j := idx>>exactSubBits, idx&(exactSubCount-1)
		h.chunks[c][j] -= n
		if h.chunks[c][j] == 0 {
			h.nz[c][j>>6] &^= 1 << (j & 63)
		}
	}
}

// percentile returns the nearest-rank percentile p (0..1) in µs: the middle
// of the bucket holding the ceil(p·n)-th smallest sample, clamped to the
// exact minimum and maximum (which are returned for the first and last
// rank).
func (v exactView) percentile(p float64) (float64, bool) {
	if v.count == 0 {
		return 0, false
	}
	var rank uint64
	switch f := math.Ceil(p * float64(v.count)); {
	case p != p || f < 1:
		rank = 1
	case f >= float64(v.count): // also float64(v.count) = 2^64
		rank = v.count
	default:
		rank = uint64(f)
	}
	if rank >= v.count {
		return float64(v.max), true
	}
	if rank == 1 {
		return float64(v.min), true
	}
	var res float64
	var seen uint64
	v.each(func(idx int, n uint64) bool {
		seen += n
		if seen < rank {
			return true
		}
		lo, w := exactBounds(idx)
		res = float64(lo) + float64(w-1)/2
		return false
	})
	res = max(res, float64(v.min))
	res = min(res, float64(v.max))
	return res, true
}

// ExactHistogram is a decoded exact latency histogram (StatsEntry.Exact),
// for callers outside the package. It is immutable.
type ExactHistogram struct {
	v exactView
}

// DecodeExact parses and validates an exact histogram as carried in
// protocol.StatsEntry.Exact. Errors wrap ErrMalformedExact. The result keeps
// a reference to b, which must not be modified afterwards.
func DecodeExact(b []byte) (ExactHistogram, error) {
	v, err := parseExact(b)
	if err != nil {
		return ExactHistogram{}, err
	}
	return ExactHistogram{v}, nil
}

// Count returns the number of samples.
func (h ExactHistogram) Count() uint64 { return h.v.count }

// Min returns the smallest sample (0 when empty).
func (h ExactHistogram) Min() time.Duration { return time.Duration(h.v.min) * time.Microsecond }

// Max returns the largest sample (0 when empty).
func (h ExactHistogram) Max() time.Duration { return time.Duration(h.v.max) * time.Microsecond }

// Percentile returns the nearest-rank percentile p (0..1) within the error
// bounds stated by ExactRelativeError and ExactAbsoluteError; ok is false
// for an empty histogram.
func (h ExactHistogram) Percentile(p float64) (d time.Duration, ok bool) {
	us, ok := h.v.percentile(p)
	return time.Duration(math.Round(us * 1000)), ok
}
