package protocol

// The oracle for Decode, without a frozen copy of an older decoder: the
// payload is read by the msgpack library's plain decoder (the module in
// go.mod) into a tree of generic values that keeps map order, and spec
// applies the typed mapping that messages.go, value.go and FORMAT.md
// document to that tree. Decode and DecodePooled must give spec's value;
// where spec rejects the message they must fail with an error wrapping
// ErrMalformed that names the same place and field path. Where the library
// cannot read the bytes, spec runs on what it read, up to a broken node at
// the place it stopped, so Decode must fail naming that field.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// ---- the library side: bytes to a tree of generic values ----

// A tree node is what the library's DecodeInterface returns for a scalar
// (nil, bool, int8..int64, uint8..uint64, float32, float64, string for str,
// []byte for bin, time.Time for the timestamp ext), []any for an array or
// omap for a map.
type okv struct{ k, v any }

// omap is a msgpack map in wire order, duplicates included.
type omap []okv

// broken stands in the tree for the value at which the library stopped:
// a truncated or invalid header or scalar. Every spec reader rejects it, so
// spec names the field where Decode must stop too.
type broken struct{ err error }

// libDecode reads payload with the msgpack library. Containers are read
// with its length readers, their claimed size checked against the bytes
// left (so a hostile header cannot make the test allocate; Decode rejects
// such a header at the container as well), everything else with
// DecodeInterface. depth is the deepest container nesting (the envelope is
// level 1), trailing the bytes left after the value. When the library
// rejects the bytes, err says why and v is the tree read so far, with a
// broken node where reading stopped.
func libDecode(payload []byte) (v any, depth, trailing int, err error) {
	r := bytes.NewReader(payload)
	dec := msgpack.NewDecoder(r)
	v, depth, err = libValue(dec, r, 1)
	return v, depth, r.Len(), err
}

func libValue(dec *msgpack.Decoder, r *bytes.Reader, level int) (any, int, error) {
	fail := func(err error) (any, int, error) { return broken{err}, 0, err }
	c, err := dec.PeekCode()
	if err != nil {
		return fail(err)
	}
	switch {
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := dec.DecodeMapLen()
		if err != nil {
			return fail(err)
		}
		if n > r.Len()/2 {
			return fail(fmt.Errorf("map of %d entries in %d bytes", n, r.Len()))
		}
		m, deepest := make(omap, 0, n), level
		for range n {
			k, dk, err := libValue(dec, r, level+1)
			if err != nil {
				return append(m, okv{k, nil}), deepest, err
			}
			v, dv, err := libValue(dec, r, level+1)
			m = append(m, okv{k, v})
			deepest = max(deepest, dk, dv)
			if err != nil {
				return m, deepest, err
			}
		}
		return m, deepest, nil
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := dec.DecodeArrayLen()
		if err != nil {
			return fail(err)
		}
		if n > r.Len() {
			return fail(fmt.Errorf("array of %d elements in %d bytes", n, r.Len()))
		}
		a, deepest := make([]any, n), level
		for i := range a {
			var d int
			a[i], d, err = libValue(dec, r, level+1)
			deepest = max(deepest, d)
			if err != nil {
				return a, deepest, err
			}
		}
		return a, deepest, nil
	case msgpcode.IsString(c) || msgpcode.IsBin(c):
		// The same check for a str or bin (the library would allocate up
		// to 1 MiB for a claimed length before finding the bytes missing);
		// then back to the header for DecodeInterface.
		start := r.Size() - int64(r.Len())
		n, err := dec.DecodeBytesLen()
		if err != nil {
			return fail(err)
		}
		if n > r.Len() {
			return fail(fmt.Errorf("str/bin of %d bytes in %d bytes", n, r.Len()))
		}
		if _, err := r.Seek(start, io.SeekStart); err != nil {
			return fail(err)
		}
	}
	v, err := dec.DecodeInterface()
	if err != nil {
		return fail(err)
	}
	return v, 0, nil
}

