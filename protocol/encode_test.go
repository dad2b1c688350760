package protocol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const (
	node2121 = "vm_a1aae452bac14ce3a9cdaa03905a6b32"
	nodeHEAD = "vm_037d2f71d0574c5ba849f226c9a6559e"
)

// TestEncodeCapturedBytes encodes messages whose exact bytes were captured
// from real Locust processes (2.12.1 and HEAD) and expects the same bytes.
func TestEncodeCapturedBytes(t *testing.T) {
	tests := []struct {
		name string
		in   Message
		hex  string
	}{
		{"client_ready 2.12.1", Message{Type: TypeClientReady, Data: &ClientReady{Version: "2.12.1"}, NodeID: node2121},
			"93ac636c69656e745f7265616479a6322e31322e31d923766d5f6131616165343532626163313463653361396364616130333930356136623332"},
		{"client_ready HEAD", Message{Type: TypeClientReady, Data: &ClientReady{Version: "2.46.4.dev0"}, NodeID: nodeHEAD},
			"93ac636c69656e745f7265616479ab322e34362e342e64657630d923766d5f3033376432663731643035373463356261383439663232366339613635353965"},
		{"ack index 0", Message{Type: TypeAck, Data: &Ack{Index: 0}, NodeID: node2121},
			"93a361636b81a5696e64657800d923766d5f6131616165343532626163313463653361396364616130333930356136623332"},
		{"heartbeat W→M", Message{Type: TypeHeartbeat, Data: &Heartbeat{State: "ready", MemoryUsage: 56696832}, NodeID: node2121},
			"93a968656172746265617483a57374617465a57265616479b163757272656e745f6370755f7573616765cb0000000000000000b463757272656e745f6d656d6f72795f7573616765ce03612000d923766d5f6131616165343532626163313463653361396364616130333930356136623332"},
		{"heartbeat M→W", Message{Type: TypeHeartbeat, Data: &MasterHeartbeat{}, NodeID: nodeHEAD},
			"93a9686561727462656174c0d923766d5f3033376432663731643035373463356261383439663232366339613635353965"},
		{"spawning", Message{Type: TypeSpawning, NodeID: node2121},
			"93a8737061776e696e67c0d923766d5f6131616165343532626163313463653361396364616130333930356136623332"},
		{"spawning_complete M→W", Message{Type: TypeSpawningComplete, Data: &MasterSpawningComplete{UserCount: 4}, NodeID: nodeHEAD},
			"93b1737061776e696e675f636f6d706c65746581aa757365725f636f756e7404d923766d5f3033376432663731643035373463356261383439663232366339613635353965"},
		{"stop", Message{Type: TypeStop, NodeID: node2121},
			"93a473746f70c0d923766d5f6131616165343532626163313463653361396364616130333930356136623332"},
		{"client_stopped", Message{Type: TypeClientStopped, NodeID: node2121},
			"93ae636c69656e745f73746f70706564c0d923766d5f6131616165343532626163313463653361396364616130333930356136623332"},
		{"quit", Message{Type: TypeQuit, NodeID: node2121},
			"93a471756974c0d923766d5f6131616165343532626163313463653361396364616130333930356136623332"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.in)
			if err != nil {
				t.Fatalf("Encode(%+v) error: %v", tt.in, err)
			}
			if h := hex.EncodeToString(got); h != tt.hex {
				t.Errorf("Encode(%+v) =\n%s; want\n%s", tt.in, h, tt.hex)
			}
		})
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		in   Message
		want []byte
	}{
		// int keys in ascending order, nil where Locust sends nil (None in
		// locust/stats.py, StatsEntry), str for every string, float64 for
		// every float.
		{"stats entry wire form", Message{Type: TypeStats, NodeID: "n", Data: &StatsReport{
			Stats: []StatsEntry{{Name: "/a", Method: sp("GET"), LastRequestTimestamp: fp(2.5), StartTime: 1,
				NumRequests: 3, NumFailures: 1, TotalResponseTime: 300, MaxResponseTime: 150, MinResponseTime: fp(50),
				TotalContentLength: 1 << 20, ResponseTimes: []Count{{150, 1}, {50, 1}, {100, 1}},
				NumReqsPerSec: []Count{{1796011106, 1}, {1796011105, 2}}, NumFailPerSec: []Count{{1796011105, 1}}}},
			Total:            StatsEntry{Name: "Aggregated", Method: sp(""), StartTime: 1},
			Errors:           map[string]StatsError{"k2": {Name: "/a", Method: "GET", Error: "e", Occurrences: 1, FirstSeen: fp(1)}, "k1": {Name: "/a", Method: "GET", Error: "f", Occurrences: 2}},
			UserClassesCount: map[string]int64{"Web": 1, "Api": 0}, UserCount: 1}},
			mp(A(3), S("stats"), M(5),
				S("stats"), A(1), M(14), S("name"), S("/a"), S("method"), S("GET"), S("last_request_timestamp"), F(2.5),
				S("start_time"), F(1), S("num_requests"), I(3), S("num_none_requests"), I(0), S("num_failures"), I(1),
				S("total_response_time"), F(300), S("max_response_time"), F(150), S("min_response_time"), F(50),
				S("total_content_length"), H("ce 00100000"),
				S("response_times"), M(3), I(50), I(1), I(100), I(1), H("cc 96"), I(1),
				S("num_reqs_per_sec"), M(2), H("ce 6b0cf461"), I(2), H("ce 6b0cf462"), I(1),
				S("num_fail_per_sec"), M(1), H("ce 6b0cf461"), I(1),
				S("stats_total"), M(14), S("name"), S("Aggregated"), S("method"), S(""), S("last_request_timestamp"), Nil,
				S("start_time"), F(1), S("num_requests"), I(0), S("num_none_requests"), I(0), S("num_failures"), I(0),
				S("total_response_time"), F(0), S("max_response_time"), F(0), S("min_response_time"), Nil,
				S("total_content_length"), I(0), S("response_times"), M(0), S("num_reqs_per_sec"), M(0), S("num_fail_per_sec"), M(0),
				S("errors"), M(2),
				S("k1"), M(4), S("name"), S("/a"), S("method"), S("GET"), S("error"), S("f"), S("occurrences"), I(2),
				S("k2"), M(5), S("name"), S("/a"), S("method"), S("GET"), S("error"), S("e"), S("occurrences"), I(1), S("first_seen"), F(1),
				S("user_classes_count"), M(2), S("Api"), I(0), S("Web"), I(1),
				S("user_count"), I(1),
				S("n"))},
		{"stats nil method and cicada_latency", Message{Type: TypeStats, NodeID: "n", Data: &StatsReport{
			Total: StatsEntry{Name: "Aggregated", StartTime: 1, Exact: []byte{9}}, UserCount: -1}},
			mp(A(3), S("stats"), M(4), S("stats"), A(0),
				S("stats_total"), M(15), S("name"), S("Aggregated"), S("method"), Nil, S("last_request_timestamp"), Nil,
				S("start_time"), F(1), S("num_requests"), I(0), S("num_none_requests"), I(0), S("num_failures"), I(0),
				S("total_response_time"), F(0), S("max_response_time"), F(0), S("min_response_time"), Nil,
				S("total_content_length"), I(0), S("response_times"), M(0), S("num_reqs_per_sec"), M(0), S("num_fail_per_sec"), M(0),
				S("cicada_latency"), H("c4 01 09"),
				S("errors"), M(0), S("user_classes_count"), M(0), S("n"))},
		{"client_ready -1", Message{Type: TypeClientReady, Data: &ClientReady{VersionSkipCheck: true}, NodeID: "n"},
			mp(A(3), S("client_ready"), H("ff"), S("n"))},
		{"ack without index", Message{Type: TypeAck, Data: &Ack{Index: -1}}, mp(A(3), S("ack"), Nil, S(""))},
		{"heartbeat without memory", Message{Type: TypeHeartbeat, Data: &Heartbeat{State: "running", CPUUsage: 1.5, MemoryUsage: -1}},
			mp(A(3), S("heartbeat"), M(2), S("state"), S("running"), S("current_cpu_usage"), F(1.5), S(""))},
		{"spawn", Message{Type: TypeSpawn, NodeID: "n", Data: &Spawn{Timestamp: 1.25, UserClassesCount: map[string]int64{"B": 1, "A": 0},
			StopTimeout: fp(2), ParsedOptions: map[string]any{"tags": []string{"x"}, "b": true, "a": nil}}},
			mp(A(3), S("spawn"), M(5), S("timestamp"), F(1.25), S("user_classes_count"), M(2), S("A"), I(0), S("B"), I(1),
				S("host"), Nil, S("stop_timeout"), F(2), S("parsed_options"), M(3), S("a"), Nil, S("b"), True, S("tags"), A(1), S("x"), S("n"))},
		{"spawn nil maps", Message{Type: TypeSpawn, Data: &Spawn{Host: sp("h")}},
			mp(A(3), S("spawn"), M(5), S("timestamp"), F(0), S("user_classes_count"), M(0),
				S("host"), S("h"), S("stop_timeout"), Nil, S("parsed_options"), M(0), S(""))},
		{"spawning_complete without user_count", Message{Type: TypeSpawningComplete, Data: &SpawningComplete{UserCount: -1}},
			mp(A(3), S("spawning_complete"), M(1), S("user_classes_count"), M(0), S(""))},
		{"exception", Message{Type: TypeException, Data: &Exception{Msg: "m", Traceback: "t"}},
			mp(A(3), S("exception"), M(2), S("msg"), S("m"), S("traceback"), S("t"), S(""))},
		{"logs", Message{Type: TypeLogs, Data: &Logs{WorkerID: "w", Logs: []string{"l"}}},
			mp(A(3), S("logs"), M(2), S("worker_id"), S("w"), S("logs"), A(1), S("l"), S(""))},
		{"locustfile nil", Message{Type: TypeLocustfile, Data: &Locustfile{}}, mp(A(3), S("locustfile"), Nil, S(""))},
		{"update_user_class nil", Message{Type: TypeUpdateUserClass, Data: &UpdateUserClass{}}, mp(A(3), S("update_user_class"), M(0), S(""))},

		// Custom data: int keys stay int, sorted (nil, bools, numbers, strings).
		{"custom int keys", Message{Type: "hello", Data: &Custom{Data: map[any]any{"n": int64(1), int64(7): "intkey", int64(-1): 1.5}}},
			mp(A(3), S("hello"), M(3), I(-1), F(1.5), I(7), S("intkey"), S("n"), I(1), S(""))},
		{"custom mixed keys order", Message{Type: "k", Data: &Custom{Data: map[any]any{"a": 1, 2.5: 2, 2: 3, uint64(math.MaxUint64): 4, true: 5, nil: 6, false: 7, 2.0: 8}}},
			mp(A(3), S("k"), M(8), Nil, I(6), False, I(7), True, I(5), I(2), I(3), F(2), I(8), F(2.5), I(2),
				H("cf ffffffffffffffff"), I(4), S("a"), I(1), S(""))},
		{"custom convenience types", Message{Type: "c", Data: []any{int32(-200), uint16(300), float32(0.5), map[string]string{"k": "v"},
			map[string]int{"x": 1}, map[int64]int64{3: 4}, []byte(nil), []any(nil)}},
			mp(A(3), S("c"), A(8), H("d1 ff38"), H("cd 012c"), F(0.5), M(1), S("k"), S("v"), M(1), S("x"), I(1), M(1), I(3), I(4), Nil, Nil, S(""))},
		{"custom bin stays bin", Message{Type: "b", Data: &Custom{Data: []byte("raw")}}, mp(A(3), S("b"), B("raw"), S(""))},
		{"nil custom", Message{Type: "x", Data: (*Custom)(nil)}, mp(A(3), S("x"), Nil, S(""))},

		// time.Time → HEAD's datetime map (upstream locust/rpc/protocol.py's
		// encode hook), wall clock, zone dropped.
		{"datetime", Message{Type: "dt", Data: &Custom{Data: time.Date(2024, 1, 2, 3, 4, 5, 678901999, time.FixedZone("X", 3600))}},
			mp(A(3), S("dt"), M(2), S("__datetime__"), True, S("as_str"), S("20240102T03:04:05.678901"), S(""))},

		// Python rejects invalid UTF-8 in str; we replace it.
		{"invalid UTF-8 replaced", Message{Type: "q\xffq", NodeID: "n\xc3"}, mp(A(3), S("q\uFFFDq"), Nil, S("n\uFFFD"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.in)
			if err != nil {
				t.Fatalf("Encode(%+v) error: %v", tt.in, err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("Encode(%+v) =\n%x; want\n%x", tt.in, got, tt.want)
			}
			if _, err := Decode(got); err != nil {
				t.Errorf("Decode(Encode(%+v)) error: %v", tt.in, err)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   Message
		want string
	}{
		{"typed data under another type", Message{Type: TypeAck, Data: &Heartbeat{}}, `*protocol.Heartbeat needs Type "heartbeat"`},
		{"master heartbeat under another type", Message{Type: "x", Data: &MasterHeartbeat{}}, `needs Type "heartbeat"`},
		{"nil typed pointer", Message{Type: TypeStats, Data: (*StatsReport)(nil)}, "nil *protocol.StatsReport"},
		{"unsupported Go type", Message{Type: "x", Data: &Custom{Data: map[string]any{"c": make(chan int)}}}, `["c"]: cannot encode Go type chan int`},
		{"struct value", Message{Type: "x", Data: struct{}{}}, "cannot encode Go type struct {}"},
		{"unsupported key", Message{Type: "x", Data: map[any]any{[2]int{}: 1}}, "cannot encode map key of Go type [2]int"},
		{"year 10000", Message{Type: "x", Data: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "year 10000 outside 1..9999"},
		{"parsed option", Message{Type: TypeSpawn, Data: &Spawn{ParsedOptions: map[string]any{"f": func() {}}}}, "parsed_options[\"f\"]: cannot encode"},
		{"too deep", Message{Type: "x", Data: deepList(200)}, "nesting deeper than 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := AppendEncode(dst, tt.in)
			if err == nil {
				t.Fatalf("AppendEncode(%+v) = %x, nil; want error", tt.in, got)
			}
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("AppendEncode(%+v) error = %v; want ErrUnsupported containing %q", tt.in, err, tt.want)
			}
			if string(got) != "keep" {
				t.Errorf("AppendEncode on error returned %q; want dst unchanged", got)
			}
			if b, err := Encode(tt.in); err == nil || b != nil {
				t.Errorf("Encode(%+v) = %x, %v; want nil, error", tt.in, b, err)
			}
		})
	}
}

func deepList(n int) any {
	var v any = "x"
	for i := 0; i < n; i++ {
		v = []any{v}
	}
	return v
}

// TestAppendEncodeReuse: with a reused buffer, encoding allocates nothing.
func TestAppendEncodeReuse(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	m := Message{Type: TypeHeartbeat, Data: &Heartbeat{State: "running", CPUUsage: 3.5, MemoryUsage: 1 << 30}, NodeID: node2121}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = AppendEncode(buf[:0], m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendEncode(heartbeat) allocs = %v; want 0", allocs)
	}
	r := benchReport(50)
	sm := Message{Type: TypeStats, Data: r, NodeID: node2121}
	buf, _ = AppendEncode(buf[:0], sm)
	allocs = testing.AllocsPerRun(20, func() {
		buf, _ = AppendEncode(buf[:0], sm)
	})
	if allocs != 0 {
		t.Errorf("AppendEncode(stats with 50 entries) allocs = %v; want 0", allocs)
	}
}
