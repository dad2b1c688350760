package locustfile

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a Python token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tName
	tNumber
	tString
	tOp
	tNewline
	tIndent
	tDedent
)

func (k tokKind) String() string {
	return [...]string{"end of file", "name", "number", "string", "operator", "end of line", "indent", "dedent"}[k]
}

// token is one Python token. For strings, Val is the decoded value (the
// raw text between the quotes for f-strings, whose escapes are decoded
// per literal part by the parser) and Prefix the lowercased prefix.
type token struct {
	Kind   tokKind
	Val    string
	Prefix string
	Line   int
	Col    int // 1-based, in bytes
}

// maxIndentDepth bounds the indentation stack (CPython's limit is 100).
const maxIndentDepth = 100

// tokenize splits Python source into tokens: names, numbers, strings
// (prefixes r, b, u, f and their pairs; triple quotes), operators, and
// the NEWLINE/INDENT/DEDENT structure of Python's lexer, with implicit
// line joining inside brackets and backslash continuations. Comments are
// dropped. Errors are *Error values naming the line.
func tokenize(file, src string) ([]token, error) {
	lx := &lexer{file: file, src: src, line: 1, lineStart: 0, indents: []int{0},
		toks: make([]token, 0, len(src)/6+16)} // about one token per 6 bytes of Python
	return lx.run()
}

type lexer struct {
	file      string
	src       string
	pos       int
	line      int
	lineStart int
	depth     int // bracket nesting
	indents   []int
	toks      []token
	atBOL     bool    // at the beginning of a logical line
	open      []token // the open brackets
}

func (lx *lexer) errf(line, col int, format string, args ...any) error {
	return &Error{File: lx.file, Line: line, Col: col, Construct: "syntax", Msg: fmt.Sprintf(format, args...)}
}

func (lx *lexer) emit(k tokKind, val string, line, col int) {
	lx.toks = append(lx.toks, token{Kind: k, Val: val, Line: line, Col: col})
}

func (lx *lexer) col() int { return lx.pos - lx.lineStart + 1 }

func (lx *lexer) newline() {
	lx.line++
	lx.lineStart = lx.pos
}

func (lx *lexer) run() ([]token, error) {
	src := lx.src
	if strings.HasPrefix(src, "\ufeff") {
		lx.pos = 3
		lx.lineStart = 3
	}
	lx.atBOL = true
	for {
		if lx.atBOL && lx.depth == 0 {
			if err := lx.indentation(); err != nil {
				return nil, err
			}
			if lx.pos >= len(src) {
				break
			}
		}
		if lx.pos >= len(src) {
			break
		}
		c := src[lx.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			lx.pos++
		case c == '#':
			for lx.pos < len(src) && src[lx.pos] != '\n' && src[lx.pos] != '\r' {
				lx.pos++
			}
		case c == '\r' || c == '\n':
			line, col := lx.line, lx.col()
			lx.pos++
			if c == '\r' && lx.pos < len(src) && src[lx.pos] == '\n' {
				lx.pos++
			}
			if lx.depth == 0 {
				lx.emit(tNewline, "", line, col)
				lx.atBOL = true
			}
			lx.newline()
		case c == '\\':
			line, col := lx.line, lx.col()
			lx.pos++
			if lx.pos < len(src) && src[lx.pos] == '\r' {
				lx.pos++
			}
			if lx.pos >= len(src) || src[lx.pos] != '\n' && src[lx.pos-1] != '\r' {
				return nil, lx.errf(line, col, "a backslash outside a string must end the line (line continuation)")
			}
			if src[lx.pos] == '\n' {
				lx.pos++
			}
			lx.newline()
		case isIdentStart(c) || c >= utf8.RuneSelf:
			if err := lx.nameOrString(); err != nil {
				return nil, err
			}
		case c >= '0' && c <= '9' || c == '.' && lx.pos+1 < len(src) && src[lx.pos+1] >= '0' && src[lx.pos+1] <= '9':
			if err := lx.number(); err != nil {
				return nil, err
			}
		case c == '"' || c == '\'':
			if err := lx.str(""); err != nil {
				return nil, err
			}
		default:
			if err := lx.op(); err != nil {
				return nil, err
			}
		}
	}
	if lx.depth > 0 {
		o := lx.open[len(lx.open)-1]
		return nil, lx.errf(o.Line, o.Col, "%q is never closed", o.Val)
	}
	if n := len(lx.toks); n > 0 && lx.toks[n-1].Kind != tNewline && lx.toks[n-1].Kind != tDedent {
		lx.emit(tNewline, "", lx.line, lx.col())
	}
	for len(lx.indents) > 1 {
		lx.indents = lx.indents[:len(lx.indents)-1]
		lx.emit(tDedent, "", lx.line, 1)
	}
	lx.emit(tEOF, "", lx.line, lx.col())
	return lx.toks, nil
}