// ---- the spec side: the documented typed mapping of a tree ----

// specErr is an expected rejection: where in the message, and the field
// path, outermost element first.
type specErr struct {
	where string
	path  []string
	msg   string
}

func (e *specErr) Error() string { return e.prefix() + e.msg }

// prefix is how Decode's error text must begin: the sentinel, the place
// and the path, joined as fieldError joins them.
func (e *specErr) prefix() string {
	var b strings.Builder
	b.WriteString(ErrMalformed.Error())
	b.WriteString(": ")
	b.WriteString(e.where)
	for i, p := range e.path {
		switch {
		case i == 0:
			b.WriteString(": ")
		case !strings.HasPrefix(p, "["):
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	b.WriteString(": ")
	return b.String()
}

func bad(msg string) error { return &specErr{msg: msg} }

// under prefixes a path element to a specErr.
func under(err error, elem string) error {
	var e *specErr
	if errors.As(err, &e) {
		e.path = append([]string{elem}, e.path...)
	}
	return err
}

func in(err error, where string) error {
	var e *specErr
	if errors.As(err, &e) && e.where == "" {
		e.where = where
	}
	return err
}

func idx(i int) string    { return "[" + strconv.Itoa(i) + "]" }
func keyIdx(i int) string { return "[key " + strconv.Itoa(i) + "]" }

// spec is the Message the documented mapping gives for tree v.
func spec(v any) (Message, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 3 {
		return Message{}, in(bad("want array of 3"), "envelope")
	}
	typ, err := sString(a[0])
	if err != nil {
		return Message{}, in(under(err, "type"), "envelope")
	}
	data, err := sData(typ, a[1])
	if err != nil {
		return Message{}, in(err, strconv.Quote(typ)+" data")
	}
	node, err := sString(a[2])
	if err != nil {
		return Message{}, in(under(err, "node_id"), "envelope")
	}
	return Message{Type: typ, Data: data, NodeID: node}, nil
}

// sString: a str or bin holding valid UTF-8; nil is an error.
func sString(v any) (string, error) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return "", bad("want str")
	}
	if !utf8.ValidString(s) {
		return "", bad("invalid UTF-8")
	}
	return s, nil
}

func sStringOrNil(v any) (s string, ok bool, err error) {
	if v == nil {
		return "", false, nil
	}
	s, err = sString(v)
	return s, err == nil, err
}

// sInt: any integer within int64, or a float truncated toward zero.
func sInt(v any) (int64, error) {
	switch v := v.(type) {
	case int8:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case int64:
		return v, nil
	case uint8:
		return int64(v), nil
	case uint16:
		return int64(v), nil
	case uint32:
		return int64(v), nil
	case uint64:
		if v > math.MaxInt64 {
			return 0, bad("overflows int64")
		}
		return int64(v), nil
	case float32:
		return truncFloat(float64(v))
	case float64:
		return truncFloat(v)
	}
	return 0, bad("want integer")
}

func truncFloat(f float64) (int64, error) {
	if math.IsNaN(f) || f >= 0x1p63 || f < -0x1p63 {
		return 0, bad("float out of int64")
	}
	return int64(f), nil
}

// sFloat: any integer or float as float64; nil is an error.
func sFloat(v any) (float64, error) {
	switch v := v.(type) {
	case float32:
		return float64(v), nil
	case float64:
		return v, nil
	case uint64:
		return float64(v), nil
	case int8, int16, int32, int64, uint8, uint16, uint32:
		n, _ := sInt(v)
		return float64(n), nil
	}
	return 0, bad("want number")
}

