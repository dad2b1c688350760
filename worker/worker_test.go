package worker

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

func noopTask(context.Context, *User) error { return nil }

// twoClasses is a scenario with classes A and B whose users record nothing
// and wait long.
func twoClasses() Scenario {
	return Scenario{Classes: []UserClass{
		{Name: "A", Wait: Constant(time.Hour), Tasks: []Task{{Name: "a", Fn: noopTask}}},
		{Name: "B", Wait: Constant(time.Hour), Tasks: []Task{{Name: "b", Fn: noopTask}}},
	}}
}

func TestHandshake(t *testing.T) {
	t.Parallel()
	m := newFakeMaster(t, 0)
	rw := startWorker(t, fastOptions(t, m.port), twoClasses())

	first := m.await(protocol.TypeClientReady, 1, 10*time.Second)
	cr, ok := first.msg.Data.(*protocol.ClientReady)
	if !ok || !cr.VersionSkipCheck {
		t.Fatalf("client_ready data = %#v; want the int -1 (VersionSkipCheck)", first.msg.Data)
	}
	if !strings.Contains(first.id, "_") || len(first.id) < 34 {
		t.Fatalf("node id %q; want <hostname>_<32 hex>", first.id)
	}
	// Without an ack, client_ready comes again after ConnectInterval, and
	// nothing gated is sent.
	second := m.await(protocol.TypeClientReady, 2, 10*time.Second)
	if gap := second.at.Sub(first.at); gap < 150*time.Millisecond {
		t.Fatalf("client_ready resent after %v; want about ConnectInterval (200ms)", gap)
	}
	if n := m.count(protocol.TypeHeartbeat) + m.count(protocol.TypeStats); n != 0 {
		t.Fatalf("%d heartbeat/stats messages before the ack", n)
	}

	m.send(rw.w.NodeID(), protocol.TypeAck, &protocol.Ack{Index: 3})
	waitFor(t, 10*time.Second, "registration", rw.w.Registered)
	if got := rw.w.Index(); got != 3 {
		t.Fatalf("Index() = %d; want 3", got)
	}
	// The first stats report goes out at once, heartbeats every interval.
	st := m.await(protocol.TypeStats, 1, 10*time.Second)
	rep := st.msg.Data.(*protocol.StatsReport)
	if rep.Total.Name != "Aggregated" || rep.UserClassesCount["A"] != 0 {
		t.Fatalf("first stats = %+v", rep)
	}
	hb := m.await(protocol.TypeHeartbeat, 3, 10*time.Second)
	h := hb.msg.Data.(*protocol.Heartbeat)
	if h.State != protocol.StateReady || h.MemoryUsage <= 0 || h.CPUUsage < 0 {
		t.Fatalf("heartbeat = %+v; want state ready, memory > 0", h)
	}
}

func TestSpawnAbsoluteCountsAndStates(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 0)
	id := rw.w.NodeID()

	steps := []struct {
		a, b int64
	}{{3, 1}, {5, 1}, {1, 2}, {0, 0}, {2, 2}}
	for i, s := range steps {
		m.send(id, protocol.TypeSpawn, spawnMsg(float64(100+i), map[string]int64{"A": s.a, "B": s.b}, f64(0)))
		m.await(protocol.TypeSpawning, i+1, 10*time.Second)
		sc := m.await(protocol.TypeSpawningComplete, i+1, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
		if sc.UserClassesCount["A"] != s.a || sc.UserClassesCount["B"] != s.b || sc.UserCount != s.a+s.b {
			t.Fatalf("step %d: spawning_complete = %+v; want A=%d B=%d", i, sc, s.a, s.b)
		}
	}
	if got := rw.w.State(); got != protocol.StateRunning {
		t.Fatalf("State() = %q; want running", got)
	}
	// Heartbeats only ever carry Locust's three states.
	n := m.count(protocol.TypeHeartbeat)
	m.await(protocol.TypeHeartbeat, n+2, 10*time.Second)
	sawRunning := false
	for _, g := range m.all(protocol.TypeHeartbeat) {
		st := g.msg.Data.(*protocol.Heartbeat).State
		switch st {
		case protocol.StateReady, protocol.StateSpawning:
		case protocol.StateRunning:
			sawRunning = true
		default:
			t.Fatalf("heartbeat state %q", st)
		}
	}
	if !sawRunning {
		t.Fatal("no heartbeat said running")
	}
}

