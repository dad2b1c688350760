package protocol

import (
	"errors"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestStatsReportDroppedByRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		by   []DroppedName
	}{
		{"none", nil},
		{"one", []DroppedName{{"GET", "/a", 3}}},
		{"several", []DroppedName{{"GET", "/a", 1}, {"TASK", "checkout", 1 << 40}, {"", "ünïcode, \"quoted\"", 7}}},
	} {
		var sum int64
		for _, d := range tc.by {
			sum += d.Count
		}
		m := Message{Type: TypeStats, NodeID: "w", Data: &StatsReport{UserCount: 3, Dropped: sum, DroppedBy: tc.by}}
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		var raw []any
		if err := msgpack.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		if _, has := raw[1].(map[string]any)[KeyCicadaDroppedBy]; has != (len(tc.by) > 0) {
			t.Errorf("%s: key %s present = %v (sent only when not empty)", tc.name, KeyCicadaDroppedBy, has)
		}
		for _, dec := range []func([]byte) (Message, error){Decode, DecodePooled} {
			got, err := dec(b)
			if err != nil {
				t.Fatal(err)
			}
			r := got.Data.(*StatsReport)
			if !reflect.DeepEqual(r.DroppedBy, tc.by) || r.Dropped != sum {
				t.Errorf("%s: decoded %+v (dropped %d); want %+v (%d)", tc.name, r.DroppedBy, r.Dropped, tc.by, sum)
			}
			r.Release()
		}
	}
}

func TestStatsReportDroppedByRefused(t *testing.T) {
	b, err := Encode(Message{Type: TypeStats, NodeID: "w", Data: &StatsReport{UserCount: -1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		v        any
		outRange bool
	}{
		{"not an array", "many", false},
		{"an element not an array", []any{"GET /a"}, false},
		{"two fields", []any{[]any{"GET", "/a"}}, false},
		{"four fields", []any{[]any{"GET", "/a", 1, 2}}, false},
		{"name not a string", []any{[]any{"GET", 5, 1}}, false},
		{"count not an integer", []any{[]any{"GET", "/a", "1"}}, false},
		{"count zero", []any{[]any{"GET", "/a", 0}}, true},
		{"count negative", []any{[]any{"GET", "/a", -4}}, true},
		{"invalid UTF-8", []any{[]any{"GET", "\xff", 1}}, false},
	} {
		var raw []any
		if err := msgpack.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		raw[1].(map[string]any)[KeyCicadaDroppedBy] = tc.v
		enc, err := msgpack.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, dec := range []func([]byte) (Message, error){Decode, DecodePooled} {
			_, err := dec(enc)
			if !errors.Is(err, ErrMalformed) || tc.outRange != errors.Is(err, ErrOutOfRange) {
				t.Errorf("%s: error %v; want ErrMalformed (out of range: %v)", tc.name, err, tc.outRange)
			}
		}
	}
}

// FuzzDecodeDroppedBy decodes stats reports whose cicada_dropped_by holds
// fuzzed bytes: an error or counts that are all positive, never a panic.
func FuzzDecodeDroppedBy(f *testing.F) {
	ok, err := Encode(Message{Type: TypeStats, NodeID: "w", Data: &StatsReport{UserCount: 1, Dropped: 3,
		DroppedBy: []DroppedName{{"GET", "/a", 2}, {"TASK", "t", 1}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ok)
	f.Add(ok[:len(ok)-3])
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, dec := range []func([]byte) (Message, error){Decode, DecodePooled} {
			m, err := dec(payload)
			if err != nil {
				continue
			}
			r, isReport := m.Data.(*StatsReport)
			if !isReport {
				continue
			}
			if len(r.DroppedBy) > MaxReportEntries {
				t.Fatalf("%d dropped names", len(r.DroppedBy))
			}
			for _, d := range r.DroppedBy {
				if d.Count <= 0 {
					t.Fatalf("count %d decoded", d.Count)
				}
			}
			r.Release()
		}
	})
}