func sFloatOrNil(v any) (*float64, error) {
	if v == nil {
		return nil, nil
	}
	f, err := sFloat(v)
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// sSkip: an ignored value may be anything but an ext.
func sSkip(v any) error {
	switch v := v.(type) {
	case time.Time:
		return bad("ext not allowed")
	case broken:
		return bad(v.err.Error())
	case []any:
		for _, e := range v {
			if err := sSkip(e); err != nil {
				return err
			}
		}
	case omap:
		for _, e := range v {
			if err := sSkip(e.k); err != nil {
				return err
			}
			if err := sSkip(e.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// sFields walks a map with str (or bin) keys, as Locust's dict lookups do:
// f handles the keys it knows; other entries, and entries whose key is not
// a str, are skipped. An error is named by the entry's key, or by its
// index when the key is not a str.
func sFields(v any, f func(k string, v any) (handled bool, err error)) error {
	m, ok := v.(omap)
	if !ok {
		return bad("want map")
	}
	for i, e := range m {
		var k string
		switch kk := e.k.(type) {
		case string:
			k = kk
		case []byte:
			k = string(kk)
		default:
			if err := sSkip(e.k); err != nil {
				return under(err, keyIdx(i))
			}
			if err := sSkip(e.v); err != nil {
				return under(err, idx(i))
			}
			continue
		}
		handled, err := f(k, e.v)
		if err == nil && !handled {
			err = sSkip(e.v)
		}
		if err != nil {
			return under(err, k)
		}
	}
	return nil
}

// field is one known key of a typed map: how to read its value, and
// whether the key is required.
type field struct {
	key      string
	required bool
	read     func(v any) error
}

func opt(key string, read func(any) error) field { return field{key, false, read} }
func req(key string, read func(any) error) field { return field{key, true, read} }

// sStruct reads the known fields of a map (with sFields) and then checks
// that the required ones were there, in the order given. seen holds the
// keys found.
func sStruct(v any, fields ...field) (seen map[string]bool, err error) {
	seen = map[string]bool{}
	err = sFields(v, func(k string, v any) (bool, error) {
		for _, f := range fields {
			if f.key == k {
				seen[k] = true
				return true, f.read(v)
			}
		}
		return false, nil
	})
	for _, f := range fields {
		if err == nil && f.required && !seen[f.key] {
			err = under(bad("missing"), f.key)
		}
	}
	return seen, err
}

// Readers that store a field's value.
func str(p *string) func(any) error {
	return func(v any) (err error) { *p, err = sString(v); return err }
}
func strOrNil(p *string) func(any) error {
	return func(v any) (err error) { *p, _, err = sStringOrNil(v); return err }
}
func optStr(p **string) func(any) error { // nil stays nil
	return func(v any) error {
		s, ok, err := sStringOrNil(v)
		*p = nil
		if ok {
			*p = &s
		}
		return err
	}
}
func integer(p *int64) func(any) error {
	return func(v any) (err error) { *p, err = sInt(v); return err }
}
func number(p *float64) func(any) error {
	return func(v any) (err error) { *p, err = sFloat(v); return err }
}
func optNumber(p **float64) func(any) error {
	return func(v any) (err error) { *p, err = sFloatOrNil(v); return err }
}
func strInts(p *map[string]int64) func(any) error {
	return func(v any) (err error) { *p, err = sStrIntMap(v); return err }
}

// intInts maps a stats map as a Python dict holds it (repeated keys: the
// last wins) to its pairs in ascending key order.
func intInts(p *[]Count) func(any) error {
	return func(v any) error {
		m, err := sIntIntMap(v)
		*p = Counts(m)
		return err
	}
}

// sPlain is the plain-value mapping of value.go.
func sPlain(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, float64:
		return v, nil
	case float32:
		return float64(v), nil
	case uint64:
		if v > math.MaxInt64 {
			return v, nil
		}
		return int64(v), nil
	case int8, int16, int32, int64, uint8, uint16, uint32:
		return sInt(v)
	case string:
		return sString(v)
	case []byte:
		return append([]byte{}, v...), nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			var err error
			if out[i], err = sPlain(e); err != nil {
				return nil, under(err, idx(i))
			}
		}
		return out, nil
	case omap:
		return sPlainMap(v)
	case broken:
		return nil, bad(v.err.Error())
	}
	return nil, bad("ext not allowed")
}

func sPlainMap(m omap) (any, error) {
	type entry struct{ k, v any }
	var entries []entry
	strKeys := true
	for i, e := range m {
		var k any
		switch e.k.(type) {
		case string, []byte:
			s, err := sString(e.k)
			if err != nil {
				return nil, under(err, keyIdx(i))
			}
			k = s
		default:
			var err error
			if k, err = sPlain(e.k); err != nil {
				return nil, under(err, keyIdx(i))
			}
			switch kk := k.(type) {
			case []any, map[string]any, map[any]any, time.Time:
				return nil, under(bad("unhashable key"), keyIdx(i))
			case float64:
				if math.IsNaN(kk) {
					return nil, under(bad("NaN key"), keyIdx(i))
				}
			}
			strKeys = false
		}
		val, err := sPlain(e.v)
		if err != nil {
			return nil, under(err, "["+plainKey(k)+"]")
		}
		entries = append(entries, entry{k, val})
	}
	if !strKeys {
		am := make(map[any]any, len(entries))
		for _, e := range entries {
			am[e.k] = e.v
		}
		return am, nil
	}
	sm := make(map[string]any, len(entries))
	for _, e := range entries {
		sm[e.k.(string)] = e.v
	}
	if t, ok := specDateTime(sm); ok {
		return t, nil
	}
	return sm, nil
}

// plainKey writes a map key as the error path shows it.
func plainKey(k any) string {
	switch k := k.(type) {
	case string:
		return strconv.Quote(k)
	case nil:
		return "nil"
	case float64:
		return strconv.FormatFloat(k, 'g', -1, 64)
	}
	return fmt.Sprint(k)
}

// specDateTime: Locust's datetime map is exactly {"__datetime__": true,
// "as_str": s} where s is a DateTimeLayout time of year ≥ 1 that formats
// back to s.
func specDateTime(m map[string]any) (time.Time, bool) {
	s, ok := m["as_str"].(string)
	if len(m) != 2 || m["__datetime__"] != true || !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(DateTimeLayout, s)
	if err != nil || t.Year() < 1 || t.Format(DateTimeLayout) != s {
		return time.Time{}, false
	}
	return t, true
}

// sStrKeyedMap: a map whose plain value is a map[string]any.
func sStrKeyedMap(v any) (map[string]any, error) {
	m, ok := v.(omap)
	if !ok {
		return nil, bad("want map")
	}
	p, err := sPlainMap(m)
	if err != nil {
		return nil, err
	}
	sm, ok := p.(map[string]any)
	if !ok {
		return nil, bad("want str keys")
	}
	return sm, nil
}

// sStrIntMap: str → int; empty decodes to nil.
func sStrIntMap(v any) (map[string]int64, error) {
	m, ok := v.(omap)
	if !ok {
		return nil, bad("want map")
	}
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]int64, len(m))
	for i, e := range m {
		k, err := sString(e.k)
		if err != nil {
			return nil, under(err, keyIdx(i))
		}
		n, err := sInt(e.v)
		if err != nil {
			return nil, under(err, "["+strconv.Quote(k)+"]")
		}
		out[k] = n
	}
	return out, nil
}

// sIntIntMap: int → int (stats buckets); empty decodes to nil.
func sIntIntMap(v any) (map[int64]int64, error) {
	m, ok := v.(omap)
	if !ok {
		return nil, bad("want map")
	}
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[int64]int64, len(m))
	for i, e := range m {
		k, err := sInt(e.k)
		if err != nil {
			return nil, under(err, keyIdx(i))
		}
		n, err := sInt(e.v)
		if err != nil {
			return nil, under(err, "["+strconv.FormatInt(k, 10)+"]")
		}
		out[k] = n
	}
	return out, nil
}

