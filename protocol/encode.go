package protocol

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

// appendWriter is the io.Writer and io.ByteWriter the msgpack encoder writes
// through: it appends to a caller-supplied slice and never fails.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
func (w *appendWriter) WriteByte(c byte) error      { w.b = append(w.b, c); return nil }

// encoder is the state of one Encode call, pooled. The msgpack.Encoder is
// bound to w once; each call points w at its destination slice. Because
// appendWriter never fails, the msgpack.Encoder methods below cannot return
// errors, and the helpers drop them.
type encoder struct {
	enc    *msgpack.Encoder
	w      appendWriter
	kvs    []kv     // scratch for sorting integer maps
	counts []Count  // scratch for sorting stats map pairs
	strs   []string // scratch stack for sorting string map keys
	tmp    []byte   // scratch output buffer for Encode
}

var encoderPool = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = msgpack.NewEncoder(&e.w)
	return e
}}

// Encode returns the msgpack payload of m, ready to send as a single ZeroMQ
// frame. See AppendEncode for the rules. It is safe for concurrent use.
func Encode(m Message) ([]byte, error) {
	e := encoderPool.Get().(*encoder)
	e.w.b = e.tmp[:0]
	err := e.message(m)
	var out []byte
	if err == nil {
		out = append(make([]byte, 0, len(e.w.b)), e.w.b...)
	}
	e.release()
	return out, err
}

// AppendEncode appends the msgpack payload of m to dst and returns the
// extended slice; on error it returns dst unchanged. With a reused dst the
// encoding allocates nothing in steady state.
//
// The payload is the array [type, data, node_id] that Python Locust (2.12.1
// and HEAD) accepts: every string is a msgpack str (invalid UTF-8 is replaced
// by U+FFFD, since Python rejects it), integers use the smallest width,
// floats are float64, stats maps have integer keys, optional fields are nil
// where Locust sends nil, and no ext types are used. Map keys are sorted, so
// equal messages encode to equal bytes. Data must be nil, one of the typed
// pointers of Message, or a plain value (see FORMAT.md); typed values must
// sit under their own Type. Errors wrap ErrUnsupported.
//
// AppendEncode is safe for concurrent use; it does not retain dst or m.
func AppendEncode(dst []byte, m Message) ([]byte, error) {
	e := encoderPool.Get().(*encoder)
	e.w.b = dst
	err := e.message(m)
	out := e.w.b
	e.w.b = nil
	e.release()
	if err != nil {
		return dst, err
	}
	return out, nil
}

func (e *encoder) release() {
	if e.w.b != nil && cap(e.w.b) <= 1<<20 {
		e.tmp = e.w.b[:0]
	}
	e.w.b = nil
	clear(e.strs[:cap(e.strs)])
	e.strs = e.strs[:0]
	e.kvs = e.kvs[:0]
	encoderPool.Put(e)
}

func (e *encoder) message(m Message) error {
	e.arrayLen(3)
	e.str(m.Type)
	if err := e.data(m.Type, m.Data); err != nil {
		return within(err, strconv.Quote(m.Type)+" data")
	}
	e.str(m.NodeID)
	return nil
}

// ---- primitives (errors cannot happen, see encoder) ----

func (e *encoder) nil()            { _ = e.enc.EncodeNil() }
func (e *encoder) bool(b bool)     { _ = e.enc.EncodeBool(b) }
func (e *encoder) int(n int64)     { _ = e.enc.EncodeInt(n) }
func (e *encoder) uint(n uint64)   { _ = e.enc.EncodeUint(n) }
func (e *encoder) float(f float64) { _ = e.enc.EncodeFloat64(f) }
func (e *encoder) mapLen(n int)    { _ = e.enc.EncodeMapLen(n) }
func (e *encoder) arrayLen(n int)  { _ = e.enc.EncodeArrayLen(n) }
func (e *encoder) bin(b []byte)    { _ = e.enc.EncodeBytes(b) }
func (e *encoder) floatPtr(f *float64) {
	if f == nil {
		e.nil()
	} else {
		e.float(*f)
	}
}

// str writes s as a msgpack str, never bin. Python decodes str with
// raw=False and fails on invalid UTF-8, so such bytes become U+FFFD.
func (e *encoder) str(s string) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	_ = e.enc.EncodeString(s)
}

// key writes a constant ASCII map key.
func (e *encoder) key(k string) { _ = e.enc.EncodeString(k) }

// strIntMap writes a map[string]int64 with sorted keys; nil is written as {}.
func (e *encoder) strIntMap(m map[string]int64) {
	base := len(e.strs)
	keys := sortedKeys(e, m)
	e.mapLen(len(keys))
	for _, k := range keys {
		e.str(k)
		e.int(m[k])
	}
	e.strs = e.strs[:base]
}

// kv is one entry of an integer map being sorted.
type kv struct{ k, v int64 }

