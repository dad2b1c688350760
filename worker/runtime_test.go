package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/worker/httpc"
)

func httpcRequest(path string) httpc.Request { return httpc.Request{Path: path} }

// fakeRuntime is a Runtime that records its calls and records one request
// per spawn into the worker's recorder.
type fakeRuntime struct {
	startErr error
	spawnErr error
	block    bool // Spawn waits for its context

	mu      sync.Mutex
	env     RuntimeEnv
	spawns  []RuntimeSpawn
	stops   []time.Duration
	closed  int
	users   map[string]int64
	ctxErrs []error
}

func (f *fakeRuntime) Start(env RuntimeEnv) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.env = env
	return f.startErr
}

func (f *fakeRuntime) Spawn(ctx context.Context, s RuntimeSpawn) error {
	f.mu.Lock()
	f.spawns = append(f.spawns, s)
	block := f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		f.mu.Lock()
		f.ctxErrs = append(f.ctxErrs, ctx.Err())
		f.block = false
		f.mu.Unlock()
		return ctx.Err()
	}
	if f.spawnErr != nil {
		return f.spawnErr
	}
	f.mu.Lock()
	f.users = map[string]int64{}
	for _, c := range s.Classes {
		f.users[c.Name] = c.Users
	}
	f.mu.Unlock()
	f.env.Recorder.Record("GET", "/rt", time.Millisecond, 10, "")
	return nil
}

func (f *fakeRuntime) Stop(grace time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, grace)
	f.users = nil
}

func (f *fakeRuntime) Users() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]int64, len(f.users))
	for k, v := range f.users {
		m[k] = v
	}
	return m
}

func (f *fakeRuntime) Connections() *protocol.ConnCounters {
	return &protocol.ConnCounters{Open: 7, Established: 6, Connects: 9, Closes: map[string]int64{"error": 2}}
}

func (f *fakeRuntime) SecondRound(context.Context) (SecondRoundResult, error) {
	return SecondRoundResult{Users: 5, Reused: 4, Failed: 1, Errors: map[string]int64{"connection reset": 1}}, nil
}

func (f *fakeRuntime) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	return nil
}

func (f *fakeRuntime) snapshot() (spawns []RuntimeSpawn, stops []time.Duration, closed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]RuntimeSpawn(nil), f.spawns...), append([]time.Duration(nil), f.stops...), f.closed
}

// dataOnlyClasses are two classes whose tasks are requests only.
func dataOnlyClasses() Scenario {
	req := []Request{{HTTP: httpcRequest("/x")}}
	return Scenario{Classes: []UserClass{
		{Name: "A", Tasks: []Task{{Name: "x", Requests: req}}},
		{Name: "B", Tasks: []Task{{Name: "x", Requests: req}}},
	}}
}

func startRuntimeWorker(t *testing.T, rt *fakeRuntime, mod func(*Options)) (*fakeMaster, *runningWorker) {
	t.Helper()
	m := newFakeMaster(t, 0)
	opts := fastOptions(t, m.port)
	opts.Runtime = rt
	if mod != nil {
		mod(&opts)
	}
	rw := startWorker(t, opts, dataOnlyClasses())
	register(t, m, rw, 1, 0)
	return m, rw
}

func TestRuntimeSpawnStopQuit(t *testing.T) {
	t.Parallel()
	rt := &fakeRuntime{}
	m, rw := startRuntimeWorker(t, rt, func(o *Options) { o.MaxUsers = 10 })
	id := rw.w.NodeID()

	// Clamped to MaxUsers, unknown class left out, resolved to indexes.
	m.send(id, protocol.TypeSpawn, spawnMsg(1, map[string]int64{"B": 12, "A": 8, "Nope": 3}, f64(0.5)))
	sc := m.await(protocol.TypeSpawningComplete, 1, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
	if sc.UserCount != 10 || sc.UserClassesCount["A"]+sc.UserClassesCount["B"] != 10 {
		t.Fatalf("spawning_complete = %+v; want 10 users", sc)
	}
	spawns, _, _ := rt.snapshot()
	want := RuntimeSpawn{Host: "http://127.0.0.1:1", Grace: 500 * time.Millisecond,
		Classes: []RuntimeClass{{Name: "A", Class: 0, Users: 4}, {Name: "B", Class: 1, Users: 6}}}
	if len(spawns) != 1 || spawns[0].Host != want.Host || spawns[0].Grace != want.Grace ||
		len(spawns[0].Classes) != 2 || spawns[0].Classes[0] != want.Classes[0] || spawns[0].Classes[1] != want.Classes[1] {
		t.Fatalf("runtime spawns = %+v; want [%+v]", spawns, want)
	}
	// Heartbeats carry the runtime's connection counters.
	n := m.count(protocol.TypeHeartbeat)
	hb := m.await(protocol.TypeHeartbeat, n+1, 10*time.Second).msg.Data.(*protocol.Heartbeat)
	if hb.Connections == nil || hb.Connections.Open != 7 || hb.Connections.Closes["error"] != 2 {
		t.Fatalf("heartbeat connections = %+v", hb.Connections)
	}
	if counts, total := rw.w.UserCount(); total != 10 || counts["A"] != 4 {
		t.Fatalf("UserCount = %v %d", counts, total)
	}

	m.send(id, protocol.TypeStop, nil)
	m.await(protocol.TypeClientStopped, 1, 10*time.Second)
	if _, stops, _ := rt.snapshot(); len(stops) != 1 || stops[0] != 500*time.Millisecond {
		t.Fatalf("runtime stops = %v; want [500ms]", stops)
	}
	if _, total := rw.w.UserCount(); total != 0 {
		t.Fatalf("users after stop = %d", total)
	}

	// Second round: the runtime's answer goes to the master.
	m.send(id, protocol.TypeCicadaSecondRound, nil)
	res := m.await(protocol.TypeCicadaSecondRoundResult, 1, 10*time.Second).msg.Data.(*protocol.Custom).Data.(map[string]any)
	if toInt(res["users"]) != 5 || toInt(res["reused"]) != 4 || toInt(res["failed"]) != 1 {
		t.Fatalf("second round result = %v", res)
	}

	m.send(id, protocol.TypeQuit, nil)
	m.await(protocol.TypeQuit, 1, 10*time.Second)
	if err := rw.result(t, 10*time.Second); err != nil {
		t.Fatalf("Run = %v", err)
	}
	_, stops, closed := rt.snapshot()
	if len(stops) != 2 || closed != 1 {
		t.Fatalf("stops %v, closed %d; want a stop at quit and one Close", stops, closed)
	}
	// The request the runtime recorded reached the master.
	var reqs int64
	for _, g := range m.all(protocol.TypeStats) {
		for _, e := range g.msg.Data.(*protocol.StatsReport).Stats {
			if e.Name == "/rt" {
				reqs += e.NumRequests
			}
		}
	}
	if reqs != 1 {
		t.Fatalf("master got %d requests of /rt; want 1", reqs)
	}
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int8:
		return int64(x)
	case uint8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		return int64(x)
	case int:
		return int64(x)
	}
	return -1
}