func sData(typ string, v any) (any, error) {
	switch typ {
	case TypeClientReady:
		switch v.(type) {
		case string, []byte:
			s, err := sString(v)
			return &ClientReady{Version: s}, err
		}
		if f, err := sFloat(v); err == nil && f == -1 {
			return &ClientReady{VersionSkipCheck: true}, nil
		}
		return nil, bad("want version str or -1")
	case TypeAck:
		a := &Ack{Index: -1}
		if v == nil {
			return a, nil
		}
		_, err := sStruct(v, opt("index", integer(&a.Index)), opt("cicada", str(&a.Cicada)))
		return a, err
	case TypeHeartbeat:
		if v == nil {
			return &MasterHeartbeat{}, nil
		}
		h := &Heartbeat{MemoryUsage: -1}
		_, err := sStruct(v,
			req("state", str(&h.State)),
			req("current_cpu_usage", number(&h.CPUUsage)),
			opt("current_memory_usage", func(v any) (err error) {
				h.MemoryUsage = -1
				if v != nil {
					h.MemoryUsage, err = sInt(v)
				}
				return err
			}),
			opt(KeyCicadaConnections, func(v any) (err error) {
				h.Connections = nil
				if v != nil {
					h.Connections, err = sConnCounters(v)
				}
				return err
			}))
		return h, err
	case TypeSpawn:
		s := &Spawn{}
		_, err := sStruct(v,
			req("timestamp", number(&s.Timestamp)),
			req("user_classes_count", strInts(&s.UserClassesCount)),
			req("host", optStr(&s.Host)),
			req("stop_timeout", optNumber(&s.StopTimeout)),
			req("parsed_options", func(v any) (err error) {
				s.ParsedOptions, err = sStrKeyedMap(v)
				if len(s.ParsedOptions) == 0 {
					s.ParsedOptions = nil
				}
				return err
			}))
		return s, err
	case TypeSpawningComplete:
		var classes map[string]int64
		count := int64(-1)
		seen, err := sStruct(v, opt("user_classes_count", strInts(&classes)), opt("user_count", integer(&count)))
		switch {
		case err != nil:
			return nil, err
		case seen["user_classes_count"]:
			return &SpawningComplete{UserClassesCount: classes, UserCount: count}, nil
		case seen["user_count"]:
			return &MasterSpawningComplete{UserCount: count}, nil
		}
		return nil, under(bad("missing"), "user_classes_count")
	case TypeStats:
		return sStatsReport(v)
	case TypeException:
		x := &Exception{}
		_, err := sStruct(v, req("msg", str(&x.Msg)), req("traceback", str(&x.Traceback)))
		return x, err
	case TypeLogs:
		l := &Logs{}
		_, err := sStruct(v, req("worker_id", str(&l.WorkerID)), req("logs", func(v any) error {
			a, ok := v.([]any)
			if !ok {
				return bad("want array")
			}
			l.Logs = nil
			if len(a) > 0 {
				l.Logs = make([]string, len(a))
			}
			for i, e := range a {
				var err error
				if l.Logs[i], err = sString(e); err != nil {
					return under(err, idx(i))
				}
			}
			return nil
		}))
		return l, err
	case TypeLocustfile:
		if v == nil {
			return &Locustfile{}, nil
		}
		m, err := sStrKeyedMap(v)
		return &Locustfile{Data: m}, err
	case TypeUpdateUserClass:
		m, err := sStrKeyedMap(v)
		if len(m) == 0 {
			m = nil
		}
		return &UpdateUserClass{Data: m}, err
	case TypeSpawning, TypeStop, TypeClientStopped, TypeQuit, TypeReconnect:
		if v == nil {
			return nil, nil
		}
	}
	p, err := sPlain(v)
	return &Custom{Data: p}, err
}

