package web

import (
	"math"
	"strconv"

	"github.com/cicada-load/cicada/internal/pyrepr"
)

// jsonWriter appends JSON in the exact form Flask's jsonify produces in
// Locust's debug-mode app (json.dumps with indent=2, sort_keys=True,
// ensure_ascii=True, separators "," and ": ", plus a trailing newline):
//
//	{
//	  "a": 1,
//	  "b": [
//	    2.0
//	  ]
//	}
//
// Empty arrays and objects print as [] and {}. Numbers follow Python:
// integers without a decimal point, floats in repr form (always with a point
// or an exponent). The writer does not sort: callers emit keys in ascending
// byte order (which equals Python's code point order for UTF-8) and a test
// checks every route for it. Not safe for concurrent use.
type jsonWriter struct {
	buf   []byte
	depth int
	// first[d] reports whether the container at depth d has no element yet.
	first []bool
}

// bytes returns the document with its trailing newline.
func (w *jsonWriter) bytes() []byte { return append(w.buf, '\n') }

func (w *jsonWriter) newline() {
	w.buf = append(w.buf, '\n')
	for i := 0; i < w.depth; i++ {
		w.buf = append(w.buf, ' ', ' ')
	}
}

// elem starts a value inside the current container (array element).
func (w *jsonWriter) elem() {
	if w.depth == 0 {
		return
	}
	if !w.first[w.depth] {
		w.buf = append(w.buf, ',')
	}
	w.first[w.depth] = false
	w.newline()
}

func (w *jsonWriter) open(c byte) {
	w.buf = append(w.buf, c)
	w.depth++
	for len(w.first) <= w.depth {
		w.first = append(w.first, false)
	}
	w.first[w.depth] = true
}

func (w *jsonWriter) close(c byte) {
	empty := w.first[w.depth]
	w.depth--
	if !empty {
		w.newline()
	}
	w.buf = append(w.buf, c)
}

// Object and array framing. beginObject/beginArray write the opening
// bracket as a value (after a key, or as an array element via elem).
func (w *jsonWriter) beginObject() { w.open('{') }
func (w *jsonWriter) endObject()   { w.close('}') }
func (w *jsonWriter) beginArray()  { w.open('[') }
func (w *jsonWriter) endArray()    { w.close(']') }

// key writes the next object key and the ": " separator.
func (w *jsonWriter) key(k string) {
	w.elem()
	w.buf = pyrepr.AppendJSONString(w.buf, k)
	w.buf = append(w.buf, ':', ' ')
}

// Value writers (after key or elem).
func (w *jsonWriter) str(s string)    { w.buf = pyrepr.AppendJSONString(w.buf, s) }
func (w *jsonWriter) null()           { w.buf = append(w.buf, "null"...) }
func (w *jsonWriter) int(v int64)     { w.buf = strconv.AppendInt(w.buf, v, 10) }
func (w *jsonWriter) float(v float64) { w.buf = appendPyFloat(w.buf, v) }
func (w *jsonWriter) num(n pyNum)     { w.buf = n.append(w.buf) }
func (w *jsonWriter) boolean(b bool) {
	if b {
		w.buf = append(w.buf, "true"...)
	} else {
		w.buf = append(w.buf, "false"...)
	}
}

// Convenience key+value pairs.
func (w *jsonWriter) kStr(k, v string)       { w.key(k); w.str(v) }
func (w *jsonWriter) kInt(k string, v int64) { w.key(k); w.int(v) }
func (w *jsonWriter) kFloat(k string, v float64) {
	w.key(k)
	w.float(v)
}
func (w *jsonWriter) kNum(k string, v pyNum) { w.key(k); w.num(v) }
func (w *jsonWriter) kBool(k string, v bool) { w.key(k); w.boolean(v) }

// pyNum is a number that remembers whether Python would hold it as an int
// or a float, because Locust's JSON shows the difference (0 vs 0.0).
type pyNum struct {
	V     float64
	Float bool
}

func pyInt(v int64) pyNum     { return pyNum{V: float64(v)} }
func pyFloat(v float64) pyNum { return pyNum{V: v, Float: true} }
func (n pyNum) append(b []byte) []byte {
	if n.Float {
		return appendPyFloat(b, n.V)
	}
	if n.V == math.Trunc(n.V) && math.Abs(n.V) < 1<<62 {
		return strconv.AppendInt(b, int64(n.V), 10)
	}
	return appendPyFloat(b, n.V)
}

// appendPyFloat appends f as Python's repr(float) does (pyrepr.AppendFloat).
// JSON has no NaN or infinity; they are written as null
// (Python would write NaN/Infinity, which strict parsers reject).
func appendPyFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return pyrepr.AppendFloat(b, f)
}
