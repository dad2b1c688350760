package master

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

func TestResultExitCode(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want int
	}{
		{"clean", Result{ExitCodeOnError: 1}, 0},
		{"gave up", Result{GaveUp: true, ExitCodeOnError: 3}, 1},
		{"failures", Result{Failures: true, ExitCodeOnError: 1}, 1},
		{"failures with exit-code-on-error 3", Result{Failures: true, ExitCodeOnError: 3}, 3},
		{"failures over internal error", Result{Failures: true, InternalError: true, ExitCodeOnError: 3}, 3},
		{"internal error", Result{InternalError: true, ExitCodeOnError: 1}, 2},
		{"second round failed", Result{SecondRoundFailed: true, ExitCodeOnError: 1}, 1},
		{"second round after failures with exit-code-on-error 0", Result{Failures: true, SecondRoundFailed: true}, 1},
		{"failures with exit-code-on-error 0", Result{Failures: true}, 0},
		{"internal error over second round", Result{InternalError: true, SecondRoundFailed: true, ExitCodeOnError: 1}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.ExitCode(); got != tt.want {
				t.Errorf("%+v.ExitCode() = %d; want %d", tt.r, got, tt.want)
			}
		})
	}
}

// autostartWorker registers a worker that heartbeats as ready.
func autostartWorker(t *testing.T, h *harness, id string) *fakeWorker {
	w := h.worker(id)
	w.ready(ready(""))
	t.Cleanup(w.beatEvery(20*time.Millisecond, func() string { return protocol.StateReady }))
	return w
}

// TestAutostart: an autostarted master waits for ExpectWorkers ready
// workers as a headless one does, starts the test, stops it (without
// quitting) after the run time and quits Autoquit later.
func TestAutostart(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.Autostart = true
	o.Autoquit = 200 * time.Millisecond
	o.ExpectWorkers = 2
	o.Users = 4
	o.SpawnRate = 100
	o.RunTime = 200 * time.Millisecond
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w1 := autostartWorker(t, h, "w_1")
	eventually(t, waitShort, "the wait for a second worker to be logged", func() bool {
		return logs.has("Waiting for workers to be ready, 1 of 2 connected")
	})
	for _, m := range w1.drain() {
		if m.Type == protocol.TypeSpawn {
			t.Fatal("spawn sent before ExpectWorkers workers were ready")
		}
	}
	w2 := autostartWorker(t, h, "w_2")
	for _, w := range []*fakeWorker{w1, w2} {
		if n := w.expect(protocol.TypeSpawn).Data.(*protocol.Spawn).UserClassesCount["A"]; n != 2 {
			t.Errorf("worker %s spawned %d users; want 2", w.id, n)
		}
	}
	for _, w := range []*fakeWorker{w1, w2} {
		w.expect(protocol.TypeStop)
	}
	if !logs.has("--run-time limit reached, stopping test") {
		t.Errorf("no run-time stop logged; logs:\n%s", logs)
	}
	for _, w := range []*fakeWorker{w1, w2} {
		w.expect(protocol.TypeQuit)
		w.send(protocol.TypeQuit, nil)
	}
	code, err := h.wait()
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v; want 0, nil", code, err)
	}
	for _, want := range []string{"Run time limit set to 0.2 seconds", "--autoquit time reached, shutting down", "Shutting down (exit code 0)"} {
		if !logs.has(want) {
			t.Errorf("log %q missing; logs:\n%s", want, logs)
		}
	}
	if logs.has("--run-time limit reached, shutting down") {
		t.Error("an autostarted master quit at the run time as a headless one")
	}
}

// TestAutostartWithoutAutoquit: with a negative Autoquit the master keeps
// running after the run time's stop until Quit.
func TestAutostartWithoutAutoquit(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.Autostart = true
	o.Autoquit = -1
	o.RunTime = 100 * time.Millisecond
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w := autostartWorker(t, h, "w_1")
	w.expect(protocol.TypeSpawn)
	w.expect(protocol.TypeStop)
	eventually(t, waitShort, "the autoquit line", func() bool {
		return logs.has("--autoquit not specified, leaving web ui running indefinitely")
	})
	select {
	case <-h.done:
		t.Fatalf("Run returned after the run time without Autoquit; logs:\n%s", logs)
	default:
	}
	if s := h.m.Status().State; s != protocol.StateStopping && s != protocol.StateStopped {
		t.Errorf("state %q after the run time; want stopping or stopped", s)
	}
	h.m.Quit()
	w.expect(protocol.TypeQuit)
	w.send(protocol.TypeQuit, nil)
	if code, err := h.wait(); err != nil || code != 0 {
		t.Fatalf("Run = %d, %v; want 0, nil", code, err)
	}
}

// TestAutostartGivesUp: the shared wait honours ExpectWorkersMaxWait.
func TestAutostartGivesUp(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.Autostart = true
	o.ExpectWorkersMaxWait = 200 * time.Millisecond
	h := startMaster(t, o, logs)
	if code, err := h.wait(); err != nil || code != 1 {
		t.Fatalf("Run = %d, %v; want 1, nil", code, err)
	}
	if !logs.has("Gave up waiting for workers to connect") {
		t.Errorf("logs:\n%s", logs)
	}
}