func sConnCounters(v any) (*ConnCounters, error) {
	c := &ConnCounters{}
	_, err := sStruct(v,
		opt("open", integer(&c.Open)),
		opt("established", integer(&c.Established)),
		opt("connects", integer(&c.Connects)),
		opt("reconnects", integer(&c.Reconnects)),
		opt("closes", strInts(&c.Closes)),
		opt("connect_errors", strInts(&c.ConnectErrors)),
		opt("errors", strInts(&c.Errors)),
		opt("tls_handshakes", integer(&c.TLSHandshakes)),
		opt("tls_resumed", integer(&c.TLSResumed)),
		opt("tls_handshake_us", integer(&c.TLSHandshakeMicros)),
		opt("h2_goaways", integer(&c.H2GoAways)),
		opt("h2_rst_streams", integer(&c.H2ResetStreams)))
	return c, err
}

func sStatsReport(v any) (*StatsReport, error) {
	r := &StatsReport{UserCount: -1}
	_, err := sStruct(v,
		req("stats", func(v any) error {
			a, ok := v.([]any)
			if !ok {
				return bad("want array")
			}
			r.Stats = nil
			if len(a) > 0 {
				r.Stats = make([]StatsEntry, len(a))
			}
			for i, e := range a {
				if err := sStatsEntry(&r.Stats[i], e); err != nil {
					return under(err, idx(i))
				}
			}
			return nil
		}),
		req("stats_total", func(v any) error {
			r.Total = StatsEntry{}
			return sStatsEntry(&r.Total, v)
		}),
		req("errors", func(v any) (err error) { r.Errors, err = sStatsErrors(v); return err }),
		req("user_classes_count", strInts(&r.UserClassesCount)),
		opt("user_count", integer(&r.UserCount)),
		opt(KeyCicadaDropped, func(v any) error {
			if err := integer(&r.Dropped)(v); err != nil {
				return err
			}
			if r.Dropped < 0 {
				return outOfRange("negative " + KeyCicadaDropped)
			}
			return nil
		}),
		opt(KeyCicadaDroppedBy, func(v any) error { r.DroppedBy = nil; return sDroppedBy(&r.DroppedBy, v) }))
	return r, err
}

