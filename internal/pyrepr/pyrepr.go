// Package pyrepr formats values as Python's repr() does, for the texts
// cicada shares with Locust: error keys and messages (an exception's repr,
// as CatchResponseError('...') or ConnectionRefusedError(111, '...')), and
// floats in CSV files, console tables and the web API; and strings as
// Python's json.dumps quotes them (AppendJSONString). stats and
// worker/httpc both use it, so the HTTP client needs no stats import.
// Its outputs are compared with CPython's in stats' golden test.
package pyrepr

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Float formats f exactly as Python's repr(float) does (CPython
// float_repr_style "short"): the shortest decimal that round-trips, in fixed
// notation with ".0" appended to integral values when the decimal exponent is
// in [-4, 16), otherwise in scientific notation with a signed, at least
// two-digit exponent ("1e-05", "1.5e+16"). Infinities and NaN print as "inf",
// "-inf" and "nan". Locust's CSV files print every float this way.
func Float(f float64) string {
	return string(AppendFloat(nil, f))
}

// AppendFloat appends Float(f) to dst.
func AppendFloat(dst []byte, f float64) []byte {
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

// String returns Python's repr() of the string s: quoted with single
// quotes, or with double quotes when s contains a single quote and no double
// quote; backslashes, the chosen quote, \t, \n and \r escaped; other
// non-printable characters as \xNN, \uNNNN or \UNNNNNNNN. Printability
// follows Go's unicode tables, which may differ from the Python build's for
// unassigned code points. Invalid UTF-8 bytes are treated as U+FFFD.
func String(s string) string {
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

// AppendJSONString appends s as a JSON string the way Python's json.dumps
// writes a str with ensure_ascii=True (its default): \" \\ \n \r \t \b \f
// escaped by name, other control characters and everything outside
// printable ASCII (DEL included) as \uXXXX with lower-case hex, characters
// above U+FFFF as surrogate pairs. Invalid UTF-8 bytes are written as
// U+FFFD. The web API's documents, --json and --show-task-ratio-json use it.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = appendU4(b, rune(c))
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			b = appendU4(b, 0xd800+(r>>10))
			b = appendU4(b, 0xdc00+(r&0x3ff))
			continue
		}
		b = appendU4(b, r)
	}
	return append(b, '"')
}

func appendU4(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
