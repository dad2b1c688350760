package master

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
)

// A worker that registers while it still runs users of a master that is
// gone is stopped, and its requests stay out of the new master's totals;
// once stopped it comes back ready and gets a test of ours.
func TestOrphanWorkerIsStoppedAndNotCounted(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w := h.worker("orphan_1")
	w.ready(skipCheck) // a cicada worker re-registers after a reconnect
	w.heartbeat(protocol.StateRunning)
	w.expect(protocol.TypeStop)
	w.send(protocol.TypeStats, report(7, 1, map[string]int64{"A": 2}))
	w.send(protocol.TypeException, &protocol.Exception{Msg: "orphan", Traceback: "tb"})
	w.heartbeat(protocol.StateRunning) // stop is sent once
	w.send(protocol.TypeClientStopped, nil)
	eventually(t, waitShort, "client_stopped handled", func() bool { return len(h.m.Status().Workers) == 0 })
	if snap := h.m.Snapshot(); snap.Total.NumRequests != 0 || len(snap.Exceptions) != 0 {
		t.Errorf("Snapshot() has %d requests and %d exceptions after an orphan's report and exception; want 0 and 0",
			snap.Total.NumRequests, len(snap.Exceptions))
	}
	for _, m := range w.drain() {
		if m.Type == protocol.TypeStop {
			t.Errorf("a second stop was sent to the orphan")
		}
	}
	w.ready(skipCheck)
	w.heartbeat(protocol.StateReady)
	if err := h.m.Start(2, 100, nil); err != nil {
		t.Fatal(err)
	}
	w.expect(protocol.TypeSpawn)
	w.send(protocol.TypeStats, report(3, 0, map[string]int64{"A": 2}))
	eventually(t, waitShort, "our report merged", func() bool { return h.m.Snapshot().Total.NumRequests == 3 })
}