// sDroppedBy maps cicada_dropped_by: an array of [method, name, count],
// count > 0, at most MaxReportEntries.
func sDroppedBy(p *[]DroppedName, v any) error {
	a, ok := v.([]any)
	if !ok {
		return bad("want array")
	}
	if len(a) > MaxReportEntries {
		return outOfRange("too many dropped names")
	}
	for i, e := range a {
		t, ok := e.([]any)
		if !ok || len(t) != 3 {
			return under(bad("want [method, name, count]"), idx(i))
		}
		var dn DroppedName
		var err error
		if dn.Method, err = sString(t[0]); err != nil {
			return under(under(err, idx(0)), idx(i))
		}
		if dn.Name, err = sString(t[1]); err != nil {
			return under(under(err, idx(1)), idx(i))
		}
		if dn.Count, err = sInt(t[2]); err != nil {
			return under(under(err, idx(2)), idx(i))
		}
		if dn.Count <= 0 {
			return under(under(outOfRange("count not positive"), idx(2)), idx(i))
		}
		*p = append(*p, dn)
	}
	return nil
}

func sStatsEntry(s *StatsEntry, v any) error {
	_, err := sStruct(v,
		req("name", strOrNil(&s.Name)),
		req("method", optStr(&s.Method)),
		req("start_time", number(&s.StartTime)),
		opt("last_request_timestamp", optNumber(&s.LastRequestTimestamp)),
		opt("num_requests", integer(&s.NumRequests)),
		opt("num_none_requests", integer(&s.NumNoneRequests)),
		opt("num_failures", integer(&s.NumFailures)),
		opt("total_response_time", number(&s.TotalResponseTime)),
		opt("max_response_time", number(&s.MaxResponseTime)),
		opt("min_response_time", optNumber(&s.MinResponseTime)),
		opt("total_content_length", integer(&s.TotalContentLength)),
		opt("response_times", intInts(&s.ResponseTimes)),
		opt("num_reqs_per_sec", intInts(&s.NumReqsPerSec)),
		opt("num_fail_per_sec", intInts(&s.NumFailPerSec)),
		opt(KeyCicadaLatency, func(v any) error {
			switch b := v.(type) {
			case nil:
				s.Exact = nil
			case string:
				s.Exact = append([]byte{}, b...)
			case []byte:
				s.Exact = append([]byte{}, b...)
			default:
				return bad("want bin")
			}
			return nil
		}),
		opt(KeyCicadaPhases, func(v any) error {
			switch b := v.(type) {
			case nil:
				s.Phases = nil
			case string:
				s.Phases = append([]byte{}, b...)
			case []byte:
				s.Phases = append([]byte{}, b...)
			default:
				return bad("want bin")
			}
			return nil
		}))
	return err
}

