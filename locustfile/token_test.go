package locustfile

import (
	"errors"
	"strings"
	"testing"
)

func kinds(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		switch t.Kind {
		case tName, tNumber, tOp:
			b.WriteString(t.Val)
		case tString:
			b.WriteString(t.Prefix + "'" + t.Val + "'")
		case tNewline:
			b.WriteString("NL")
		case tIndent:
			b.WriteString("IN")
		case tDedent:
			b.WriteString("DE")
		case tEOF:
			b.WriteString("EOF")
		}
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}

func TestTokenize(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"names and ops", "a = b.c(1, x=2) ** 3 // 4\n", "a = b . c ( 1 , x = 2 ) ** 3 // 4 NL EOF"},
		{"indent", "if a:\n    b\n    if c:\n\td\ne\n", "if a : NL IN b NL if c : NL IN d NL DE DE e NL EOF"},
		{"comments and blank lines", "# c\n\na  # x\n   # indented comment\nb\n", "a NL b NL EOF"},
		{"implicit joining", "f(a,\n      b)\n", "f ( a , b ) NL EOF"},
		{"backslash", "x = 1 + \\\n    2\n", "x = 1 + 2 NL EOF"},
		{"crlf", "a\r\n  b\r\n", "a NL IN b NL DE EOF"},
		{"escapes", `s = "a\tb\x41\u00e9\101\\"` + "\n", "s = 'a\tbAéA\\' NL EOF"},
		{"raw and bytes", `r"\d+" b'x' Rb"\n"` + "\n", `r'\d+' b'x' rb'\n' NL EOF`},
		{"f-string raw body", `f"{a!r:>{w}} {{x}}"` + "\n", "f'{a!r:>{w}} {{x}}' NL EOF"},
		{"triple", "'''a\n'b'\n''' \"\"\"c\"\"\"\n", "'a\n'b'\n' 'c' NL EOF"},
		{"numbers", "1_000 0x1F 1e-3 .5 3.\n", "1_000 0x1F 1e-3 .5 3. NL EOF"},
		{"no final newline", "a", "a NL EOF"},
		{"walrus and arrow", "def f() -> int: (y := 1)\n", "def f ( ) -> int : ( y := 1 ) NL EOF"},
		{"unicode name", "café = 1\n", "café = 1 NL EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toks, err := tokenize("t.py", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(toks); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestTokenizeErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"unterminated", "a = 'x\n", 1, 5, "unterminated string"},
		{"unterminated triple", "a = '''x\n\n", 1, 5, "unterminated string"},
		{"unclosed bracket", "f(a,\n  [b\n", 2, 3, `"[" is never closed`},
		{"mismatched", "f(a]\n", 1, 4, `"]" does not match "(" at line 1`},
		{"bad dedent", "if a:\n    b\n  c\n", 3, 1, "unindent does not match"},
		{"stray character", "a ? b\n", 1, 3, "unexpected character"},
		{"bad escape", `"\xZZ"` + "\n", 1, 1, `invalid \x escape`},
		{"backslash mid-line", "a \\ b\n", 1, 3, "backslash outside a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tokenize("t.py", tt.src)
			var e *Error
			if !errors.As(err, &e) || e.Line != tt.line || e.Col != tt.col || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("err %v, want t.py:%d:%d: ...%s", err, tt.line, tt.col, tt.msg)
			}
		})
	}
}

func TestParseFString(t *testing.T) {
	stmts, err := parseModule("f.py", `x = f"/a/{b['k']}/{c + 1}?q={d!s}&{{lit}}"`+"\n")
	if err != nil {
		t.Fatal(err)
	}
	fs := stmts[0].(*assignStmt).Value.(*fstringExpr)
	var parts []string
	for _, p := range fs.Parts {
		switch p := p.(type) {
		case *constExpr:
			parts = append(parts, p.V.(string))
		case *fieldExpr:
			parts = append(parts, "{"+describeExpr(p.X)+"}")
		}
	}
	want := "/a/|{b['k']}|/|{c + 1}|?q=|{d}|&{lit}"
	if got := strings.Join(parts, "|"); got != want {
		t.Errorf("parts %q, want %q", got, want)
	}
}