// intIntMap writes a map[int64]int64 with integer keys in ascending order;
// nil is written as {}.
func (e *encoder) intIntMap(m map[int64]int64) {
	e.mapLen(len(m))
	if len(m) == 0 {
		return
	}
	e.kvs = e.kvs[:0]
	for k, v := range m {
		e.kvs = append(e.kvs, kv{k, v})
	}
	slices.SortFunc(e.kvs, func(a, b kv) int { return cmp.Compare(a.k, b.k) })
	for _, p := range e.kvs {
		e.int(p.k)
		e.int(p.v)
	}
}

// statsMap writes a stats map given as pairs, in ascending key order. Pairs
// that are not strictly ascending are written as the map holding them would
// be (of equal keys the last one wins).
func (e *encoder) statsMap(pairs []Count) {
	if !CountsSorted(pairs) {
		e.counts = canonCounts(append(e.counts[:0], pairs...))
		pairs = e.counts
	}
	e.mapLen(len(pairs))
	for _, p := range pairs {
		e.int(p.Key)
		e.int(p.N)
	}
}

// ---- typed data ----

// data writes the data element of a message of type typ.
func (e *encoder) data(typ string, data any) error {
	want := ""
	switch v := data.(type) {
	case nil:
		e.nil()
		return nil
	case *Custom:
		if v == nil {
			e.nil()
			return nil
		}
		return e.value(v.Data, MaxDepth-1)
	case *ClientReady:
		want = TypeClientReady
		if typ == want && v != nil {
			if v.VersionSkipCheck {
				e.int(-1)
			} else {
				e.str(v.Version)
			}
		}
	case *Ack:
		want = TypeAck
		if typ == want && v != nil {
			switch {
			case v.Index == -1 && v.Cicada == "":
				e.nil()
			case v.Cicada == "":
				e.mapLen(1)
				e.key("index")
				e.int(v.Index)
			case v.Index == -1:
				e.mapLen(1)
				e.key("cicada")
				e.str(v.Cicada)
			default:
				e.mapLen(2)
				e.key("cicada")
				e.str(v.Cicada)
				e.key("index")
				e.int(v.Index)
			}
		}
	case *Heartbeat:
		want = TypeHeartbeat
		if typ == want && v != nil {
			e.heartbeat(v)
		}
	case *MasterHeartbeat:
		want = TypeHeartbeat
		if typ == want && v != nil {
			e.nil()
		}
	case *Spawn:
		want = TypeSpawn
		if typ == want && v != nil {
			return e.spawn(v)
		}
	case *SpawningComplete:
		want = TypeSpawningComplete
		if typ == want && v != nil {
			n := 1
			if v.UserCount != -1 {
				n = 2
			}
			e.mapLen(n)
			e.key("user_classes_count")
			e.strIntMap(v.UserClassesCount)
			if v.UserCount != -1 {
				e.key("user_count")
				e.int(v.UserCount)
			}
		}
	case *MasterSpawningComplete:
		want = TypeSpawningComplete
		if typ == want && v != nil {
			e.mapLen(1)
			e.key("user_count")
			e.int(v.UserCount)
		}
	case *StatsReport:
		want = TypeStats
		if typ == want && v != nil {
			e.statsReport(v)
		}
	case *Exception:
		want = TypeException
		if typ == want && v != nil {
			e.mapLen(2)
			e.key("msg")
			e.str(v.Msg)
			e.key("traceback")
			e.str(v.Traceback)
		}
	case *Logs:
		want = TypeLogs
		if typ == want && v != nil {
			e.mapLen(2)
			e.key("worker_id")
			e.str(v.WorkerID)
			e.key("logs")
			e.arrayLen(len(v.Logs))
			for _, l := range v.Logs {
				e.str(l)
			}
		}
	case *Locustfile:
		want = TypeLocustfile
		if typ == want && v != nil {
			return e.stringMap(v.Data, MaxDepth-1)
		}
	case *UpdateUserClass:
		want = TypeUpdateUserClass
		if typ == want && v != nil {
			if v.Data == nil {
				e.mapLen(0)
				return nil
			}
			return e.stringMap(v.Data, MaxDepth-1)
		}
	default:
		return e.value(data, MaxDepth-1)
	}
	if typ != want {
		return unsupported(typeName(data) + " needs Type " + strconv.Quote(want))
	}
	if isNilPointer(data) {
		return unsupported("nil " + typeName(data))
	}
	return nil
}

func isNilPointer(v any) bool {
	switch v := v.(type) {
	case *ClientReady:
		return v == nil
	case *Ack:
		return v == nil
	case *Heartbeat:
		return v == nil
	case *MasterHeartbeat:
		return v == nil
	case *Spawn:
		return v == nil
	case *SpawningComplete:
		return v == nil
	case *MasterSpawningComplete:
		return v == nil
	case *StatsReport:
		return v == nil
	case *Exception:
		return v == nil
	case *Logs:
		return v == nil
	case *Locustfile:
		return v == nil
	case *UpdateUserClass:
		return v == nil
	}
	return false
}