func sStatsErrors(v any) (map[string]StatsError, error) {
	m, ok := v.(omap)
	if !ok {
		return nil, bad("want map")
	}
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]StatsError, len(m))
	for i, e := range m {
		k, err := sString(e.k)
		if err != nil {
			return nil, under(err, keyIdx(i))
		}
		var se StatsError
		_, err = sStruct(e.v,
			req("name", strOrNil(&se.Name)),
			req("method", strOrNil(&se.Method)),
			req("error", strOrNil(&se.Error)),
			req("occurrences", integer(&se.Occurrences)),
			opt("first_seen", optNumber(&se.FirstSeen)),
			opt("last_seen", optNumber(&se.LastSeen)))
		if err != nil {
			return nil, under(err, "["+strconv.Quote(k)+"]")
		}
		out[k] = se
	}
	return out, nil
}

// ---- the differential check ----

// depthSlack is how far past MaxDepth a payload may nest and still be
// accepted. Decode's limit is exact, so it is 0: payloads deeper than
// MaxDepth must be rejected wherever the deepest value sits (ignored values
// and non-str keys included).
const depthSlack = 0

// checkAgainstLibrary decodes payload with Decode, with DecodePooled after
// releasing a report decoded from prev, and with the library plus spec,
// and fails t where they disagree.
func checkAgainstLibrary(t testing.TB, prev, payload []byte) {
	t.Helper()
	got, err := Decode(payload)
	pooled, pooledErr := decodePooledTwice(prev, payload)
	defer func() {
		if r, ok := pooled.Data.(*StatsReport); ok {
			r.Release()
		}
	}()
	tree, depth, trailing, libErr := libDecode(payload)
	var want Message
	var wantErr error
	if depth <= MaxDepth {
		want, wantErr = spec(tree)
		switch {
		case wantErr == nil && libErr != nil:
			t.Fatalf("payload %x:\nspec accepts a tree the library could not finish (%v): fix the oracle", payload, libErr)
		case wantErr == nil && trailing > 0:
			wantErr = in(bad("trailing bytes"), "envelope")
		}
	}
	for _, c := range []struct {
		name string
		m    Message
		err  error
	}{{"Decode", got, err}, {"DecodePooled", unpooled(t, pooled), pooledErr}} {
		switch {
		case c.err != nil && !errors.Is(c.err, ErrMalformed):
			t.Fatalf("payload %x:\n%s error %v does not wrap ErrMalformed", payload, c.name, c.err)
		case depth > MaxDepth+depthSlack:
			if c.err == nil {
				t.Fatalf("payload %x:\n%s accepted nesting %d; want an error", payload, c.name, depth)
			}
		case errors.Is(c.err, ErrOutOfRange):
			// Range checks on stats values are not in the spec's mapping:
			// a refusal is right where the spec's value holds such a value
			// (statsValueProblem), or where the spec fails too (the range
			// check may stop the decoder before the spec's later error).
			if wantErr == nil && statsValueProblem(want) == "" {
				t.Fatalf("payload %x:\n%s error = %v; want %s %s (no value out of range)", payload, c.name, c.err, want.Type, dump(want.Data))
			}
		case wantErr == nil && statsValueProblem(want) != "":
			t.Fatalf("payload %x:\n%s accepted a stats value out of range (%s): %v", payload, c.name, statsValueProblem(want), c.err)
		case wantErr != nil:
			var se *specErr
			if !errors.As(wantErr, &se) {
				t.Fatalf("spec error %v is not a *specErr: fix the oracle", wantErr)
			}
			prefix := se.prefix()
			if c.err == nil || !strings.HasPrefix(c.err.Error(), prefix) {
				t.Fatalf("payload %x:\n%s error = %v; want one starting %q (%v)", payload, c.name, c.err, prefix, wantErr)
			}
		case c.err != nil:
			t.Fatalf("payload %x:\n%s error = %v; want %s %s", payload, c.name, c.err, want.Type, dump(want.Data))
		case !deepEqual(c.m, want):
			t.Fatalf("payload %x:\n%s = %s %s\nspec = %s %s", payload, c.name, c.m.Type, show(c.m.Data), want.Type, show(want.Data))
		}
	}
}

