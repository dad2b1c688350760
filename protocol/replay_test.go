package protocol

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/pyrepr"
)

// TestReplayCapturedFrames decodes every frame captured from real Locust
// 2.12.1 and HEAD masters and workers, checks the typed value against the
// Python repr recorded with it, re-encodes it, and has Python's msgpack
// (Locust's unpacker settings) confirm that the re-encoding reads back equal
// to the original. All Python comparisons run in one process.
func TestReplayCapturedFrames(t *testing.T) {
	frames := loadFrames(t)
	var pairs []pyPair
	seen := map[string]int{}
	for _, f := range frames {
		m, err := Decode(f.payload)
		if err != nil {
			t.Errorf("%s: Decode(%s) error: %v", f.name(), f.Decoded[:min(len(f.Decoded), 120)], err)
			continue
		}
		seen[fmt.Sprintf("%s %T", m.Type, m.Data)]++
		if want := wantDataType(m.Type, f.Dir); fmt.Sprintf("%T", m.Data) != want {
			t.Errorf("%s: Decode(%s).Data is %T; want %s", f.name(), m.Type, m.Data, want)
			continue
		}
		for _, want := range spotChecks(t, m) {
			if !strings.Contains(f.Decoded, want) {
				t.Errorf("%s: %s decoded repr lacks %q (typed value %+v)\nrepr: %.600s", f.name(), m.Type, want, m.Data, f.Decoded)
			}
		}

		enc, err := Encode(m)
		if err != nil {
			t.Errorf("%s: Encode(%s) error: %v", f.name(), m.Type, err)
			continue
		}
		app, err := AppendEncode([]byte("prefix"), m)
		if err != nil || !bytes.Equal(app[6:], enc) || string(app[:6]) != "prefix" {
			t.Errorf("%s: AppendEncode differs from Encode (err %v)", f.name(), err)
		}
		m2, err := Decode(enc)
		if err != nil {
			t.Errorf("%s: Decode(Encode(%s)) error: %v", f.name(), m.Type, err)
		} else if !deepEqual(m, m2) {
			t.Errorf("%s: Decode(Encode(m)) = %+v; want %+v", f.name(), m2, m)
		}
		pairs = append(pairs, pyPair{ID: f.name(), A: f.Hex, B: hex.EncodeToString(enc)})
	}
	t.Logf("decoded %d frames: %v", len(frames), seen)

	for _, mm := range comparePython(t, pairs) {
		t.Errorf("%s: Python reads our re-encoding differently: %s\noriginal:   %.400s\nre-encoded: %.400s", mm.ID, mm.Why, mm.A, mm.B)
	}
}

// wantDataType is the Go type the captured message must decode to.
func wantDataType(typ, dir string) string {
	switch typ {
	case TypeClientReady:
		return "*protocol.ClientReady"
	case TypeAck:
		return "*protocol.Ack"
	case TypeHeartbeat:
		if dir == "M->W" {
			return "*protocol.MasterHeartbeat"
		}
		return "*protocol.Heartbeat"
	case TypeSpawn:
		return "*protocol.Spawn"
	case TypeSpawningComplete:
		if dir == "M->W" {
			return "*protocol.MasterSpawningComplete"
		}
		return "*protocol.SpawningComplete"
	case TypeStats:
		return "*protocol.StatsReport"
	case TypeException:
		return "*protocol.Exception"
	case TypeLogs:
		return "*protocol.Logs"
	case TypeLocustfile:
		return "*protocol.Locustfile"
	case TypeUpdateUserClass:
		return "*protocol.UpdateUserClass"
	case TypeSpawning, TypeStop, TypeClientStopped, TypeQuit, TypeReconnect:
		return "<nil>"
	}
	return "*protocol.Custom"
}