func TestSpawnTimestampDiscard(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 0)
	id := rw.w.NodeID()

	m.send(id, protocol.TypeSpawn, spawnMsg(1000.25, map[string]int64{"A": 2, "B": 0}, nil))
	m.await(protocol.TypeSpawningComplete, 1, 10*time.Second)
	// equal and older timestamps: "spawning" is still sent, nothing changes
	m.send(id, protocol.TypeSpawn, spawnMsg(1000.25, map[string]int64{"A": 5, "B": 0}, nil))
	m.send(id, protocol.TypeSpawn, spawnMsg(999, map[string]int64{"A": 7, "B": 0}, nil))
	m.await(protocol.TypeSpawning, 3, 10*time.Second)
	// a newer timestamp within the same second (boomer would drop it)
	m.send(id, protocol.TypeSpawn, spawnMsg(1000.75, map[string]int64{"A": 3, "B": 1}, nil))
	sc := m.await(protocol.TypeSpawningComplete, 2, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
	if sc.UserClassesCount["A"] != 3 || sc.UserClassesCount["B"] != 1 {
		t.Fatalf("spawning_complete = %+v; want A=3 B=1", sc)
	}
	if n := m.count(protocol.TypeSpawningComplete); n != 2 {
		t.Fatalf("%d spawning_complete; want 2 (discarded spawns answer only spawning)", n)
	}
}

func TestStopSequence(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 7)
	id := rw.w.NodeID()

	m.send(id, protocol.TypeSpawn, spawnMsg(1, map[string]int64{"A": 2, "B": 2}, f64(0.3)))
	m.await(protocol.TypeSpawningComplete, 1, 10*time.Second)
	m.send(id, protocol.TypeStop, nil)
	stopped := m.await(protocol.TypeClientStopped, 1, 10*time.Second)
	if _, total := rw.w.UserCount(); total != 0 {
		t.Fatalf("users after stop = %d", total)
	}
	hbBefore := m.count(protocol.TypeHeartbeat)
	ready := m.await(protocol.TypeClientReady, 2, 10*time.Second)
	if gap := ready.at.Sub(stopped.at); gap < 250*time.Millisecond {
		t.Fatalf("client_ready %v after client_stopped; want ≥ stop_timeout (300ms)", gap)
	}
	// Unregistered between client_stopped and the ack: no heartbeats.
	if n := m.count(protocol.TypeHeartbeat); n != hbBefore {
		t.Fatalf("%d heartbeats sent while unregistered", n-hbBefore)
	}
	m.send(id, protocol.TypeAck, &protocol.Ack{Index: 7})
	waitFor(t, 10*time.Second, "re-registration", rw.w.Registered)
	hb := m.await(protocol.TypeHeartbeat, hbBefore+1, 10*time.Second)
	if st := hb.msg.Data.(*protocol.Heartbeat).State; st != protocol.StateReady {
		t.Fatalf("heartbeat after stop = %q; want ready", st)
	}
	// A new test can start again.
	m.send(id, protocol.TypeSpawn, spawnMsg(2, map[string]int64{"A": 1, "B": 0}, nil))
	sc := m.await(protocol.TypeSpawningComplete, 2, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
	if sc.UserCount != 1 {
		t.Fatalf("spawning_complete after restart = %+v", sc)
	}
}

