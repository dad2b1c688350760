package stats

import (
	"fmt"
	"time"
)

// ExactSum is a mutable sum (and difference) of exact histograms in their
// wire encoding (EntryStats.Exact), for callers that combine entries or
// take the difference of two snapshots of one entry (a sliding window).
// The zero value is empty. Not safe for concurrent use.
//
// After a Sub the exact minimum and maximum of the remaining samples are
// no longer known: they become the bounds of the lowest and highest
// non-empty buckets, so percentiles stay within the buckets' stated error.
type ExactSum struct {
	h       exactHist
	scratch []byte
}

// Add adds an encoded histogram. Errors wrap ErrMalformedExact; s is
// unchanged on error.
func (s *ExactSum) Add(b []byte) error { return s.h.addEncoded(b) }

// Sub subtracts an encoded histogram that was added before (every bucket
// of b at most the sum's). Errors wrap ErrMalformedExact; s is unchanged
// on error.
func (s *ExactSum) Sub(b []byte) error {
	v, err := parseExact(b)
	if err != nil {
		return err
	}
	if v.count == 0 {
		return nil
	}
	if v.count > s.h.count {
		return fmt.Errorf("%w: subtracting %d samples from %d", ErrMalformedExact, v.count, s.h.count)
	}
	short := false
	v.each(func(idx int, n uint64) bool {
		ch := s.h.chunks[idx/exactSubCount]
		if ch == nil || ch[idx%exactSubCount] < n {
			short = true
			return false
		}
		return true
	})
	if short {
		return fmt.Errorf("%w: subtracting a bucket larger than the sum's", ErrMalformedExact)
	}
	s.h.subtract(v.body)
	s.h.count -= v.count
	if s.h.count == 0 {
		s.h.min, s.h.max = 0, 0
		return nil
	}
	first, last := -1, -1
	for c, ch := range s.h.chunks {
		if ch == nil {
			continue
		}
		for i, n := range ch {
			if n == 0 {
				continue
			}
			if first < 0 {
				first = c*exactSubCount + i
			}
			last = c*exactSubCount + i
		}
	}
	lo, _ := exactBounds(first)
	hlo, hw := exactBounds(last)
	s.h.min = max(s.h.min, lo)
	if exactIndex(s.h.min) != first {
		s.h.min = lo
	}
	s.h.max = min(s.h.max, hlo+hw-1)
	if exactIndex(s.h.max) != last {
		s.h.max = hlo + hw - 1
	}
	return nil
}

// Count returns the number of samples.
func (s *ExactSum) Count() uint64 { return s.h.count }

// Reset empties s.
func (s *ExactSum) Reset() { s.h.reset() }

// Percentile returns the nearest-rank percentile p (0..1) of the sum, with
// the error bounds of ExactHistogram.Percentile; ok is false when empty.
func (s *ExactSum) Percentile(p float64) (d time.Duration, ok bool) {
	s.scratch = s.h.appendEncoded(s.scratch[:0])
	h, err := DecodeExact(s.scratch)
	if err != nil {
		return 0, false
	}
	return h.Percentile(p)
}

// Encoded returns the sum in the wire encoding (a new slice).
func (s *ExactSum) Encoded() []byte { return s.h.appendEncoded(nil) }