// spotChecks returns substrings the Python repr of the frame must contain,
// built from the typed value.
func spotChecks(t *testing.T, m Message) []string {
	t.Helper()
	out := []string{"[" + pyrepr.String(m.Type) + ", ", ", " + pyrepr.String(m.NodeID) + "]"}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	classes := func(m map[string]int64) {
		for k, v := range m {
			out = append(out, pyrepr.String(k)+": "+itoa(v))
		}
	}
	switch d := m.Data.(type) {
	case nil:
		out = append(out, ", None, ")
	case *ClientReady:
		if d.VersionSkipCheck {
			out = append(out, ", -1, ")
		} else {
			out = append(out, ", "+pyrepr.String(d.Version)+", ")
		}
	case *Ack:
		out = append(out, "{'index': "+itoa(d.Index)+"}")
	case *Heartbeat:
		out = append(out, "'state': "+pyrepr.String(d.State), "'current_cpu_usage': "+pyrepr.Float(d.CPUUsage),
			"'current_memory_usage': "+itoa(d.MemoryUsage))
	case *MasterHeartbeat:
		out = append(out, ", None, ")
	case *Spawn:
		out = append(out, "'timestamp': "+pyrepr.Float(d.Timestamp))
		if d.Host != nil {
			out = append(out, "'host': "+pyrepr.String(*d.Host))
		}
		if len(d.UserClassesCount) == 0 {
			t.Errorf("spawn without user classes")
		}
		classes(d.UserClassesCount)
		out = append(out, pyEntries(d.ParsedOptions)...)
		if d.ParsedOptions["my_custom_arg"] != "hello" {
			t.Errorf("spawn parsed_options lost my_custom_arg: %v", d.ParsedOptions)
		}
	case *SpawningComplete:
		classes(d.UserClassesCount)
		out = append(out, "'user_count': "+itoa(d.UserCount))
	case *MasterSpawningComplete:
		out = append(out, "{'user_count': "+itoa(d.UserCount)+"}")
	case *StatsReport:
		entry := func(e *StatsEntry) {
			method := "None"
			if e.Method != nil {
				method = pyrepr.String(*e.Method)
			}
			out = append(out, "{'name': "+pyrepr.String(e.Name)+", 'method': "+method+
				", 'last_request_timestamp': "+pyOptFloat(e.LastRequestTimestamp)+
				", 'start_time': "+pyrepr.Float(e.StartTime)+
				", 'num_requests': "+itoa(e.NumRequests)+
				", 'num_none_requests': "+itoa(e.NumNoneRequests)+
				", 'num_failures': "+itoa(e.NumFailures)+", ",
				"'min_response_time': "+pyOptFloat(e.MinResponseTime)+
					", 'total_content_length': "+itoa(e.TotalContentLength)+", ")
			for _, p := range e.NumReqsPerSec {
				out = append(out, itoa(p.Key)+": "+itoa(p.N))
			}
			if e.NumRequests > 0 && len(e.ResponseTimes) == 0 {
				t.Errorf("stats entry %q has requests but no response_times", e.Name)
			}
		}
		for i := range d.Stats {
			entry(&d.Stats[i])
		}
		entry(&d.Total)
		for k, e := range d.Errors {
			out = append(out, pyrepr.String(k)+": {'name': "+pyrepr.String(e.Name)+", 'method': "+pyrepr.String(e.Method)+
				", 'error': "+pyrepr.String(e.Error)+", 'occurrences': "+itoa(e.Occurrences))
			if e.FirstSeen != nil {
				out = append(out, "'first_seen': "+pyrepr.Float(*e.FirstSeen))
			}
		}
		classes(d.UserClassesCount)
		out = append(out, "'user_count': "+itoa(d.UserCount)+"}")
	case *Exception:
		out = append(out, "{'msg': "+pyrepr.String(d.Msg)+", 'traceback': "+pyrepr.String(d.Traceback)+"}")
	case *Logs:
		out = append(out, "'worker_id': "+pyrepr.String(d.WorkerID))
		for _, l := range d.Logs {
			out = append(out, pyrepr.String(l))
		}
	case *Locustfile:
		out = append(out, pyEntries(d.Data)...)
	case *Custom:
		out = append(out, pyEntries(d.Data)...)
		if m.Type == "hello_from_worker" {
			data := d.Data.(map[any]any)
			if data[int64(7)] != "intkey" {
				t.Errorf("hello_from_worker: int key 7 lost: %#v", data)
			}
			if w, ok := data["when"]; ok {
				if want := time.Date(2024, 1, 2, 3, 4, 5, 678901000, time.UTC); w != want {
					t.Errorf("hello_from_worker when = %#v; want %v", w, want)
				}
			}
		}
	default:
		t.Errorf("no spot checks for %T", d)
	}
	return out
}

// TestPyCompareDetectsDifferences guards the oracle: pycompare.py must flag
// the differences that matter to Locust.
func TestPyCompareDetectsDifferences(t *testing.T) {
	const node = "a6" + "6e6f64655f31" // str "node_1"
	pairs := []pyPair{
		// str vs bin type name: Python sees 'quit' vs b'quit'.
		{ID: "bin-type", A: "93a471756974c0" + node, B: "93c40471756974c0" + node},
		// int key 140 vs str key "140".
		{ID: "str-key", A: "93a17881cc8c01" + node, B: "93a17881a331343001" + node},
		// nil vs 0.
		{ID: "nil-zero", A: "93a178c0" + node, B: "93a17800" + node},
		// true vs 1.
		{ID: "bool-int", A: "93a178c3" + node, B: "93a17801" + node},
		// Equal: int 2 vs float 2.0, float key 140.0 vs int key 140.
		{ID: "equal-num", A: "93a17802" + node, B: "93a178cb4000000000000000" + node},
		{ID: "equal-key", A: "93a17881cb406180000000000001" + node, B: "93a17881cc8c01" + node},
	}
	got := map[string]bool{}
	for _, m := range comparePython(t, pairs) {
		got[m.ID] = true
	}
	for _, id := range []string{"bin-type", "str-key", "nil-zero", "bool-int"} {
		if !got[id] {
			t.Errorf("pycompare.py missed difference %q", id)
		}
	}
	for _, id := range []string{"equal-num", "equal-key"} {
		if got[id] {
			t.Errorf("pycompare.py flagged equal pair %q", id)
		}
	}
}
