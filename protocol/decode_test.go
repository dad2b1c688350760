package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/pyrepr"
)

// ---- a tiny msgpack builder, so each case spells out its exact bytes ----

// mp concatenates msgpack fragments.
func mp(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// H is raw bytes written as hex (spaces allowed).
func H(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// S is a msgpack str (fixstr or str8/16).
func S(s string) []byte {
	switch n := len(s); {
	case n < 32:
		return append([]byte{0xa0 | byte(n)}, s...)
	case n < 256:
		return append([]byte{0xd9, byte(n)}, s...)
	default:
		return append([]byte{0xda, byte(n >> 8), byte(n)}, s...)
	}
}

// B is a msgpack bin8.
func B(s string) []byte { return append([]byte{0xc4, byte(len(s))}, s...) }

// M is a map header, A an array header (fix or 16-bit).
func M(n int) []byte {
	if n < 16 {
		return []byte{0x80 | byte(n)}
	}
	return []byte{0xde, byte(n >> 8), byte(n)}
}

func A(n int) []byte {
	if n < 16 {
		return []byte{0x90 | byte(n)}
	}
	return []byte{0xdc, byte(n >> 8), byte(n)}
}

// F is a float64, F32 a float32, I a positive or negative fixint.
func F(f float64) []byte {
	return binary.BigEndian.AppendUint64([]byte{0xcb}, math.Float64bits(f))
}

func F32(f float32) []byte {
	return binary.BigEndian.AppendUint32([]byte{0xca}, math.Float32bits(f))
}

func I(n int) []byte {
	if n < -32 || n > 127 {
		panic("I: not a fixint")
	}
	return []byte{byte(int8(n))}
}

var (
	Nil   = []byte{0xc0}
	True  = []byte{0xc3}
	False = []byte{0xc2}
)

// env is the envelope [type, data, "node_1"].
func env(typ string, data []byte) []byte { return mp(A(3), S(typ), data, S("node_1")) }

// entry is a minimal StatsEntry map with extra key/value pairs appended.
func entry(extra int, kv ...[]byte) []byte {
	return mp(append([][]byte{M(3 + extra), S("name"), S("/x"), S("method"), S("GET"), S("start_time"), F(10)}, kv...)...)
}

// report is a stats report around the given entries array and total.
func report(stats, total []byte) []byte {
	return mp(M(4), S("stats"), stats, S("stats_total"), total, S("errors"), M(0),
		S("user_classes_count"), mp(M(1), S("U"), I(1)))
}

func fp(f float64) *float64 { return &f }
func sp(s string) *string   { return &s }

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want Message
	}{
		// Python never sends bin (Locust 2.12.1 locust/rpc/protocol.py,
		// Message.serialize packs str as str), but reading bin as str is
		// harmless.
		{"bin type and node_id", mp(A(3), B("quit"), Nil, B("n")), Message{Type: "quit", NodeID: "n"}},
		{"bin client_ready version", env("client_ready", B("2.12.1")),
			Message{Type: "client_ready", Data: &ClientReady{Version: "2.12.1"}, NodeID: "node_1"}},
		{"str8 node_id", mp(A(3), S("stop"), Nil, S(strings.Repeat("n", 40))),
			Message{Type: "stop", NodeID: strings.Repeat("n", 40)}},

		// client_ready data: version str or -1 in any int width or as float.
		{"client_ready -1 fixint", env("client_ready", H("ff")),
			Message{Type: "client_ready", Data: &ClientReady{VersionSkipCheck: true}, NodeID: "node_1"}},
		{"client_ready -1 int16", env("client_ready", H("d1 ffff")),
			Message{Type: "client_ready", Data: &ClientReady{VersionSkipCheck: true}, NodeID: "node_1"}},
		{"client_ready -1.0", env("client_ready", F(-1)),
			Message{Type: "client_ready", Data: &ClientReady{VersionSkipCheck: true}, NodeID: "node_1"}},
		{"client_ready empty version", env("client_ready", S("")),
			Message{Type: "client_ready", Data: &ClientReady{}, NodeID: "node_1"}},

		{"ack index", env("ack", mp(M(1), S("index"), I(3))),
			Message{Type: "ack", Data: &Ack{Index: 3}, NodeID: "node_1"}},
		{"ack nil (before 2.11)", env("ack", Nil), Message{Type: "ack", Data: &Ack{Index: -1}, NodeID: "node_1"}},

		// Heartbeats: map → worker heartbeat, nil → master heartbeat.
		{"heartbeat uint64 memory, int cpu", env("heartbeat", mp(M(3), S("state"), S("ready"),
			S("current_cpu_usage"), I(3), S("current_memory_usage"), H("cf 0000000100000000"))),
			Message{Type: "heartbeat", Data: &Heartbeat{State: "ready", CPUUsage: 3, MemoryUsage: 1 << 32}, NodeID: "node_1"}},
		{"heartbeat without memory", env("heartbeat", mp(M(2), S("state"), S("running"), S("current_cpu_usage"), F(12.5))),
			Message{Type: "heartbeat", Data: &Heartbeat{State: "running", CPUUsage: 12.5, MemoryUsage: -1}, NodeID: "node_1"}},
		{"heartbeat nil memory", env("heartbeat", mp(M(3), S("state"), S("running"), S("current_cpu_usage"), F(1),
			S("current_memory_usage"), Nil)),
			Message{Type: "heartbeat", Data: &Heartbeat{State: "running", CPUUsage: 1, MemoryUsage: -1}, NodeID: "node_1"}},
		{"master heartbeat", env("heartbeat", Nil), Message{Type: "heartbeat", Data: &MasterHeartbeat{}, NodeID: "node_1"}},

		// spawn: stop_timeout nil, int or float; host nil or str.
		{"spawn int stop_timeout nil host", env("spawn", mp(M(5), S("timestamp"), F(1.5),
			S("user_classes_count"), mp(M(2), S("B"), I(0), S("A"), I(2)), S("host"), Nil, S("stop_timeout"), I(2),
			S("parsed_options"), mp(M(2), S("tags"), Nil, S("num_users"), I(5)))),
			Message{Type: "spawn", Data: &Spawn{Timestamp: 1.5, UserClassesCount: map[string]int64{"A": 2, "B": 0},
				StopTimeout: fp(2), ParsedOptions: map[string]any{"tags": nil, "num_users": int64(5)}}, NodeID: "node_1"}},
		{"spawn float stop_timeout, host", env("spawn", mp(M(5), S("timestamp"), H("ce 6b0d3e00"),
			S("user_classes_count"), M(0), S("host"), S("http://h"), S("stop_timeout"), F(2.5), S("parsed_options"), M(0))),
			Message{Type: "spawn", Data: &Spawn{Timestamp: 0x6b0d3e00, Host: sp("http://h"), StopTimeout: fp(2.5)}, NodeID: "node_1"}},
		{"spawn nil stop_timeout", env("spawn", mp(M(5), S("timestamp"), F(1),
			S("user_classes_count"), M(0), S("host"), Nil, S("stop_timeout"), Nil, S("parsed_options"), M(0))),
			Message{Type: "spawn", Data: &Spawn{Timestamp: 1}, NodeID: "node_1"}},

		// spawning_complete: the key set tells the direction.
		{"worker spawning_complete", env("spawning_complete", mp(M(2), S("user_classes_count"), mp(M(1), S("A"), I(2)),
			S("user_count"), I(2))),
			Message{Type: "spawning_complete", Data: &SpawningComplete{UserClassesCount: map[string]int64{"A": 2}, UserCount: 2}, NodeID: "node_1"}},
		{"boomer spawning_complete (count)", env("spawning_complete", mp(M(2), S("count"), I(2),
			S("user_classes_count"), mp(M(1), S("A"), I(2)))),
			Message{Type: "spawning_complete", Data: &SpawningComplete{UserClassesCount: map[string]int64{"A": 2}, UserCount: -1}, NodeID: "node_1"}},
		{"master spawning_complete", env("spawning_complete", mp(M(1), S("user_count"), I(4))),
			Message{Type: "spawning_complete", Data: &MasterSpawningComplete{UserCount: 4}, NodeID: "node_1"}},

		// Float keys from 2.12.1 (140.0: round(t, -1) of a float in
		// locust/stats.py, StatsEntry._log_response_time), int keys of any
		// width.
		{"stats float and int keys", env("stats", report(mp(A(1), entry(3,
			S("response_times"), mp(M(4), F(140), I(2), I(3), I(1), F32(150), I(1), H("cc 8c"), I(5)),
			S("num_reqs_per_sec"), mp(M(1), H("ce 6b0d3e00"), I(1)),
			S("num_fail_per_sec"), mp(M(1), H("cf 000000006b0d3e01"), H("cd 0100")))), entry(0))),
			Message{Type: "stats", NodeID: "node_1", Data: &StatsReport{
				Stats: []StatsEntry{{Name: "/x", Method: sp("GET"), StartTime: 10,
					ResponseTimes: []Count{{3, 1}, {140, 5}, {150, 1}}, // 140 twice: last wins, as in a Python dict
					NumReqsPerSec: []Count{{0x6b0d3e00, 1}}, NumFailPerSec: []Count{{0x6b0d3e01, 256}}}},
				Total:            StatsEntry{Name: "/x", Method: sp("GET"), StartTime: 10},
				UserClassesCount: map[string]int64{"U": 1}, UserCount: -1}}},

		// nil versus 0 (locust/stats.py, StatsEntry: min_response_time and
		// last_request_timestamp are None until a sample).
		{"stats nil vs zero", env("stats", report(A(0), mp(M(7), S("name"), S("Aggregated"), S("method"), Nil,
			S("start_time"), I(7), S("min_response_time"), Nil, S("last_request_timestamp"), Nil,
			S("max_response_time"), I(0), S("total_response_time"), I(0)))),
			Message{Type: "stats", NodeID: "node_1", Data: &StatsReport{
				Total:            StatsEntry{Name: "Aggregated", StartTime: 7},
				UserClassesCount: map[string]int64{"U": 1}, UserCount: -1}}},
		{"stats zero min, cicada_latency", env("stats", report(A(0), entry(3, S("min_response_time"), I(0),
			S("last_request_timestamp"), F(11.5), S("cicada_latency"), B("\x01\x02")))),
			Message{Type: "stats", NodeID: "node_1", Data: &StatsReport{
				Total: StatsEntry{Name: "/x", Method: sp("GET"), StartTime: 10, MinResponseTime: fp(0),
					LastRequestTimestamp: fp(11.5), Exact: []byte{1, 2}},
				UserClassesCount: map[string]int64{"U": 1}, UserCount: -1}}},
		{"stats cicada_phases", env("stats", report(A(0), entry(2, S("cicada_latency"), B("\x01"), S("cicada_phases"), B("\x01\x00\x01\x01")))),
			Message{Type: "stats", NodeID: "node_1", Data: &StatsReport{
				Total:            StatsEntry{Name: "/x", Method: sp("GET"), StartTime: 10, Exact: []byte{1}, Phases: []byte{1, 0, 1, 1}},
				UserClassesCount: map[string]int64{"U": 1}, UserCount: -1}}},
		{"stats unknown keys ignored, errors with HEAD fields", env("stats", mp(M(6), S("stats"), A(0),
			S("stats_total"), entry(1, S("extra"), mp(A(1), M(0))), S("future"), mp(M(1), I(1), I(2)),
			S("errors"), mp(M(1), S("k"), mp(M(6), S("name"), S("/x"), S("method"), S("GET"), S("error"), S("E('x')"),
				S("occurrences"), I(3), S("first_seen"), F(1.25), S("last_seen"), Nil)),
			S("user_classes_count"), M(0), S("user_count"), I(0))),
			Message{Type: "stats", NodeID: "node_1", Data: &StatsReport{
				Total:  StatsEntry{Name: "/x", Method: sp("GET"), StartTime: 10},
				Errors: map[string]StatsError{"k": {Name: "/x", Method: "GET", Error: "E('x')", Occurrences: 3, FirstSeen: fp(1.25)}},
			}}},

		{"exception", env("exception", mp(M(2), S("msg"), S("boom"), S("traceback"), S("  File x\n"))),
			Message{Type: "exception", Data: &Exception{Msg: "boom", Traceback: "  File x\n"}, NodeID: "node_1"}},
		{"logs", env("logs", mp(M(2), S("worker_id"), S("node_1"), S("logs"), mp(A(2), S("a"), S("b")))),
			Message{Type: "logs", Data: &Logs{WorkerID: "node_1", Logs: []string{"a", "b"}}, NodeID: "node_1"}},
		{"locustfile request", env("locustfile", mp(M(1), S("version"), S("2.46.4"))),
			Message{Type: "locustfile", Data: &Locustfile{Data: map[string]any{"version": "2.46.4"}}, NodeID: "node_1"}},
		{"locustfile old nil", env("locustfile", Nil), Message{Type: "locustfile", Data: &Locustfile{}, NodeID: "node_1"}},
		{"update_user_class", env("update_user_class", mp(M(3), S("user_class_name"), S("Web"), S("weight"), I(2),
			S("tasks"), mp(A(1), S("index")))),
			Message{Type: "update_user_class", NodeID: "node_1", Data: &UpdateUserClass{Data: map[string]any{
				"user_class_name": "Web", "weight": int64(2), "tasks": []any{"index"}}}}},
		{"reconnect", env("reconnect", Nil), Message{Type: "reconnect", NodeID: "node_1"}},
		{"stop with data passes through", env("stop", I(1)),
			Message{Type: "stop", Data: &Custom{Data: int64(1)}, NodeID: "node_1"}},

		// Custom data: int keys stay int, mixed keys → map[any]any.
		{"custom int key", env("hello", mp(M(3), S("n"), I(1), I(7), S("intkey"), S("lst"), mp(A(2), I(1), S("a")))),
			Message{Type: "hello", NodeID: "node_1", Data: &Custom{Data: map[any]any{
				"n": int64(1), int64(7): "intkey", "lst": []any{int64(1), "a"}}}}},
		{"custom scalar kinds", env("kinds", mp(A(8), Nil, True, False, H("cf ffffffffffffffff"), H("d3 8000000000000000"),
			F32(0.5), B("\x00\xff"), M(0))),
			Message{Type: "kinds", NodeID: "node_1", Data: &Custom{Data: []any{nil, true, false, uint64(math.MaxUint64),
				int64(math.MinInt64), 0.5, []byte{0, 0xff}, map[string]any{}}}}},
		{"custom odd keys", env("keys", mp(M(5), Nil, I(0), True, I(1), F(1.5), I(2), B("b"), I(3), H("cf ffffffffffffffff"), I(4))),
			Message{Type: "keys", NodeID: "node_1", Data: &Custom{Data: map[any]any{
				nil: int64(0), true: int64(1), 1.5: int64(2), "b": int64(3), uint64(math.MaxUint64): int64(4)}}}},
		{"custom nil data", env("ping", Nil), Message{Type: "ping", NodeID: "node_1", Data: &Custom{}}},

		// HEAD's datetime map (upstream locust/rpc/protocol.py's encode and
		// decode hooks; 2.12.1 sends no datetimes).
		{"datetime", env("dt", mp(M(1), S("when"), mp(M(2), S("__datetime__"), True, S("as_str"), S("20240102T03:04:05.678901")))),
			Message{Type: "dt", NodeID: "node_1", Data: &Custom{Data: map[string]any{
				"when": time.Date(2024, 1, 2, 3, 4, 5, 678901000, time.UTC)}}}},
		{"datetime-like map with bad as_str stays a map", env("dt", mp(M(2), S("__datetime__"), True, S("as_str"), S("2024-01-02"))),
			Message{Type: "dt", NodeID: "node_1", Data: &Custom{Data: map[string]any{"__datetime__": true, "as_str": "2024-01-02"}}}},
		{"ObjectId map passes through", env("oid", mp(M(2), S("__ObjectId__"), True, S("as_str"), S("0123"))),
			Message{Type: "oid", NodeID: "node_1", Data: &Custom{Data: map[string]any{"__ObjectId__": true, "as_str": "0123"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.in)
			if err != nil {
				t.Fatalf("Decode(%x) error: %v", tt.in, err)
			}
			if !deepEqual(got, tt.want) {
				t.Fatalf("Decode(%x) =\n%#v\n%s; want\n%#v\n%s", tt.in, got, dump(got.Data), tt.want, dump(tt.want.Data))
			}
			// Whatever decodes re-encodes and decodes to the same value.
			enc, err := Encode(got)
			if err != nil {
				t.Fatalf("Encode(Decode(%x)) error: %v", tt.in, err)
			}
			again, err := Decode(enc)
			if err != nil || !deepEqual(again, got) {
				t.Fatalf("Decode(Encode(Decode(%x))) = %#v, %v; want %#v", tt.in, again, err, got)
			}
		})
	}
}

func dump(v any) string {
	switch v := v.(type) {
	case *StatsReport:
		var b strings.Builder
		for _, e := range append(v.Stats, v.Total) {
			b.WriteString(dumpEntry(&e))
		}
		return b.String()
	case *Custom:
		return typeName(v.Data)
	}
	return ""
}

func dumpEntry(e *StatsEntry) string {
	s := "  entry " + e.Name
	if e.Method != nil {
		s += " method=" + *e.Method
	}
	if e.MinResponseTime != nil {
		s += " min=" + pyrepr.Float(*e.MinResponseTime)
	}
	if e.LastRequestTimestamp != nil {
		s += " last=" + pyrepr.Float(*e.LastRequestTimestamp)
	}
	return s + "\n"
}

func TestDecodeErrors(t *testing.T) {
	big := func(code byte, n uint32) []byte { return binary.BigEndian.AppendUint32([]byte{code}, n) }
	tests := []struct {
		name string
		in   []byte
		want string // substring of the error text
	}{
		{"empty payload", nil, "envelope: empty payload"},
		{"map envelope", mp(M(3), S("type"), S("quit"), S("data"), Nil, S("node_id"), S("n")), "want array of 3 [type, data, node_id], got map"},
		{"2-element envelope", mp(A(2), S("quit"), Nil), "got array of 2"},
		{"4-element envelope", mp(A(4), S("quit"), Nil, S("n"), S("x")), "got array of 4"},
		{"scalar envelope", I(1), "got int"},
		{"trailing bytes", append(env("quit", Nil), 0xc0), "1 trailing bytes"},
		{"second message appended", append(env("quit", Nil), env("quit", Nil)...), "trailing bytes"},
		{"truncated string", env("quit", Nil)[:5], "unexpected EOF"},
		{"truncated float", mp(A(3), S("spawn"), M(1), S("timestamp"), F(1)[:5]), "timestamp: bad number: unexpected EOF"},
		{"missing node_id", mp(A(3), S("quit"), Nil), "node_id: truncated: unexpected EOF"},
		{"truncated uint32", mp(A(3), S("ack"), M(1), S("index"), H("ce 00")), "index: bad integer: unexpected EOF"},
		{"truncated at uint32 code", mp(A(3), S("ack"), M(1), S("index"), H("ce")), "index: bad integer: unexpected EOF"},
		{"type not a string", mp(A(3), I(1), Nil, S("n")), "envelope: type: want str, got int"},
		// The error paths the oracle (oracle_test.go) pins: an ignored
		// entry is named by its key wherever it is skipped, a truncated
		// key of a plain map by its index.
		{"ignored heartbeat key truncated", mp(A(3), S("heartbeat"), M(2), S("state"), S("ready"), S("extra"), A(2), H("d9 05 61")), `"heartbeat" data: extra: str/bin of 5 bytes exceeds the payload`},
		{"ignored ack key truncated", mp(A(3), S("ack"), M(1), S("extra"), A(2), H("d9 05 61")), `"ack" data: extra: str/bin of 5 bytes exceeds the payload`},
		{"ignored non-str key truncated", mp(A(3), S("ack"), M(1), I(1), A(2), H("d9 05 61")), `"ack" data: [0]: str/bin of 5 bytes exceeds the payload`},
		{"plain map key truncated", mp(A(3), S("custom"), M(2), S("a"), S("bcd")), `"custom" data: [key 1]: truncated: unexpected EOF`},
		{"node_id nil", mp(A(3), S("quit"), Nil, Nil), "node_id: want str, got nil"},
		{"invalid UTF-8", mp(A(3), S("quit"), Nil, S("\xff")), "not valid UTF-8"},
		{"client_ready nil", env("client_ready", Nil), "want version str or -1, got nil"},
		{"client_ready 5", env("client_ready", I(5)), "want version str or -1, got 5"},
		{"client_ready map", env("client_ready", M(0)), "got map"},
		{"ack index str", env("ack", mp(M(1), S("index"), S("0"))), "index: want integer, got str"},
		{"heartbeat missing cpu", env("heartbeat", mp(M(1), S("state"), S("ready"))), "current_cpu_usage: missing"},
		{"heartbeat missing state", env("heartbeat", mp(M(1), S("current_cpu_usage"), F(0))), "state: missing"},
		{"heartbeat state int", env("heartbeat", mp(M(2), S("state"), I(1), S("current_cpu_usage"), F(0))), "state: want str, got int"},
		{"heartbeat cpu nil", env("heartbeat", mp(M(2), S("state"), S("x"), S("current_cpu_usage"), Nil)), "current_cpu_usage: want number, got nil"},
		{"heartbeat list", env("heartbeat", A(0)), "want map, got array"},
		{"spawn missing host", env("spawn", mp(M(4), S("timestamp"), F(1), S("user_classes_count"), M(0),
			S("stop_timeout"), Nil, S("parsed_options"), M(0))), "host: missing"},
		{"spawn stop_timeout str", env("spawn", mp(M(5), S("timestamp"), F(1), S("user_classes_count"), M(0),
			S("host"), Nil, S("stop_timeout"), S("2"), S("parsed_options"), M(0))), "stop_timeout: want number or nil, got str"},
		{"spawn class count float NaN", env("spawn", mp(M(5), S("timestamp"), F(1), S("user_classes_count"), mp(M(1), S("A"), F(math.NaN())),
			S("host"), Nil, S("stop_timeout"), Nil, S("parsed_options"), M(0))), `user_classes_count["A"]: float NaN is not an int64`},
		{"spawn parsed_options int key", env("spawn", mp(M(5), S("timestamp"), F(1), S("user_classes_count"), M(0),
			S("host"), Nil, S("stop_timeout"), Nil, S("parsed_options"), mp(M(1), I(1), I(1)))), "parsed_options: want map with str keys"},
		{"spawning_complete empty", env("spawning_complete", M(0)), "user_classes_count: missing"},
		{"stats missing stats_total", env("stats", mp(M(3), S("stats"), A(0), S("errors"), M(0), S("user_classes_count"), M(0))),
			"stats_total: missing"},
		{"stats entry missing start_time", env("stats", report(A(0), mp(M(2), S("name"), S("x"), S("method"), Nil))),
			"stats_total.start_time: missing"},
		{"stats entry nil start_time", env("stats", report(A(0), mp(M(3), S("name"), S("x"), S("method"), Nil, S("start_time"), Nil))),
			"stats_total.start_time: want number, got nil"},
		{"stats str bucket key", env("stats", report(mp(A(1), entry(1, S("response_times"), mp(M(1), S("140"), I(1)))), entry(0))),
			`"stats" data: stats[0].response_times[key 0]: want integer, got str`},
		{"stats uint64 overflow", env("stats", report(A(0), entry(1, S("num_requests"), H("cf ffffffffffffffff")))),
			"num_requests: integer 18446744073709551615 overflows int64"},
		{"stats infinite key", env("stats", report(A(0), entry(1, S("response_times"), mp(M(1), F(math.Inf(1)), I(1))))),
			"float +Inf is not an int64"},
		{"stats error missing occurrences", env("stats", mp(M(4), S("stats"), A(0), S("stats_total"), entry(0),
			S("errors"), mp(M(1), S("k"), mp(M(3), S("name"), S("x"), S("method"), S("GET"), S("error"), S("e"))),
			S("user_classes_count"), M(0))), `errors["k"].occurrences: missing`},
		{"exception missing traceback", env("exception", mp(M(1), S("msg"), S("x"))), "traceback: missing"},
		{"logs not strings", env("logs", mp(M(2), S("worker_id"), S("w"), S("logs"), mp(A(1), I(1)))), "logs[0]: want str, got int"},
		{"update_user_class nil", env("update_user_class", Nil), "want map, got nil"},

		// Hostile headers: claimed sizes are checked against the payload
		// before anything is allocated.
		{"map32 of 2^31 entries", env("x", big(0xdf, 1<<31)), "container of 2147483648 elements exceeds the payload"},
		{"array32 of 2^32-1", env("x", big(0xdd, math.MaxUint32)), "exceeds the payload"},
		{"str32 of 4 GiB", env("x", big(0xdb, math.MaxUint32)), "str/bin of 4294967295 bytes exceeds the payload"},
		{"bin32 in stats", env("stats", report(A(0), entry(1, S("cicada_latency"), big(0xc6, 1<<30)))), "exceeds the payload"},
		{"map32 skipped under unknown key", env("stats", mp(M(1), S("zzz"), big(0xdf, 1<<31))), "exceeds the payload"},
		{"deep nesting", env("x", bytes.Repeat([]byte{0x91}, 10000)), "nesting deeper than 100"},
		{"deep nesting under skipped key", env("stats", mp(M(1), S("zzz"), bytes.Repeat([]byte{0x81, 0x01}, 10000))), "nesting deeper than 100"},
		{"deep nesting in typed map", env("spawn", mp(M(1), S("parsed_options"), mp(M(1), S("a"), bytes.Repeat([]byte{0x91}, 200)))), "nesting deeper"},
		{"ext type", env("x", H("d6 ff 00000000")), "msgpack ext is not allowed"},
		{"ext as map key", env("x", mp(M(1), H("d4 01 00"), I(1))), "msgpack ext is not allowed"},
		{"ext under skipped key", env("heartbeat", mp(M(1), S("zzz"), H("c7 00 05"))), "msgpack ext is not allowed"},
		{"reserved code", env("x", H("c1")), "reserved code 0xc1"},
		{"list as map key", env("x", mp(M(1), A(0), I(1))), "unhashable map key"},
		{"NaN map key", env("x", mp(M(1), F(math.NaN()), I(1))), "NaN map key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode(tt.in)
			if err == nil {
				t.Fatalf("Decode(%.64x) = %+v, nil; want error containing %q", tt.in, m, tt.want)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("Decode(%.64x) error %v does not wrap ErrMalformed", tt.in, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode(%.64x) error = %q; want it to contain %q", tt.in, err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "protocol: malformed message: ") {
				t.Errorf("Decode error %q lacks the sentinel prefix", err)
			}
			if strings.Contains(tt.want, "EOF") && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("Decode(%.64x) error %v does not wrap io.ErrUnexpectedEOF", tt.in, err)
			}
		})
	}
}