// A worker of ours stops its users, sends client_stopped, and only its next
// periodic report carries the requests those users finished while
// stopping: the master has deleted its node by then, and must still merge
// them (issue 20's soak lost them: the target served more than it counted).
func TestReportAfterClientStoppedIsCounted(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w := h.worker("w_1")
	w.ready(skipCheck)
	if err := h.m.Start(1, 100, nil); err != nil {
		t.Fatal(err)
	}
	w.expect(protocol.TypeSpawn)
	w.send(protocol.TypeStats, report(5, 0, map[string]int64{"A": 1}))
	eventually(t, waitShort, "the running report merged", func() bool { return h.m.Snapshot().Total.NumRequests == 5 })
	stopped := make(chan error, 1)
	go func() { stopped <- h.m.Stop(context.Background()) }()
	w.expect(protocol.TypeStop)
	w.send(protocol.TypeClientStopped, nil)
	eventually(t, waitShort, "client_stopped handled", func() bool { return len(h.m.Status().Workers) == 0 })
	w.send(protocol.TypeStats, report(4, 1, map[string]int64{}))
	w.send(protocol.TypeException, &protocol.Exception{Msg: "late", Traceback: "tb"})
	eventually(t, waitShort, "the report after client_stopped merged", func() bool {
		snap := h.m.Snapshot()
		return snap.Total.NumRequests == 10 && snap.Total.NumFailures == 1 && len(snap.Exceptions) == 1
	})
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// A headless master whose only worker reports running users of another
// master's test stops it and starts its own test, instead of waiting for a
// ready worker forever.
func TestHeadlessStartsAfterStoppingOrphan(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	o.Headless = true
	o.Users = 2
	o.SpawnRate = 100
	h := startMaster(t, o, logs)
	w := h.worker("orphan_1")
	w.ready(skipCheck)
	w.heartbeat(protocol.StateRunning)
	w.expect(protocol.TypeStop)
	w.send(protocol.TypeClientStopped, nil)
	w.ready(skipCheck)
	w.heartbeat(protocol.StateReady)
	if got := w.expect(protocol.TypeSpawn).Data.(*protocol.Spawn).UserClassesCount["A"]; got != 2 {
		t.Errorf("spawn gives %d users; want 2", got)
	}
}

// A real cicada worker runs users for a master that dies (a raw ROUTER that
// never says quit); a cicada master restarted on the same port must stop
// those users and run its own headless test to the end.
func TestRestartedMasterStopsOrphanedGoWorker(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		_, _ = fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)

	dead, err := zmtp.Listen("tcp://127.0.0.1:0", zmtp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	port := dead.Addr().(*net.TCPAddr).Port
	logs := &logBuf{}
	_, done := startGoWorker(t, port, goScenario(10*time.Millisecond), logs)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	send := func(id, typ string, data any) {
		b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: id})
		if err != nil {
			t.Fatal(err)
		}
		if err := dead.Send(id, b); err != nil {
			t.Fatal(err)
		}
	}
	for spawned := false; !spawned; {
		id, frames, err := dead.Recv(ctx)
		if err != nil {
			t.Fatalf("first master: %v", err)
		}
		msg, err := protocol.Decode(frames[0])
		if err != nil || msg.Type != protocol.TypeClientReady {
			continue
		}
		send(id, protocol.TypeAck, &protocol.Ack{Index: 0})
		host, zero := srv.URL, 0.0
		send(id, protocol.TypeSpawn, &protocol.Spawn{Timestamp: float64(time.Now().UnixNano()) / 1e9,
			UserClassesCount: map[string]int64{"WebUser": 1, "ApiUser": 1}, Host: &host, StopTimeout: &zero, ParsedOptions: map[string]any{}})
		spawned = true
	}
	eventually(t, waitLong, "the orphaned users load the target", func() bool { return served.Load() > 5 })
	_ = dead.Close() // the first master crashes: no quit

	o := testOptions(logs)
	o.BindPort = port
	o.Headless = true
	o.ExpectWorkers = 1
	o.ExpectWorkersMaxWait = waitLong
	o.Users = 2
	o.SpawnRate = 100
	o.RunTime = time.Second
	o.Host = srv.URL
	o.UserClasses = webAPIClasses
	o.FinalReportTimeout, o.FinalReportGrace = 0, 0
	// The headless master looks for ready workers at once and then every
	// WaitLogInterval: 3 s lets the reconnected worker's heartbeat (every
	// second) say "running" first, as it does with Locust's 1 s interval.
	// (Had the master started first, its spawn would replace the orphans.)
	o.WaitLogInterval = 3 * time.Second
	var m *Master
	eventually(t, waitShort, "the port to be free again", func() bool {
		m, err = New(o)
		return err == nil
	})
	res, err := m.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if code := res.ExitCode(); code != 0 {
		t.Errorf("restarted master's Run = %d; want 0; logs:\n%s", code, logs)
	}
	if !logs.has("Sending stop to worker") || !logs.has("All users spawned") {
		t.Errorf("the orphaned worker was not stopped and re-spawned; logs:\n%s", logs)
	}
	snap := m.Snapshot()
	if snap.Total.NumRequests == 0 || snap.Total.NumRequests > served.Load() {
		t.Errorf("restarted master counted %d requests; want between 1 and the %d served", snap.Total.NumRequests, served.Load())
	}
	waitWorkerExit(t, done)
}

// A worker of ours that still runs users after the test has stopped is sent
// stop again (it missed the stop, or was adopted back after a partition).
func TestWorkerRunningAfterStopIsStopped(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w := h.worker("w_1")
	w.ready(skipCheck)
	if err := h.m.Start(1, 100, nil); err != nil {
		t.Fatal(err)
	}
	w.expect(protocol.TypeSpawn)
	stopped := make(chan error, 1)
	go func() { stopped <- h.m.Stop(context.Background()) }()
	w.expect(protocol.TypeStop)
	w.heartbeat(protocol.StateReady)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	eventually(t, waitShort, "stopped", func() bool { return h.m.Status().State == protocol.StateStopped })
	w.heartbeat(protocol.StateRunning)
	w.expect(protocol.TypeStop)
}
