package stats

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FormatPyFloat formats f exactly as Python's repr(float) does (CPython
// float_repr_style "short"): the shortest decimal that round-trips, in fixed
// notation with ".0" appended to integral values when the decimal exponent is
// in [-4, 16), otherwise in scientific notation with a signed, at least
// two-digit exponent ("1e-05", "1.5e+16"). Infinities and NaN print as "inf",
// "-inf" and "nan". Locust's CSV files print every float this way.
func FormatPyFloat(f float64) string {
	return string(AppendPyFloat(nil, f))
}

// AppendPyFloat appends FormatPyFloat(f) to dst.
func AppendPyFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	// e looks like "-d.ddde±XX": find the exponent.
	i := len(e) - 1
	for e[i] != 'e' {
		i--
	}
	exp, _ := strconv.Atoi(string(e[i+1:]))
	if exp < -4 || exp >= 16 {
		return append(dst, e...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

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

// PythonRepr returns Python's repr() of the string s: quoted with single
// quotes, or with double quotes when s contains a single quote and no double
// quote; backslashes, the chosen quote, \t, \n and \r escaped; other
// non-printable characters as \xNN, \uNNNN or \UNNNNNNNN. Printability
// follows Go's unicode tables, which may differ from the Python build's for
// unassigned code points. Invalid UTF-8 bytes are treated as U+FFFD.
func PythonRepr(s string) string {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			b.WriteString(`\x`)
			writeHex(&b, uint32(r), 2)
		case r < 0x7f:
			b.WriteRune(r)
		case pyPrintable(r):
			b.WriteRune(r)
		case r <= 0xff:
			b.WriteString(`\x`)
			writeHex(&b, uint32(r), 2)
		case r <= 0xffff:
			b.WriteString(`\u`)
			writeHex(&b, uint32(r), 4)
		default:
			b.WriteString(`\U`)
			writeHex(&b, uint32(r), 8)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// pyPrintable approximates CPython's Py_UNICODE_ISPRINTABLE for non-ASCII
// runes: everything except the categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs.
func pyPrintable(r rune) bool {
	if r == utf8.RuneError {
		return true // U+FFFD itself is printable (So)
	}
	return unicode.IsPrint(r)
}

func writeHex(b *strings.Builder, v uint32, digits int) {
	const hexdigits = "0123456789abcdef"
	for i := digits - 1; i >= 0; i-- {
		b.WriteByte(hexdigits[(v>>(4*uint(i)))&0xf])
	}
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
