package web

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// TestDroppedIterationsByName: /stats/requests lists the per-name drops
// beside the total, keys in order, and nothing in closed-model runs.
func TestDroppedIterationsByName(t *testing.T) {
	st := &Status{State: protocol.StateRunning, UserCount: 3}
	rec := stats.NewRecorder(nil)
	rec.AddDroppedFor("GET", "/b", 2)
	rec.AddDroppedFor("TASK", "a \"quoted\" <name>", 5)
	s := stats.New(nil)
	closed := s.Snapshot()
	s.Merge(rec.Report(nil, 1))
	for _, tc := range []struct {
		name string
		snap *stats.Snapshot
		want []any
	}{
		{"rate", s.Snapshot(), []any{
			map[string]any{"dropped": 2.0, "method": "GET", "name": "/b"},
			map[string]any{"dropped": 5.0, "method": "TASK", "name": "a \"quoted\" <name>"},
		}},
		{"closed model", closed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w jsonWriter
			appendRequestsJSON(&w, st, tc.snap)
			var body map[string]any
			if err := json.Unmarshal(w.buf, &body); err != nil {
				t.Fatalf("JSON: %v\n%s", err, w.buf)
			}
			got, has := body["dropped_iterations_by_name"]
			if tc.want == nil {
				if has {
					t.Errorf("closed model: dropped_iterations_by_name = %v", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("dropped_iterations_by_name = %v; want %v", got, tc.want)
			}
			// Sorted keys, as every route's.
			i, j, k := bytes.Index(w.buf, []byte(`"dropped_iterations"`)), bytes.Index(w.buf, []byte(`"dropped_iterations_by_name"`)), bytes.Index(w.buf, []byte(`"errors"`))
			if i < 0 || i >= j || j >= k {
				t.Errorf("keys out of order: %d %d %d", i, j, k)
			}
		})
	}
}