// TestQuitSendsFinalStats checks that every request recorded before quit is
// in a stats report, and that the final report precedes quit.
func TestQuitSendsFinalStats(t *testing.T) {
	t.Parallel()
	m := newFakeMaster(t, 0)
	var recorded atomic.Int64
	sc := Scenario{Classes: []UserClass{{Name: "R", Wait: Constant(2 * time.Millisecond), Tasks: []Task{{Name: "r", Fn: func(ctx context.Context, u *User) error {
		// an "in-flight request" that takes a little while
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		u.Record("GET", "/x", 5*time.Millisecond, 10, nil)
		recorded.Add(1)
		return nil
	}}}}}}
	rw := startWorker(t, fastOptions(t, m.port), sc)
	register(t, m, rw, 1, 0)
	id := rw.w.NodeID()
	m.send(id, protocol.TypeSpawn, spawnMsg(1, map[string]int64{"R": 20}, nil))
	m.await(protocol.TypeSpawningComplete, 1, 10*time.Second)
	waitFor(t, 10*time.Second, "requests", func() bool { return recorded.Load() > 200 })
	m.send(id, protocol.TypeQuit, nil)
	if err := rw.result(t, 10*time.Second); err != nil {
		t.Fatalf("Run after quit = %v; want nil", err)
	}
	quit := m.await(protocol.TypeQuit, 1, 10*time.Second)
	var sum int64
	var last got
	for _, g := range m.all(protocol.TypeStats) {
		sum += g.msg.Data.(*protocol.StatsReport).Total.NumRequests
		last = g
	}
	if sum != recorded.Load() {
		t.Fatalf("requests in stats reports = %d; recorded %d", sum, recorded.Load())
	}
	if last.at.After(quit.at) {
		t.Fatal("final stats arrived after quit")
	}
	if rep := last.msg.Data.(*protocol.StatsReport); rep.UserCount != 0 {
		t.Fatalf("final report user_count = %d; want 0", rep.UserCount)
	}
}

func TestFirstSpawnClearsStats(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 0)
	m.await(protocol.TypeStats, 1, 10*time.Second)
	rw.w.rec.Record("GET", "/before-test", time.Millisecond, 1, "")
	m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(1, map[string]int64{"A": 1, "B": 0}, nil))
	m.await(protocol.TypeSpawningComplete, 1, 10*time.Second)
	m.send(rw.w.NodeID(), protocol.TypeQuit, nil)
	rw.result(t, 10*time.Second)
	m.await(protocol.TypeQuit, 1, 10*time.Second) // follows the final report
	final := m.all(protocol.TypeStats)
	if rep := final[len(final)-1].msg.Data.(*protocol.StatsReport); rep.Total.NumRequests != 0 {
		t.Fatalf("final report has %d requests; the first spawn should have cleared them", rep.Total.NumRequests)
	}
}

func TestUnknownClass(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 0)
	m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(1, map[string]int64{"A": 1, "B": 0, "Nope": 4}, nil))
	exc := m.await(protocol.TypeException, 1, 10*time.Second).msg.Data.(*protocol.Exception)
	if !strings.Contains(exc.Msg, `"Nope"`) || exc.Traceback == "" {
		t.Fatalf("exception = %+v; want it to name class Nope", exc)
	}
	sc := m.await(protocol.TypeSpawningComplete, 1, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
	if sc.UserCount != 1 || sc.UserClassesCount["A"] != 1 {
		t.Fatalf("spawning_complete = %+v; want the actual counts A=1", sc)
	}
	// The next step of the ramp does not repeat the exception.
	m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(2, map[string]int64{"A": 2, "B": 0, "Nope": 6}, nil))
	m.await(protocol.TypeSpawningComplete, 2, 10*time.Second)
	if n := m.count(protocol.TypeException); n != 1 {
		t.Fatalf("%d exceptions for the same unknown class; want 1", n)
	}
}

func TestSingleClassServesAnyName(t *testing.T) {
	t.Parallel()
	m := newFakeMaster(t, 0)
	sc := Scenario{Classes: []UserClass{{Name: "Mine", Wait: Constant(time.Hour), Tasks: []Task{{Name: "t", Fn: noopTask}}}}}
	rw := startWorker(t, fastOptions(t, m.port), sc)
	register(t, m, rw, 1, 0)
	m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(1, map[string]int64{"TheirName": 3}, nil))
	got := m.await(protocol.TypeSpawningComplete, 1, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
	if got.UserClassesCount["TheirName"] != 3 || got.UserCount != 3 {
		t.Fatalf("spawning_complete = %+v; want TheirName=3", got)
	}
	if n := m.count(protocol.TypeException); n != 0 {
		t.Fatalf("%d exceptions", n)
	}
}

