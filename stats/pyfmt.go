package stats

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pyFixed formats f like Python's "%.<prec>f" (correctly rounded, ties to
// even on the exact binary value, as Go's strconv does).
func pyFixed(f float64, prec int) string {
	return strconv.FormatFloat(f, 'f', prec, 64)
}

// pyTrunc is Python's int(f) (and "%d" % f): truncation toward zero.
func pyTrunc(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= 0x1p63:
		return math.MaxInt64
	case f < -0x1p63:
		return math.MinInt64
	}
	return int64(f)
}

// maskAddress applies Locust's StatsError.parse_error masking to an error
// text that is already a repr: the hexadecimal address following the first
// "object at 0x" (up to the next ">") is replaced, everywhere in the text,
// by "0x....".
func maskAddress(s string) string {
	const target = "object at 0x"
	i := strings.Index(s, target)
	if i < 0 {
		return s
	}
	start := i + len(target) - 2
	end := strings.IndexByte(s[start:], '>')
	if end < 0 {
		return s
	}
	hex := s[start : start+end]
	if hex == "" {
		// Python's str.replace("", x) inserts x between every character;
		// unreachable here since hex starts with "0x".
		return s
	}
	return strings.ReplaceAll(s, hex, "0x....")
}

// padRight pads s with spaces to width runes (Python's "%-<width>s").
func padRight(b []byte, s string, width int) []byte {
	b = append(b, s...)
	for n := utf8.RuneCountInString(s); n < width; n++ {
		b = append(b, ' ')
	}
	return b
}

// padLeft right-aligns s in width runes (Python's "%<width>s").
func padLeft(b []byte, s string, width int) []byte {
	for n := utf8.RuneCountInString(s); n < width; n++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}
