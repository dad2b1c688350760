package master

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// TestQuitStopsFirstWithStopTimeout: with a stop timeout, a quit while a
// test runs sends stop first (so in-flight tasks get the stop timeout) and
// quit only once the worker has stopped; the requests of the worker's
// final report, sent after its client_stopped, are counted. A second quit
// request while the stop is under way quits at once.
func TestQuitStopsFirstWithStopTimeout(t *testing.T) {
	tests := []struct {
		name       string
		secondQuit bool
	}{
		{"stop then quit", false},
		{"second quit request", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logBuf{}
			o := testOptions(logs)
			o.UserClasses = []UserClass{{Name: "A"}}
			o.StopTimeout = 5 * time.Second
			h := startMaster(t, o, logs)
			w := h.worker("vm_1")
			w.ready(ready(""))
			if err := h.m.Start(2, 100, nil); err != nil {
				t.Fatal(err)
			}
			sp := w.expect(protocol.TypeSpawn).Data.(*protocol.Spawn)
			w.send(protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: sp.UserClassesCount, UserCount: 2})
			eventually(t, waitShort, "running", func() bool { return h.m.Status().State == protocol.StateRunning })

			h.m.Quit()
			w.expect(protocol.TypeStop)
			if tt.secondQuit {
				h.cancel() // the Run context: the second quit request
				w.expect(protocol.TypeQuit)
				if _, err := h.wait(); err != nil {
					t.Fatal(err)
				}
				return
			}
			// Nothing but stop until the worker has stopped.
			for _, m := range w.drain() {
				if m.Type == protocol.TypeQuit {
					t.Fatalf("quit sent before the worker stopped")
				}
			}
			w.send(protocol.TypeStats, report(5, 0, map[string]int64{"A": 0}))
			w.send(protocol.TypeClientStopped, nil)
			w.expect(protocol.TypeQuit)
			w.send(protocol.TypeStats, report(3, 0, map[string]int64{"A": 0})) // the final report
			w.send(protocol.TypeQuit, nil)
			if _, err := h.wait(); err != nil {
				t.Fatal(err)
			}
			if n := h.m.Snapshot().Total.NumRequests; n != 8 {
				t.Errorf("counted %d requests; want the 5 before client_stopped and the 3 of the final report", n)
			}
			if !logs.has("Worker 'vm_1' (index 0) quit.") {
				t.Errorf("the stopped worker's quit is not logged:\n%s", logs)
			}
		})
	}
}
