package stats

import "math"

// Sums saturate: a count, size or time that would pass the largest value
// of its type stays at that value instead of wrapping (Locust's Python ints
// never wrap; a wrapped int64 would show ten times 10^18 requests as a
// negative number). Reports that Decode accepts hold no negative or
// non-finite values (protocol.ErrOutOfRange), so on a master a saturated
// sum means a hostile or broken worker, not a real load.

// addSat returns a+b clamped to [math.MinInt64, math.MaxInt64].
func addSat(a, b int64) int64 {
	s := a + b
	if (a^s)&(b^s) < 0 { // a and b of one sign, s of the other
		if a < 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return s
}

// addSatF returns a+b clamped to ±math.MaxFloat64 (a NaN stays NaN).
func addSatF(a, b float64) float64 {
	s := a + b
	switch {
	case s > math.MaxFloat64:
		return math.MaxFloat64
	case s < -math.MaxFloat64:
		return -math.MaxFloat64
	}
	return s
}
