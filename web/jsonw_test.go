package web

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/internal/pyrepr"
)

// TestAppendPyFloat: a finite float is Python's repr (pyrepr's rules,
// tested there), a NaN or an infinity is JSON null.
func TestAppendPyFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 2.5, 0.00001, 1e16, -3.25} {
		if got, want := string(appendPyFloat([]byte("x"), f)), "x"+pyrepr.Float(f); got != want {
			t.Errorf("appendPyFloat(x, %v) = %s; want %s", f, got, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := string(appendPyFloat(nil, f)); got != "null" {
			t.Errorf("appendPyFloat(%v) = %s; want null", f, got)
		}
	}
}

func TestAppendPyString(t *testing.T) {
	// Expected values are Python's json.dumps(s) (ensure_ascii=True).
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"tab\tnl\ncr\rbs\bff\f", `"tab\tnl\ncr\rbs\bff\f"`},
		{"\x01\x1f\x7f", `"\u0001\u001f\u007f"`},
		{"é", `"\u00e9"`},
		{"😀", `"\ud83d\ude00"`},
		{"<script>&'", `"<script>&'"`},
		{"bad\xffutf8", `"bad\ufffdutf8"`},
	}
	for _, tt := range tests {
		if got := string(appendPyString(nil, tt.in)); got != tt.want {
			t.Errorf("appendPyString(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

func TestJSONWriterLayout(t *testing.T) {
	var w jsonWriter
	w.beginObject()
	w.key("a")
	w.beginArray()
	w.endArray()
	w.key("b")
	w.beginObject()
	w.endObject()
	w.key("c")
	w.beginArray()
	w.elem()
	w.float(2)
	w.elem()
	w.beginObject()
	w.kInt("x", 1)
	w.kNum("y", pyInt(0))
	w.kNum("z", pyFloat(0))
	w.endObject()
	w.endArray()
	w.key("d")
	w.null()
	w.endObject()
	// json.dumps({...}, indent=2, sort_keys=True) + "\n"
	want := `{
  "a": [],
  "b": {},
  "c": [
    2.0,
    {
      "x": 1,
      "y": 0,
      "z": 0.0
    }
  ],
  "d": null
}
`
	if got := string(w.bytes()); got != want {
		t.Errorf("jsonWriter output =\n%s\nwant\n%s", got, want)
	}
}

func FuzzAppendPyString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "é😀", "\x00\xff", "</script>", "\x89\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendPyString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("appendPyString(%q) = %s: invalid JSON: %v", s, b, err)
		}
		// Each invalid byte becomes one U+FFFD, as in Python's
		// errors="replace" and Go's range over a string.
		var want strings.Builder
		for _, r := range s {
			want.WriteRune(r)
		}
		if got != want.String() {
			t.Fatalf("round trip of %q = %q; want %q", s, got, want.String())
		}
		for _, c := range b {
			if c >= 0x7f || c < 0x20 {
				t.Fatalf("appendPyString(%q) = %s: non-ASCII byte %#x", s, b, c)
			}
		}
	})
}

func FuzzAppendPyFloat(f *testing.F) {
	for _, v := range []float64{0, 1, 0.1, 1e16, 1e-5, 123456.789} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		b := appendPyFloat(nil, v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		var got float64
		if err := json.Unmarshal(b, &got); err != nil || got != v {
			t.Fatalf("appendPyFloat(%v) = %s: parses as %v, %v", v, b, got, err)
		}
		if !strings.ContainsAny(string(b), ".e") {
			t.Fatalf("appendPyFloat(%v) = %s: no point or exponent", v, b)
		}
	})
}