func (e *encoder) heartbeat(h *Heartbeat) {
	n := 2
	if h.MemoryUsage != -1 {
		n++
	}
	if h.Connections != nil {
		n++
	}
	e.mapLen(n)
	e.key("state")
	e.str(h.State)
	e.key("current_cpu_usage")
	e.float(h.CPUUsage)
	if h.MemoryUsage != -1 {
		e.key("current_memory_usage")
		e.int(h.MemoryUsage)
	}
	if h.Connections != nil {
		e.key(KeyCicadaConnections)
		e.connCounters(h.Connections)
	}
}

func (e *encoder) spawn(s *Spawn) error {
	e.mapLen(5)
	e.key("timestamp")
	e.float(s.Timestamp)
	e.key("user_classes_count")
	e.strIntMap(s.UserClassesCount)
	e.key("host")
	if s.Host == nil {
		e.nil()
	} else {
		e.str(*s.Host)
	}
	e.key("stop_timeout")
	e.floatPtr(s.StopTimeout)
	e.key("parsed_options")
	if s.ParsedOptions == nil {
		e.mapLen(0)
		return nil
	}
	return at(e.stringMap(s.ParsedOptions, MaxDepth-2), "parsed_options")
}

func (e *encoder) statsReport(r *StatsReport) {
	n := 4
	if r.UserCount != -1 {
		n++
	}
	if r.Dropped != 0 {
		n++
	}
	if len(r.DroppedBy) != 0 {
		n++
	}
	e.mapLen(n)
	e.key("stats")
	e.arrayLen(len(r.Stats))
	for i := range r.Stats {
		e.statsEntry(&r.Stats[i])
	}
	e.key("stats_total")
	e.statsEntry(&r.Total)
	e.key("errors")
	base := len(e.strs)
	keys := sortedKeys(e, r.Errors)
	e.mapLen(len(keys))
	for _, k := range keys {
		e.str(k)
		se := r.Errors[k]
		e.statsError(&se)
	}
	e.strs = e.strs[:base]
	e.key("user_classes_count")
	e.strIntMap(r.UserClassesCount)
	if r.UserCount != -1 {
		e.key("user_count")
		e.int(r.UserCount)
	}
	if r.Dropped != 0 {
		e.key(KeyCicadaDropped)
		e.int(r.Dropped)
	}
	if len(r.DroppedBy) != 0 {
		e.key(KeyCicadaDroppedBy)
		e.droppedBy(r.DroppedBy) // droppedby.go
	}
}

// statsEntry writes the 14 keys of a Locust StatsEntry in Locust's order,
// plus cicada's "cicada_latency" when Exact is not nil.
func (e *encoder) statsEntry(s *StatsEntry) {
	n := 14
	if s.Exact != nil {
		n++
	}
	if s.Phases != nil {
		n++
	}
	e.mapLen(n)
	e.key("name")
	e.str(s.Name)
	e.key("method")
	if s.Method == nil {
		e.nil()
	} else {
		e.str(*s.Method)
	}
	e.key("last_request_timestamp")
	e.floatPtr(s.LastRequestTimestamp)
	e.key("start_time")
	e.float(s.StartTime)
	e.key("num_requests")
	e.int(s.NumRequests)
	e.key("num_none_requests")
	e.int(s.NumNoneRequests)
	e.key("num_failures")
	e.int(s.NumFailures)
	e.key("total_response_time")
	e.float(s.TotalResponseTime)
	e.key("max_response_time")
	e.float(s.MaxResponseTime)
	e.key("min_response_time")
	e.floatPtr(s.MinResponseTime)
	e.key("total_content_length")
	e.int(s.TotalContentLength)
	e.key("response_times")
	e.statsMap(s.ResponseTimes)
	e.key("num_reqs_per_sec")
	e.statsMap(s.NumReqsPerSec)
	e.key("num_fail_per_sec")
	e.statsMap(s.NumFailPerSec)
	if s.Exact != nil {
		e.key(KeyCicadaLatency)
		e.bin(s.Exact)
	}
	if s.Phases != nil {
		e.key(KeyCicadaPhases)
		e.bin(s.Phases)
	}
}

func (e *encoder) statsError(s *StatsError) {
	n := 4
	if s.FirstSeen != nil {
		n++
	}
	if s.LastSeen != nil {
		n++
	}
	e.mapLen(n)
	e.key("name")
	e.str(s.Name)
	e.key("method")
	e.str(s.Method)
	e.key("error")
	e.str(s.Error)
	e.key("occurrences")
	e.int(s.Occurrences)
	if s.FirstSeen != nil {
		e.key("first_seen")
		e.float(*s.FirstSeen)
	}
	if s.LastSeen != nil {
		e.key("last_seen")
		e.float(*s.LastSeen)
	}
}