// show prints a decoded value with its pointers followed.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// mutationCodes are the bytes written over a payload position by
// oraclePayloads: every msgpack header class, including the ones whose
// length or value bytes then run past the end.
var mutationCodes = []byte{
	0x00, 0x05, 0x7f, 0x80, 0x81, 0x8f, 0x90, 0x93, 0x9f, 0xa0, 0xa3, 0xbf,
	0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xca, 0xcb, 0xcc, 0xcd,
	0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3, 0xd4, 0xd6, 0xd8, 0xd9, 0xda, 0xdb,
	0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff,
}

// oraclePayloads returns the captured frames, random messages, the
// benchmark reports and heartbeats, and damaged copies of them: truncated
// at sampled lengths and with sampled bytes overwritten by mutationCodes.
func oraclePayloads(t testing.TB, rng *rand.Rand, n int) [][]byte {
	var base [][]byte
	for _, f := range loadFrames(t) {
		base = append(base, f.payload)
	}
	g := gen{rng}
	for range n {
		b, err := Encode(g.message())
		if err != nil {
			t.Fatal(err)
		}
		base = append(base, b)
	}
	big, _ := Encode(benchStatsMessage())
	hb, _ := Encode(Message{Type: TypeHeartbeat, Data: &Heartbeat{State: "running", CPUUsage: 12.5, MemoryUsage: 56696832,
		Connections: &ConnCounters{Open: 3, Closes: map[string]int64{"eof": 2}}}, NodeID: node2121})
	base = append(base, big, hb)
	out := append([][]byte{}, base...)
	for _, b := range base {
		// Truncations: every length for short payloads, a sample otherwise.
		for i := 0; i < len(b); i++ {
			if len(b) <= 256 || rng.IntN(len(b)/64+1) == 0 {
				out = append(out, b[:i])
			}
		}
		// Overwrites at sampled positions.
		for range min(len(b), 24) {
			c := append([]byte{}, b...)
			c[rng.IntN(len(c))] = mutationCodes[rng.IntN(len(mutationCodes))]
			out = append(out, c)
		}
	}
	return out
}

// TestDecodeMatchesLibrary: on valid and damaged payloads, pooled or not,
// Decode gives the value the documented mapping gives for the msgpack
// library's reading of the bytes, or fails naming the field the mapping
// rejects; it fails on every payload the library rejects.
func TestDecodeMatchesLibrary(t *testing.T) {
	n := 600
	if testing.Short() || raceEnabled {
		n = 150
	}
	rng := rand.New(rand.NewPCG(11, 12))
	payloads := oraclePayloads(t, rng, n)
	big, _ := Encode(benchStatsMessage())
	for i, p := range payloads {
		prev := big
		if i%2 == 1 {
			prev = payloads[(i*7)%len(payloads)]
		}
		checkAgainstLibrary(t, prev, p)
	}
}

// FuzzDecodeMatchesLibrary is TestDecodeMatchesLibrary on any input.
func FuzzDecodeMatchesLibrary(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, fr := range loadFrames(f) {
		f.Add(fr.payload)
	}
	g := gen{rng}
	for range 40 {
		b, _ := Encode(g.message())
		f.Add(b)
	}
	prev, _ := Encode(benchStatsMessage())
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkAgainstLibrary(t, prev, payload)
	})
}
