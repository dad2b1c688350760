package protocol

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// DateTimeLayout is the time layout of the string in Locust's datetime map
// {"__datetime__": true, "as_str": ...} (HEAD ≥ 2.20; Python's
// "%Y%m%dT%H:%M:%S.%f"). The time is naive: it carries no zone.
const DateTimeLayout = "20060102T15:04:05.000000"

// Plain values (the Data of *Custom, Spawn.ParsedOptions, Locustfile.Data,
// UpdateUserClass.Data) map between msgpack and Go as follows. Decoding:
//
//	nil            → nil
//	bool           → bool
//	int, uint      → int64 (uint64 above MaxInt64 → uint64)
//	float32/64     → float64
//	str            → string (must be valid UTF-8)
//	bin            → []byte
//	array          → []any
//	map            → map[string]any when every key is a str (or bin),
//	                 else map[any]any; keys are string, int64, uint64,
//	                 float64, bool or nil (a bin key becomes a string key;
//	                 array, map and NaN keys are rejected)
//	datetime map   → time.Time in UTC: a map of exactly the two keys
//	                 "__datetime__": true and "as_str": a DateTimeLayout
//	                 string that formats back to itself
//	ext            → rejected
//
// Encoding accepts those types and also int, int8..int32, uint..uint32,
// float32, []string, map[string]string, map[string]int64, map[string]int and
// map[int64]int64. A time.Time is written as the datetime map, its wall clock
// in its own location (the zone is dropped, as Python does). Map keys are
// written in sorted order, so the encoding is deterministic.

// value decodes one plain value; depth is how many more container levels
// may be opened.
func (d *decoder) value(depth int) (any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	switch {
	case c == msgpcode.Nil:
		d.skipBytes(1)
		return nil, nil
	case c == msgpcode.True || c == msgpcode.False:
		d.skipBytes(1)
		return c == msgpcode.True, nil
	case c == msgpcode.Uint64:
		if len(d.buf)-d.off < 9 {
			return nil, truncated("bad uint64")
		}
		u := binary.BigEndian.Uint64(d.buf[d.off+1:])
		d.off += 9
		if u > math.MaxInt64 {
			return u, nil
		}
		return int64(u), nil
	case isInt(c):
		return d.int64()
	case isFloat(c):
		return d.float64()
	case isStr(c):
		return d.string()
	case isBin(c):
		return d.binary()
	case isArray(c):
		if depth <= 0 {
			return nil, malformed("nesting deeper than " + strconv.Itoa(MaxDepth))
		}
		n, err := d.arrayLen()
		if err != nil {
			return nil, err
		}
		a := make([]any, n)
		for i := range a {
			if a[i], err = d.value(depth - 1); err != nil {
				return nil, at(err, "["+strconv.Itoa(i)+"]")
			}
		}
		return a, nil
	case isMap(c):
		if depth <= 0 {
			return nil, malformed("nesting deeper than " + strconv.Itoa(MaxDepth))
		}
		return d.plainMap(depth - 1)
	}
	return nil, malformed("msgpack " + codeKind(c) + " is not allowed")
}

// plainMap decodes a map to map[string]any, switching to map[any]any at
// the first key that is not a string.
func (d *decoder) plainMap(depth int) (any, error) {
	n, err := d.mapLen()
	if err != nil {
		return nil, err
	}
	sm := make(map[string]any, n)
	var am map[any]any
	for i := 0; i < n; i++ {
		c, err := d.peek()
		if err != nil {
			return nil, at(err, "[key "+strconv.Itoa(i)+"]")
		}
		var sk string
		var ak any
		if isStr(c) || isBin(c) {
			if sk, err = d.string(); err != nil {
				return nil, at(err, "[key "+strconv.Itoa(i)+"]")
			}
			ak = sk
		} else {
			if ak, err = d.value(depth); err != nil {
				return nil, at(err, "[key "+strconv.Itoa(i)+"]")
			}
			switch k := ak.(type) {
			case []any, map[string]any, map[any]any, time.Time:
				return nil, at(malformed("unhashable map key"), "[key "+strconv.Itoa(i)+"]")
			case float64:
				if math.IsNaN(k) {
					return nil, at(malformed("NaN map key"), "[key "+strconv.Itoa(i)+"]")
				}
			}
			if am == nil {
				am = make(map[any]any, n)
				for k, v := range sm {
					am[k] = v
				}
			}
		}
		v, err := d.value(depth)
		if err != nil {
			return nil, at(err, "["+keyString(ak)+"]")
		}
		if am != nil {
			am[ak] = v
		} else {
			sm[sk] = v
		}
	}
	if am != nil {
		return am, nil
	}
	if t, ok := asDateTime(sm); ok {
		return t, nil
	}
	return sm, nil
}