func TestMalformedMessages(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 0)
	id := rw.w.NodeID()
	bad := [][]byte{
		{},                      // empty payload
		{0xc1},                  // never-used msgpack byte
		[]byte("garbage"),       // not msgpack
		{0x92, 0xa1, 'x', 0xc0}, // array of 2
		{0x93, 0xa5, 's', 'p', 'a', 'w', 'n', 0xc0, 0xa1, 'x'}, // spawn with nil data
	}
	for _, b := range bad {
		m.sendRaw(id, b)
	}
	m.send(id, "no_such_type", &protocol.Custom{Data: map[string]any{"k": 1}})
	m.send(id, protocol.TypeSpawn, &protocol.Custom{Data: map[string]any{"timestamp": 1.0}}) // missing keys
	// Still alive and serving:
	m.send(id, protocol.TypeSpawn, spawnMsg(5, map[string]int64{"A": 2, "B": 0}, nil))
	sc := m.await(protocol.TypeSpawningComplete, 1, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
	if sc.UserCount != 2 {
		t.Fatalf("spawning_complete after bad messages = %+v", sc)
	}
}

func TestReconnectMessage(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 0)
	waitFor(t, 10*time.Second, "first connection", func() bool { return m.connections() == 1 })
	m.send(rw.w.NodeID(), protocol.TypeReconnect, nil)
	waitFor(t, 10*time.Second, "reconnection", func() bool { return m.connections() == 2 })
	n := m.count(protocol.TypeHeartbeat)
	m.await(protocol.TypeHeartbeat, n+3, 10*time.Second)
	// Like a Python worker, it does not register again after "reconnect".
	if c := m.count(protocol.TypeClientReady); c != 1 {
		t.Fatalf("%d client_ready after a reconnect message; want 1", c)
	}
}

// TestMasterRestartReregisters kills the master's socket and binds a new one
// on the same port: the worker must register with the new master.
func TestMasterRestartReregisters(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 0)
	id := rw.w.NodeID()
	m.send(id, protocol.TypeSpawn, spawnMsg(1, map[string]int64{"A": 2, "B": 0}, nil))
	m.await(protocol.TypeSpawningComplete, 1, 10*time.Second)

	port := m.port
	m.close()
	waitFor(t, 10*time.Second, "worker to notice", func() bool { return !rw.w.Registered() })
	var m2 *fakeMaster
	waitFor(t, 10*time.Second, "port reuse", func() bool {
		r, err := newFakeMasterTry(t, port)
		m2 = r
		return err == nil
	})
	// The new master gets client_ready and nothing gated before its ack.
	register(t, m2, rw, 1, 0)
	if n := m2.count(protocol.TypeSpawningComplete) + m2.count(protocol.TypeSpawning); n != 0 {
		t.Fatalf("%d spawning messages reached the new master before registration", n)
	}
	m2.await(protocol.TypeHeartbeat, 2, 10*time.Second)
	// The new master can run a test; its timestamps are newer.
	m2.send(id, protocol.TypeSpawn, spawnMsg(2, map[string]int64{"A": 1, "B": 1}, nil))
	sc := m2.await(protocol.TypeSpawningComplete, 1, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
	if sc.UserCount != 2 {
		t.Fatalf("spawning_complete from the new master = %+v", sc)
	}
}

func TestMasterHeartbeatTimeout(t *testing.T) {
	t.Parallel()
	m := newFakeMaster(t, 0)
	opts := fastOptions(t, m.port)
	opts.MasterHeartbeatTimeout = 300 * time.Millisecond
	rw := startWorker(t, opts, twoClasses())
	register(t, m, rw, 1, 0)
	// Without master heartbeats (a 2.12.1 master) nothing happens.
	n := m.count(protocol.TypeHeartbeat)
	m.await(protocol.TypeHeartbeat, n+10, 10*time.Second)
	select {
	case err := <-rw.res:
		t.Fatalf("Run returned %v without any master heartbeat", err)
	default:
	}
	m.send(rw.w.NodeID(), protocol.TypeHeartbeat, nil)
	if err := rw.result(t, 10*time.Second); !errors.Is(err, ErrMasterTimeout) {
		t.Fatalf("Run = %v; want ErrMasterTimeout", err)
	}
	m.await(protocol.TypeQuit, 1, 10*time.Second)
}

