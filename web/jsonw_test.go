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
