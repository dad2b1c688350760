package web

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// TestDroppedIterations: the arrival-rate drops appear in /metrics and
// /stats/requests once there are any, and not at all in closed-model runs.
func TestDroppedIterations(t *testing.T) {
	st := &Status{State: protocol.StateRunning, Distributed: true, UserCount: 3, Workers: []WorkerInfo{
		{ID: "a_1", State: protocol.StateRunning, UserCount: 2, Connections: -1, MemoryUsage: -1, Dropped: 5},
		{ID: "py_1", State: protocol.StateRunning, UserCount: 1, Connections: -1, MemoryUsage: -1},
	}}
	closed := &Status{State: protocol.StateRunning, Distributed: true, Workers: []WorkerInfo{{ID: "a_1", Connections: -1}}}
	s := stats.New(nil)
	empty := s.Snapshot()
	s.Merge(&protocol.StatsReport{Dropped: 5, UserCount: -1})
	snap := s.Snapshot()

	tests := []struct {
		name     string
		st       *Status
		snap     *stats.Snapshot
		want     []string
		wantJSON float64 // top-level dropped_iterations, 0: absent
	}{
		{"rate", st, snap, []string{
			"cicada_dropped_iterations_total 5\n",
			`cicada_worker_dropped_iterations_total{worker="a_1"} 5` + "\n",
			`cicada_worker_dropped_iterations_total{worker="py_1"} 0` + "\n",
		}, 5},
		{"closed model", closed, empty, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := promWriter{}
			appendMetrics(&p, tt.st, tt.snap)
			text := string(p.b)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("metrics lack %q", w)
				}
			}
			if tt.want == nil && strings.Contains(text, "dropped") {
				t.Errorf("closed-model metrics mention drops")
			}
			if path, err := exec.LookPath("promtool"); err == nil {
				cmd := exec.Command(path, "check", "metrics")
				cmd.Stdin = strings.NewReader(text)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("promtool check metrics: %v\n%s", err, out)
				}
			}
			var w jsonWriter
			appendRequestsJSON(&w, tt.st, tt.snap)
			var body map[string]any
			if err := json.Unmarshal(w.buf, &body); err != nil {
				t.Fatalf("JSON: %v\n%s", err, w.buf)
			}
			got, has := body["dropped_iterations"].(float64)
			if has != (tt.wantJSON != 0) || got != tt.wantJSON {
				t.Errorf("dropped_iterations = %v (present %v), want %v", got, has, tt.wantJSON)
			}
			if tt.wantJSON != 0 {
				wk := body["workers"].([]any)
				if wk[0].(map[string]any)["dropped_iterations"] != 5.0 || wk[1].(map[string]any)["dropped_iterations"] != nil {
					t.Errorf("workers = %v, want dropped_iterations 5 on a_1 only", wk)
				}
			}
		})
	}
}