func TestNoAck(t *testing.T) {
	t.Parallel()
	m := newFakeMaster(t, 0)
	opts := fastOptions(t, m.port)
	opts.ConnectTimeout = 500 * time.Millisecond
	rw := startWorker(t, opts, twoClasses())
	if err := rw.result(t, 10*time.Second); !errors.Is(err, ErrNoAck) {
		t.Fatalf("Run = %v; want ErrNoAck", err)
	}
}

func TestAbruptCancelSendsNoQuit(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 0)
	m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(1, map[string]int64{"A": 3, "B": 0}, nil))
	m.await(protocol.TypeSpawningComplete, 1, 10*time.Second)
	rw.cancel()
	if err := rw.result(t, 10*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v; want context.Canceled", err)
	}
	if n := m.count(protocol.TypeQuit); n != 0 {
		t.Fatalf("%d quit messages after an abrupt stop", n)
	}
}

func TestWorkerInitiatedQuit(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 0)
	rw.w.Quit()
	if err := rw.result(t, 10*time.Second); err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	m.await(protocol.TypeQuit, 1, 10*time.Second)
}

func TestCustomMessages(t *testing.T) {
	t.Parallel()
	m := newFakeMaster(t, 0)
	w, err := New(fastOptions(t, m.port), twoClasses())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RegisterMessage(protocol.TypeSpawn, func(*Worker, protocol.Message) {}); !errors.Is(err, ErrBuiltinType) {
		t.Fatalf("RegisterMessage(spawn) = %v; want ErrBuiltinType", err)
	}
	gotData := make(chan any, 1)
	if err := w.RegisterMessage("hello", func(w *Worker, msg protocol.Message) {
		gotData <- msg.Data.(*protocol.Custom).Data
		if err := w.SendMessage("hello_back", map[string]any{"n": int64(7)}); err != nil {
			t.Errorf("SendMessage: %v", err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	// a handler that panics must not kill the worker
	_ = w.RegisterMessage("boom", func(*Worker, protocol.Message) { panic("handler bug") })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()
	defer func() { cancel(); <-res }()
	rw := &runningWorker{w: w}
	register(t, m, rw, 1, 0)
	m.send(w.NodeID(), "boom", nil)
	m.send(w.NodeID(), "hello", &protocol.Custom{Data: "hi"})
	select {
	case d := <-gotData:
		if d != "hi" {
			t.Fatalf("handler got %#v; want \"hi\"", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("custom handler not called")
	}
	back := m.await("hello_back", 1, 10*time.Second)
	mp, ok := back.msg.Data.(*protocol.Custom).Data.(map[string]any)
	if !ok || mp["n"] == nil {
		t.Fatalf("hello_back data = %#v", back.msg.Data)
	}
}

// TestRunLeavesNoGoroutines runs a worker through a test and a quit and
// checks that every goroutine it started has ended. Not parallel: it counts
// the process's goroutines.
func TestRunLeavesNoGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	func() {
		m := newFakeMaster(t, 0)
		defer m.close()
		sc := Scenario{Classes: []UserClass{{Name: "A", Wait: Constant(time.Millisecond), Tasks: []Task{{Name: "a", Fn: noopTask}},
			OnStop: func(context.Context, *User) error { return nil }}}}
		rw := startWorker(t, fastOptions(t, m.port), sc)
		register(t, m, rw, 1, 0)
		m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(1, map[string]int64{"A": 50}, f64(0.1)))
		m.await(protocol.TypeSpawningComplete, 1, 10*time.Second)
		m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(2, map[string]int64{"A": 10}, f64(0.1)))
		m.await(protocol.TypeSpawningComplete, 2, 10*time.Second)
		m.send(rw.w.NodeID(), protocol.TypeQuit, nil)
		if err := rw.result(t, 10*time.Second); err != nil {
			t.Fatalf("Run = %v", err)
		}
	}()
	waitFor(t, 10*time.Second, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}