// TestRuntimeSpawnSuperseded: a newer spawn cancels the runtime's Spawn;
// only the newer one is completed.
func TestRuntimeSpawnSuperseded(t *testing.T) {
	t.Parallel()
	rt := &fakeRuntime{block: true}
	m, rw := startRuntimeWorker(t, rt, nil)
	id := rw.w.NodeID()
	m.send(id, protocol.TypeSpawn, spawnMsg(1, map[string]int64{"A": 1000}, nil))
	waitFor(t, 10*time.Second, "the first spawn running", func() bool { s, _, _ := rt.snapshot(); return len(s) == 1 })
	m.send(id, protocol.TypeSpawn, spawnMsg(2, map[string]int64{"A": 2}, nil))
	sc := m.await(protocol.TypeSpawningComplete, 1, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
	if sc.UserCount != 2 {
		t.Fatalf("spawning_complete = %+v; want the newer spawn's 2", sc)
	}
	rt.mu.Lock()
	errs := rt.ctxErrs
	rt.mu.Unlock()
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("superseded spawn saw %v; want context.Canceled", errs)
	}
	if n := m.count(protocol.TypeSpawningComplete); n != 1 {
		t.Fatalf("%d spawning_complete; want 1", n)
	}
}

func TestRuntimeSpawnError(t *testing.T) {
	t.Parallel()
	rt := &fakeRuntime{spawnErr: errors.New("users: host \"http://x\" is not an IPv4 address")}
	m, rw := startRuntimeWorker(t, rt, nil)
	m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(1, map[string]int64{"A": 3}, nil))
	exc := m.await(protocol.TypeException, 1, 10*time.Second).msg.Data.(*protocol.Exception)
	if !strings.Contains(exc.Msg, "not an IPv4 address") {
		t.Fatalf("exception = %q", exc.Msg)
	}
	sc := m.await(protocol.TypeSpawningComplete, 1, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
	if sc.UserCount != 0 {
		t.Fatalf("spawning_complete = %+v; want 0 users", sc)
	}
}

func TestRuntimeStartError(t *testing.T) {
	t.Parallel()
	rt := &fakeRuntime{startErr: errors.New("no link")}
	opts := fastOptions(t, 1)
	opts.Runtime = rt
	w, err := New(opts, dataOnlyClasses())
	if err != nil {
		t.Fatal(err)
	}
	err = w.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no link") {
		t.Fatalf("Run = %v; want the runtime's start error", err)
	}
	if _, _, closed := rt.snapshot(); closed != 1 {
		t.Fatalf("runtime closed %d times; want 1", closed)
	}
}

// TestRequestsOnlyTask: a task given as data runs on the goroutine pool too.
func TestRequestsOnlyTask(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		task Task
		ok   bool
	}{
		{"requests", Task{Name: "r", Requests: []Request{{HTTP: httpcRequest("/")}}}, true},
		{"function", Task{Name: "f", Fn: noopTask}, true},
		{"neither", Task{Name: "none"}, false},
	}
	for _, tt := range tests {
		_, err := New(Options{}, Scenario{Classes: []UserClass{{Name: "U", Tasks: []Task{tt.task}}}})
		if (err == nil) != tt.ok {
			t.Errorf("%s: New = %v; want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && (!errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), `"none"`)) {
			t.Errorf("%s: error %v does not name the task", tt.name, err)
		}
	}
}
