package scenario

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A template is a string of a scenario file compiled at load: environment
// variables are already expanded, and each ${name} of a user variable is a
// slot filled at run time from the user's values. A template without
// slots is a constant (static is true): the request it belongs to is sent
// as fixed data, without any work per request.
type template struct {
	segs   []segment
	text   string // the constant value, or the source text (env expanded) for names and errors
	static bool
}

// segment is a literal (slot < 0) or a user variable.
type segment struct {
	lit    string
	slot   int
	def    string // ${name:-def}: used when the variable is empty
	hasDef bool
}

// escaper writes a variable's value into a request part.
type escaper func(dst []byte, v string) []byte

func appendRaw(dst []byte, v string) []byte { return append(dst, v...) }

// appendJSONString appends v escaped for the inside of a JSON string
// (quotes, backslashes and control characters; invalid UTF-8 becomes
// U+FFFD), without the surrounding quotes.
func appendJSONString(dst []byte, v string) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, v[i:i+n]...)
		}
		i += n
	}
	return dst
}

// appendTo appends the template's value for the user values vals.
func (t *template) appendTo(dst []byte, vals []string, esc escaper) []byte {
	if t.static {
		return append(dst, t.text...)
	}
	for i := range t.segs {
		s := &t.segs[i]
		if s.slot < 0 {
			dst = append(dst, s.lit...)
			continue
		}
		v := vals[s.slot]
		if v == "" && s.hasDef {
			v = s.def
		}
		dst = esc(dst, v)
	}
	return dst
}

// String returns the template's value for vals (a constant template's
// value without allocating).
func (t *template) value(vals []string, buf []byte) (string, []byte) {
	if t.static {
		return t.text, buf
	}
	buf = t.appendTo(buf[:0], vals, appendRaw)
	return string(buf), buf
}

// slotFunc returns the slot of a user variable name.
type slotFunc func(name string) (int, bool)

// compileTemplate compiles s: $$ is a literal $, ${NAME} and ${NAME:-def}
// read the user variable NAME when slot knows it (at run time), else the
// environment variable NAME (now, through lookup; unset without a default
// is an error). A name with a dot (${feed.column}) is always a user
// variable. Anything else is literal.
func compileTemplate(s string, lookup func(string) (string, bool), slot slotFunc) (template, error) {
	if !strings.Contains(s, "$") {
		return template{text: s, static: true}, nil
	}
	var segs []segment
	var lit, text strings.Builder
	dynamic := false
	flush := func() {
		if lit.Len() > 0 {
			segs = append(segs, segment{lit: lit.String(), slot: -1})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			lit.WriteByte(c)
			text.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			lit.WriteByte('$')
			text.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return template{}, fmt.Errorf("unterminated ${ in %q", s)
			}
			expr := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(expr, ":-")
			if slot != nil {
				if k, ok := slot(name); ok {
					flush()
					segs = append(segs, segment{slot: k, def: def, hasDef: hasDef})
					text.WriteString(s[i : i+3+end])
					dynamic = true
					i += 2 + end
					continue
				}
			}
			if strings.Contains(name, ".") && validDotted(name) {
				return template{}, fmt.Errorf("${%s} in %q: no feed of this user class has that column", name, s)
			}
			if !validVar(name) {
				return template{}, fmt.Errorf("invalid variable name %q in %q", name, s)
			}
			v, ok := lookup(name)
			switch {
			case ok && (v != "" || !hasDef):
			case hasDef:
				v = def
			default:
				if slot == nil {
					return template{}, fmt.Errorf("environment variable %s is not set (use ${%s:-default} for a default)", name, name)
				}
				return template{}, fmt.Errorf("environment variable %s is not set, nor is it a variable, capture or feed column of this user class (use ${%s:-default} for a default)", name, name)
			}
			lit.WriteString(v)
			text.WriteString(v)
			i += 2 + end
		default:
			lit.WriteByte(c)
			text.WriteByte(c)
		}
	}
	if !dynamic {
		return template{text: lit.String(), static: true}, nil
	}
	flush()
	return template{segs: segs, text: text.String()}, nil
}

// validDotted reports whether s is feed.column.
func validDotted(s string) bool {
	a, b, ok := strings.Cut(s, ".")
	return ok && validVar(a) && validVar(b)
}