// asDateTime recognises Locust's datetime map.
func asDateTime(m map[string]any) (time.Time, bool) {
	if len(m) != 2 || m["__datetime__"] != true {
		return time.Time{}, false
	}
	s, ok := m["as_str"].(string)
	if !ok || len(s) != len(DateTimeLayout) {
		return time.Time{}, false
	}
	t, err := time.Parse(DateTimeLayout, s)
	if err != nil || t.Year() < 1 || t.Format(DateTimeLayout) != s { // Python's datetime.MINYEAR is 1
		return time.Time{}, false
	}
	return t, true
}

func keyString(k any) string {
	switch k := k.(type) {
	case string:
		return strconv.Quote(k)
	case int64:
		return strconv.FormatInt(k, 10)
	case uint64:
		return strconv.FormatUint(k, 10)
	case float64:
		return strconv.FormatFloat(k, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(k)
	case nil:
		return "nil"
	}
	return "?"
}

// ---- encoding plain values ----

// value encodes a plain value; depth bounds recursion through cyclic or
// absurdly deep values.
func (e *encoder) value(v any, depth int) error {
	if depth <= 0 {
		return unsupported("nesting deeper than " + strconv.Itoa(MaxDepth))
	}
	switch v := v.(type) {
	case nil:
		e.nil()
	case bool:
		e.bool(v)
	case int64:
		e.int(v)
	case int:
		e.int(int64(v))
	case int32:
		e.int(int64(v))
	case int16:
		e.int(int64(v))
	case int8:
		e.int(int64(v))
	case uint64:
		e.uint(v)
	case uint:
		e.uint(uint64(v))
	case uint32:
		e.uint(uint64(v))
	case uint16:
		e.uint(uint64(v))
	case uint8:
		e.uint(uint64(v))
	case float64:
		e.float(v)
	case float32:
		e.float(float64(v))
	case string:
		e.str(v)
	case []byte:
		if v == nil {
			e.nil()
		} else {
			e.bin(v)
		}
	case time.Time:
		if y := v.Year(); y < 1 || y > 9999 {
			return unsupported("time.Time year " + strconv.Itoa(y) + " outside 1..9999")
		}
		e.mapLen(2)
		e.str("__datetime__")
		e.bool(true)
		e.str("as_str")
		e.str(v.Format(DateTimeLayout))
	case []any:
		if v == nil {
			e.nil()
			return nil
		}
		e.arrayLen(len(v))
		for i, x := range v {
			if err := e.value(x, depth-1); err != nil {
				return at(err, "["+strconv.Itoa(i)+"]")
			}
		}
	case []string:
		if v == nil {
			e.nil()
			return nil
		}
		e.arrayLen(len(v))
		for _, x := range v {
			e.str(x)
		}
	case map[string]any:
		return e.stringMap(v, depth)
	case map[any]any:
		return e.anyMap(v, depth)
	case map[string]string:
		if v == nil {
			e.nil()
			return nil
		}
		base := len(e.strs)
		keys := sortedKeys(e, v)
		e.mapLen(len(keys))
		for _, k := range keys {
			e.str(k)
			e.str(v[k])
		}
		e.strs = e.strs[:base]
	case map[string]int64:
		if v == nil {
			e.nil()
			return nil
		}
		e.strIntMap(v)
	case map[string]int:
		if v == nil {
			e.nil()
			return nil
		}
		base := len(e.strs)
		keys := sortedKeys(e, v)
		e.mapLen(len(keys))
		for _, k := range keys {
			e.str(k)
			e.int(int64(v[k]))
		}
		e.strs = e.strs[:base]
	case map[int64]int64:
		if v == nil {
			e.nil()
			return nil
		}
		e.intIntMap(v)
	default:
		return unsupported("cannot encode Go type " + typeName(v))
	}
	return nil
}

// sortedKeys appends the keys of m to e.strs, sorts them and returns them.
// The caller truncates e.strs back when done; nested calls append after.
func sortedKeys[V any](e *encoder, m map[string]V) []string {
	base := len(e.strs)
	for k := range m {
		e.strs = append(e.strs, k)
	}
	keys := e.strs[base:]
	slices.Sort(keys)
	return keys
}

func (e *encoder) stringMap(m map[string]any, depth int) error {
	if m == nil {
		e.nil()
		return nil
	}
	base := len(e.strs)
	keys := sortedKeys(e, m)
	e.mapLen(len(keys))
	for _, k := range keys {
		e.str(k)
		if err := e.value(m[k], depth-1); err != nil {
			e.strs = e.strs[:base]
			return at(err, "["+strconv.Quote(k)+"]")
		}
	}
	e.strs = e.strs[:base]
	return nil
}

func (e *encoder) anyMap(m map[any]any, depth int) error {
	if m == nil {
		e.nil()
		return nil
	}
	keys := make([]any, 0, len(m))
	for k := range m {
		switch k := k.(type) {
		case nil, bool, string, int64, uint64, float64:
		case int, int32, int16, int8, uint, uint32, uint16, uint8:
		default:
			return unsupported("cannot encode map key of Go type " + typeName(k))
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	e.mapLen(len(keys))
	for _, k := range keys {
		if err := e.value(k, depth-1); err != nil {
			return err
		}
		if err := e.value(m[k], depth-1); err != nil {
			return at(err, "["+keyString(k)+"]")
		}
	}
	return nil
}

// compareKeys orders plain map keys: nil, false, true, numbers (by value,
// integers before an equal float), then strings.
func compareKeys(a, b any) int {
	ra, rb := keyRank(a), keyRank(b)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	switch a := a.(type) {
	case string:
		return cmp.Compare(a, b.(string))
	case bool:
		if a == b.(bool) {
			return 0
		} else if !a {
			return -1
		}
		return 1
	case nil:
		return 0
	}
	na, nb := numKey(a), numKey(b)
	switch {
	case na.kind == numFloat || nb.kind == numFloat:
		if c := cmp.Compare(na.f, nb.f); c != 0 || na.kind == nb.kind {
			return c
		}
		if na.kind == numFloat {
			return 1
		}
		return -1
	case na.kind != nb.kind:
		return cmp.Compare(na.kind, nb.kind)
	case na.kind == numBig:
		return cmp.Compare(na.u, nb.u)
	default:
		return cmp.Compare(na.i, nb.i)
	}
}

func keyRank(k any) int {
	switch k.(type) {
	case nil:
		return 0
	case bool:
		return 1
	case string:
		return 3
	default:
		return 2
	}
}

const (
	numInt   = iota // fits int64
	numBig          // uint64 above MaxInt64
	numFloat        // float64
)

type num struct {
	f    float64
	i    int64
	u    uint64
	kind int
}

// numKey classifies a numeric map key for ordering.
func numKey(k any) num {
	switch k := k.(type) {
	case float64:
		return num{f: k, kind: numFloat}
	case uint64:
		if k > math.MaxInt64 {
			return num{f: float64(k), u: k, kind: numBig}
		}
		return num{f: float64(k), i: int64(k)}
	case uint:
		return numKey(uint64(k))
	case uint32:
		return num{f: float64(k), i: int64(k)}
	case uint16:
		return num{f: float64(k), i: int64(k)}
	case uint8:
		return num{f: float64(k), i: int64(k)}
	case int64:
		return num{f: float64(k), i: k}
	case int:
		return num{f: float64(k), i: int64(k)}
	case int32:
		return num{f: float64(k), i: int64(k)}
	case int16:
		return num{f: float64(k), i: int64(k)}
	case int8:
		return num{f: float64(k), i: int64(k)}
	}
	return num{}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