// TestDecodeHostileAllocations checks that lying headers cost no memory.
func TestDecodeHostileAllocations(t *testing.T) {
	for _, in := range [][]byte{
		env("x", binary.BigEndian.AppendUint32([]byte{0xdf}, 1<<31)),
		env("x", binary.BigEndian.AppendUint32([]byte{0xdd}, 1<<31)),
		env("x", binary.BigEndian.AppendUint32([]byte{0xdb}, 1<<31)),
		env("stats", binary.BigEndian.AppendUint32([]byte{0xdf}, 1<<31)),
	} {
		var ms1, ms2 runtimeMem
		ms1.read()
		for i := 0; i < 100; i++ {
			if _, err := Decode(in); err == nil {
				t.Fatalf("Decode(%x) succeeded", in)
			}
		}
		ms2.read()
		if grew := ms2.total - ms1.total; grew > 1<<20 {
			t.Errorf("100 × Decode(%x) allocated %d bytes; want < 1 MiB", in, grew)
		}
	}
}

func TestDecodeErrorsNameTheMessage(t *testing.T) {
	_, err := Decode(env("heartbeat", mp(M(1), S("state"), S("ready"))))
	if want := `protocol: malformed message: "heartbeat" data: current_cpu_usage: missing`; err == nil || err.Error() != want {
		t.Errorf("Decode(heartbeat without cpu) error = %v; want %q", err, want)
	}
}