// indentation measures the indentation of the next non-blank line and
// emits INDENT or DEDENT tokens. Blank and comment-only lines are skipped.
func (lx *lexer) indentation() error {
	src := lx.src
	for {
		width := 0
		for lx.pos < len(src) {
			switch src[lx.pos] {
			case ' ':
				width++
			case '\t':
				width = (width/8 + 1) * 8
			case '\f':
				width = 0
			default:
				goto measured
			}
			lx.pos++
		}
	measured:
		if lx.pos >= len(src) {
			return nil
		}
		c := src[lx.pos]
		if c == '#' {
			for lx.pos < len(src) && src[lx.pos] != '\n' && src[lx.pos] != '\r' {
				lx.pos++
			}
			continue
		}
		if c == '\n' || c == '\r' {
			lx.pos++
			if c == '\r' && lx.pos < len(src) && src[lx.pos] == '\n' {
				lx.pos++
			}
			lx.newline()
			continue
		}
		if c == '\\' {
			// A continuation line right at the start: treat as content.
			lx.atBOL = false
			return nil
		}
		lx.atBOL = false
		top := lx.indents[len(lx.indents)-1]
		switch {
		case width > top:
			if len(lx.indents) >= maxIndentDepth {
				return lx.errf(lx.line, 1, "too deeply indented (more than %d levels)", maxIndentDepth)
			}
			lx.indents = append(lx.indents, width)
			lx.emit(tIndent, "", lx.line, 1)
		case width < top:
			for width < lx.indents[len(lx.indents)-1] {
				lx.indents = lx.indents[:len(lx.indents)-1]
				lx.emit(tDedent, "", lx.line, 1)
			}
			if width != lx.indents[len(lx.indents)-1] {
				return lx.errf(lx.line, 1, "unindent does not match any outer indentation level")
			}
		}
		return nil
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentByte(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func (lx *lexer) nameOrString() error {
	src := lx.src
	start, line, col := lx.pos, lx.line, lx.col()
	for lx.pos < len(src) {
		c := src[lx.pos]
		if isIdentByte(c) {
			lx.pos++
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(src[lx.pos:])
			if r == utf8.RuneError || !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') {
				break
			}
			lx.pos += n
			continue
		}
		break
	}
	if lx.pos == start {
		r, _ := utf8.DecodeRuneInString(src[lx.pos:])
		return lx.errf(line, col, "unexpected character %q", r)
	}
	word := src[start:lx.pos]
	if lx.pos < len(src) && (src[lx.pos] == '"' || src[lx.pos] == '\'') && len(word) <= 2 {
		p := strings.ToLower(word)
		switch p {
		case "r", "u", "b", "f", "br", "rb", "fr", "rf":
			lx.pos = start
			lx.pos += len(word)
			return lx.strAt(p, line, col)
		}
	}
	lx.emit(tName, word, line, col)
	return nil
}

func (lx *lexer) number() error {
	src := lx.src
	start, line, col := lx.pos, lx.line, lx.col()
	for lx.pos < len(src) {
		c := src[lx.pos]
		if isIdentByte(c) || c == '.' {
			lx.pos++
			continue
		}
		// exponent sign: 1e-5, 1E+5 (not in hex literals)
		if (c == '-' || c == '+') && lx.pos > start && (src[lx.pos-1] == 'e' || src[lx.pos-1] == 'E') &&
			!strings.HasPrefix(strings.ToLower(src[start:]), "0x") {
			lx.pos++
			continue
		}
		break
	}
	lx.emit(tNumber, src[start:lx.pos], line, col)
	return nil
}

func (lx *lexer) str(prefix string) error { return lx.strAt(prefix, lx.line, lx.col()) }

// strAt reads a string literal whose quote is at lx.pos; prefix was
// already consumed.
func (lx *lexer) strAt(prefix string, line, col int) error {
	src := lx.src
	q := src[lx.pos]
	triple := strings.HasPrefix(src[lx.pos:], strings.Repeat(string(q), 3))
	if triple {
		lx.pos += 3
	} else {
		lx.pos++
	}
	raw := strings.ContainsRune(prefix, 'r')
	start := lx.pos
	for {
		if lx.pos >= len(src) {
			return lx.errf(line, col, "unterminated string")
		}
		c := src[lx.pos]
		switch {
		case c == '\\':
			lx.pos += 2
			if lx.pos-1 < len(src) && src[lx.pos-1] == '\n' {
				lx.newline()
			}
			continue
		case c == '\n' || c == '\r':
			if !triple {
				return lx.errf(line, col, "unterminated string (a line break inside a quoted string)")
			}
			lx.pos++
			if c == '\r' && lx.pos < len(src) && src[lx.pos] == '\n' {
				lx.pos++
			}
			lx.newline()
			continue
		case c == q:
			if !triple {
				body := src[start:lx.pos]
				lx.pos++
				return lx.finishString(prefix, body, raw, line, col)
			}
			if strings.HasPrefix(src[lx.pos:], strings.Repeat(string(q), 3)) {
				body := src[start:lx.pos]
				lx.pos += 3
				return lx.finishString(prefix, body, raw, line, col)
			}
		}
		lx.pos++
	}
}

func (lx *lexer) finishString(prefix, body string, raw bool, line, col int) error {
	if lx.pos > len(lx.src) {
		return lx.errf(line, col, "unterminated string")
	}
	val := body
	if !raw && !strings.ContainsRune(prefix, 'f') {
		var err error
		val, err = unescape(body)
		if err != nil {
			return lx.errf(line, col, "%v", err)
		}
	}
	lx.toks = append(lx.toks, token{Kind: tString, Val: val, Prefix: prefix, Line: line, Col: col})
	return nil
}

// unescape decodes Python's backslash escapes of a (non-raw) string.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\n':
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, n := 0, 0
			for n < 3 && i+n < len(s) && s[i+n] >= '0' && s[i+n] <= '7' {
				v = v*8 + int(s[i+n]-'0')
				n++
			}
			i += n - 1
			b.WriteRune(rune(v))
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			var v rune
			for k := 1; k <= n; k++ {
				if i+k >= len(s) {
					return "", fmt.Errorf("truncated \\%c escape", e)
				}
				d := hexVal(s[i+k])
				if d < 0 {
					return "", fmt.Errorf("invalid \\%c escape", e)
				}
				v = v*16 + rune(d)
			}
			if !utf8.ValidRune(v) {
				return "", fmt.Errorf("invalid \\%c escape (not a code point)", e)
			}
			i += n
			b.WriteRune(v)
		case 'N':
			return "", fmt.Errorf(`\N{...} escapes are not read; write the character itself`)
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

var ops3 = []string{"**=", "//=", ">>=", "<<=", "...", "!="}
var ops2 = []string{"**", "//", ">>", "<<", "<=", ">=", "==", "!=", "->", ":=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@="}

func (lx *lexer) op() error {
	src := lx.src[lx.pos:]
	line, col := lx.line, lx.col()
	for _, o := range ops3 {
		if strings.HasPrefix(src, o) {
			lx.pos += len(o)
			lx.emit(tOp, o, line, col)
			return nil
		}
	}
	for _, o := range ops2 {
		if strings.HasPrefix(src, o) {
			lx.pos += len(o)
			lx.emit(tOp, o, line, col)
			return nil
		}
	}
	c := src[0]
	switch c {
	case '(', '[', '{':
		lx.depth++
		lx.open = append(lx.open, token{Val: string(c), Line: line, Col: col})
	case ')', ']', '}':
		if lx.depth == 0 {
			return lx.errf(line, col, "unmatched %q", string(c))
		}
		if o := lx.open[len(lx.open)-1]; o.Val != string("([{"[strings.IndexByte(")]}", c)]) {
			return lx.errf(line, col, "%q does not match %q at line %d", string(c), o.Val, o.Line)
		}
		lx.depth--
		lx.open = lx.open[:len(lx.open)-1]
	case '+', '-', '*', '/', '%', '@', '&', '|', '^', '~', '<', '>', '=', '.', ',', ':', ';':
	default:
		return lx.errf(line, col, "unexpected character %q", c)
	}
	lx.pos++
	lx.emit(tOp, string(c), line, col)
	return nil
}
