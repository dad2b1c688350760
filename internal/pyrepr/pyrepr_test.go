package pyrepr

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"unicode/utf8"
)

// The full comparison with CPython is stats' TestGoldenPythonRepr; these
// are spot checks of each rule, expected values from Python 3's repr().

func TestFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1, "1.0"},
		{2.5, "2.5"},
		{12, "12.0"},
		{-3.25, "-3.25"},
		{0.27976190476190477, "0.27976190476190477"},
		{30.166666666666668, "30.166666666666668"},
		{1796011280.7118347, "1796011280.7118347"},
		{0.0001, "0.0001"},
		{0.00001, "1e-05"},
		{1.5e-7, "1.5e-07"},
		{9999999999999998, "9999999999999998.0"},
		{1e16, "1e+16"},
		{1.2345e100, "1.2345e+100"},
		{math.NaN(), "nan"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
	}
	for _, tt := range tests {
		if got := Float(tt.in); got != tt.want {
			t.Errorf("Float(%v) = %s; want %s", tt.in, got, tt.want)
		}
		if got := string(AppendFloat([]byte("x"), tt.in)); got != "x"+tt.want {
			t.Errorf("AppendFloat(x, %v) = %s; want x%s", tt.in, got, tt.want)
		}
	}
}

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `''`},
		{"abc", `'abc'`},
		{"it's", `"it's"`},
		{`it's "x"`, `'it\'s "x"'`},
		{`a\b`, `'a\\b'`},
		{"t\tn\nr\r", `'t\tn\nr\r'`},
		{"\x00\x1f\x7f", `'\x00\x1f\x7f'`},
		{"é€😀", `'é€😀'`},
		{"\u00a0\u200b\u2028", `'\xa0\u200b\u2028'`},
		{"\U000e0001", `'\U000e0001'`},
		{"\xff", "'\ufffd'"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

func FuzzFloat(f *testing.F) {
	for _, v := range []float64{0, 1, 1e-5, 1e16, 0.1, -2.5e-300} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		s := Float(v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != v {
			t.Fatalf("ParseFloat(Float(%v) = %q) = %v, %v", v, s, back, err)
		}
	})
}

// TestAppendJSONString: strings are quoted as Python's json.dumps does
// (ensure_ascii), DEL included (json.dumps("\x7f") is "\u007f").
func TestAppendJSONString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`q"b\`, `"q\"b\\"`},
		{"tab\tnl\n\r\b\f", `"tab\tnl\n\r\b\f"`},
		{"\x01\x7f", `"\u0001\u007f"`},
		{"café", `"caf\u00e9"`},
		{"😀", `"\ud83d\ude00"`},
		{"\xff", `"\ufffd"`},
		{"bad\xffutf8", `"bad\ufffdutf8"`},
		{"<script>&'", `"<script>&'"`},
	} {
		if got := string(AppendJSONString(nil, tc.in)); got != tc.want {
			t.Errorf("AppendJSONString(%q) = %s; want %s", tc.in, got, tc.want)
		}
	}
}

// FuzzAppendJSONString: the output is ASCII JSON that decodes back to the
// input (valid UTF-8).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\\n\t\x00\x7f", "é😀", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q → %s: %v", s, b, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q → %s → %q", s, b, back)
		}
		for _, c := range b {
			if c >= 0x80 {
				t.Fatalf("%q → %s: not ASCII", s, b)
			}
		}
	})
}
