package master

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

func TestFormatClasses(t *testing.T) {
	tests := []struct {
		in   map[string]int64
		want string
	}{
		{map[string]int64{"WebUser": 3, "ApiUser": 1}, `{"ApiUser": 1, "WebUser": 3} (4 total users)`},
		{map[string]int64{}, `{} (0 total users)`},
	}
	for _, tt := range tests {
		if got := formatClasses(tt.in); got != tt.want {
			t.Errorf("formatClasses(%v) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

func TestEchoHeartbeats(t *testing.T) {
	tests := []struct {
		in   *protocol.ClientReady
		want bool
	}{
		{skipCheck, true},
		{ready(""), false},
		{ready("2.12.1"), false},
		{ready("2.18.4"), false},
		{ready("2.19.0"), true},
		{ready("2.46.4.dev0"), true},
		{ready("3.0"), true},
		{ready("weird"), true},
		{ready("1.4.3"), false},
	}
	for _, tt := range tests {
		if got := echoHeartbeats(tt.in); got != tt.want {
			t.Errorf("echoHeartbeats(%+v) = %v; want %v", *tt.in, got, tt.want)
		}
	}
}

func TestOptionsErrors(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string // in the error text, if set
	}{
		{"negative users", Options{Users: -1}, ""},
		{"bad rate", Options{SpawnRate: -1}, ""},
		// Locust bails out too ("It makes no sense to combine --run-time
		// and LoadShapes"); cicada says what to do instead.
		{"shape with run time", Options{Stages: []Stage{{Duration: time.Second, Users: 1}}, RunTime: time.Second}, "end the last stage at that time"},
		{"stages not increasing", Options{Stages: []Stage{{Duration: time.Second, Users: 1}, {Duration: time.Second, Users: 2}}}, ""},
		{"bad class", Options{UserClasses: []UserClass{{Name: "A"}, {Name: "A"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.BindHost, tt.o.BindPort = "127.0.0.1", -1
			_, err := New(tt.o)
			if !errors.Is(err, ErrOptions) {
				t.Errorf("New(%s) error = %v; want ErrOptions", tt.name, err)
			}
			if err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%s) error = %q; want it to contain %q", tt.name, err, tt.want)
			}
		})
	}
}

func TestBindBusy(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	m1, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close()
	o.BindPort = m1.Addr().(*net.TCPAddr).Port
	if _, err := New(o); !errors.Is(err, ErrBind) {
		t.Fatalf("New on a busy port: %v; want ErrBind", err)
	}
	if !logs.has("is busy") {
		t.Errorf("no log for the busy port:\n%s", logs)
	}
}

func TestRegistrationVersions(t *testing.T) {
	logs := &logBuf{}
	h := startMaster(t, testOptions(logs), logs)
	versions := []struct {
		id   string
		data *protocol.ClientReady
		echo bool
		want string
	}{
		{"debian_1", ready(""), false, ""},
		{"cicada_1", skipCheck, true, "-1"},
		{"locust_1", ready("2.12.1"), false, "2.12.1"},
		{"head_1", ready("2.46.3"), true, "2.46.3"},
		{"old_1", ready("1.0"), false, "1.0"},
	}
	ws := map[string]*fakeWorker{}
	seen := map[int64]bool{}
	for _, v := range versions {
		w := h.worker(v.id)
		ws[v.id] = w
		idx := w.ready(v.data)
		if seen[idx] {
			t.Errorf("index %d given twice", idx)
		}
		seen[idx] = true
		// Re-registration keeps the index.
		if again := w.ready(v.data); again != idx {
			t.Errorf("%s: index %d after re-registration; want %d", v.id, again, idx)
		}
	}
	for _, v := range versions {
		ws[v.id].heartbeat(protocol.StateReady)
	}
	eventually(t, waitShort, "5 workers", func() bool { return len(h.m.Status().Workers) == 5 })
	for _, wi := range h.m.Status().Workers {
		for _, v := range versions {
			if v.id == wi.ID && wi.Version != v.want {
				t.Errorf("worker %s version %q; want %q", wi.ID, wi.Version, v.want)
			}
		}
	}
	// Echo: a second heartbeat round trip makes it visible.
	for _, v := range versions {
		if v.echo {
			ws[v.id].expect(protocol.TypeHeartbeat)
		}
	}
	for _, v := range versions {
		if !v.echo {
			for _, m := range ws[v.id].drain() {
				if m.Type == protocol.TypeHeartbeat {
					t.Errorf("worker %s (version %q) got a heartbeat echo", v.id, v.want)
				}
			}
		}
	}
	if !logs.has("sent an empty version") {
		t.Error("no warning for the empty version")
	}
	if !logs.has("running a different version (1.0)") {
		t.Error("no warning for version 1.0")
	}
}

func TestMalformedMessagesAreLogged(t *testing.T) {
	logs := &logBuf{}
	h := startMaster(t, testOptions(logs), logs)
	w := h.worker("bad_1")
	// hand-made msgpack: ["client_ready", 5, "bad_1"], which kills Locust's receive loop
	w.sendRaw([]byte{0x93, 0xac, 'c', 'l', 'i', 'e', 'n', 't', '_', 'r', 'e', 'a', 'd', 'y', 0x05, 0xa5, 'b', 'a', 'd', '_', '1'})
	w.sendRaw([]byte{0x93, 0xac, 'c', 'l', 'i', 'e', 'n', 't', '_'})  // truncated
	w.sendRaw([]byte{})                                               // empty payload
	w.sendRaw([]byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x02})         // map envelope
	w.sendRaw([]byte("GET / HTTP/1.1\r\n\r\n"))                       // garbage
	w.send(protocol.TypeSpawning, nil)                                // unknown worker: 2.12.1 dies
	w.send(protocol.TypeSpawningComplete, &protocol.SpawningComplete{ // unknown worker: both die
		UserClassesCount: map[string]int64{"A": 1}, UserCount: 1})
	w.send(protocol.TypeClientStopped, nil)
	w.send("my_custom", &protocol.Custom{Data: map[string]any{"x": int64(1)}})
	w.send(protocol.TypeClientReady, &protocol.Custom{Data: nil})
	// The master is still alive and registers the worker.
	if idx := w.ready(ready("2.12.1")); idx < 0 {
		t.Fatalf("index %d", idx)
	}
	eventually(t, waitShort, "errors logged", func() bool { return logs.count("Malformed message from worker bad_1") >= 4 })
	if !logs.has("Unknown message type received from worker bad_1") {
		t.Error("custom message type not logged")
	}
}

func TestLivenessMissingHealDelete(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.HeartbeatInterval = 20 * time.Millisecond
	o.DeadTicks = 25
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	a := h.worker("host_a")
	b := h.worker("host_b")
	a.ready(skipCheck)
	b.ready(skipCheck)
	stopA := a.beatEvery(10*time.Millisecond, func() string { return protocol.StateRunning })
	defer stopA()
	if err := h.m.Start(4, 100, nil); err != nil {
		t.Fatal(err)
	}
	sa := a.expect(protocol.TypeSpawn).Data.(*protocol.Spawn)
	if got := sa.UserClassesCount["A"]; got != 2 {
		t.Fatalf("worker a got %d users; want 2", got)
	}
	b.expect(protocol.TypeSpawn)
	state := func(id string) string {
		for _, w := range h.m.Status().Workers {
			if w.ID == id {
				return w.State
			}
		}
		return "deleted"
	}
	// b never heartbeats: missing after liveness ticks.
	eventually(t, waitShort, "b missing", func() bool { return state("host_b") == protocol.StateMissing })
	if !logs.has("Worker host_b failed to send heartbeat, setting state to missing.") {
		t.Error("missing not logged")
	}
	// A heartbeat heals it, and it gets users again.
	b.heartbeat(protocol.StateRunning)
	eventually(t, waitShort, "b healed", func() bool { return state("host_b") == protocol.StateRunning })
	if !logs.has("Worker host_b self-healed with heartbeat, setting state to running.") {
		t.Error("heal not logged")
	}
	if got := b.expect(protocol.TypeSpawn).Data.(*protocol.Spawn).UserClassesCount["A"]; got != 2 {
		t.Errorf("healed worker got %d users; want 2", got)
	}
	// Silent again: missing, then deleted, and all users go to a.
	eventually(t, waitShort, "b missing again", func() bool { return state("host_b") == protocol.StateMissing })
	eventually(t, waitShort, "b deleted", func() bool { return state("host_b") == "deleted" })
	for {
		s := a.expect(protocol.TypeSpawn).Data.(*protocol.Spawn)
		if s.UserClassesCount["A"] == 4 {
			break
		}
	}
}

func TestDispatchSpawnMessages(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "WebUser", Weight: 3}, {Name: "ApiUser", Weight: 1}}
	o.Host = "http://127.0.0.1:1"
	o.StopTimeout = 2 * time.Second
	o.ParsedOptions = map[string]any{"my_custom_arg": "x"}
	h := startMaster(t, o, logs)
	w := h.worker("vm_1")
	w.ready(ready(""))
	begin := time.Now()
	if err := h.m.Start(4, 2, nil); err != nil {
		t.Fatal(err)
	}
	s1 := w.expect(protocol.TypeSpawn)
	s2 := w.expect(protocol.TypeSpawn)
	gap := time.Since(begin)
	p1, p2 := s1.Data.(*protocol.Spawn), s2.Data.(*protocol.Spawn)
	if want := map[string]int64{"ApiUser": 1, "WebUser": 1}; !reflect.DeepEqual(p1.UserClassesCount, want) {
		t.Errorf("step 1 = %v; want %v", p1.UserClassesCount, want)
	}
	if want := map[string]int64{"ApiUser": 1, "WebUser": 3}; !reflect.DeepEqual(p2.UserClassesCount, want) {
		t.Errorf("step 2 = %v; want %v", p2.UserClassesCount, want)
	}
	if gap < 900*time.Millisecond {
		t.Errorf("second step after %v; want about 1 s", gap)
	}
	if !(p2.Timestamp > p1.Timestamp) {
		t.Errorf("timestamps %v then %v", p1.Timestamp, p2.Timestamp)
	}
	if p1.Host == nil || *p1.Host != o.Host || p1.StopTimeout == nil || *p1.StopTimeout != 2 || p1.ParsedOptions["my_custom_arg"] != "x" {
		t.Errorf("spawn fields: host %v stop_timeout %v parsed_options %v", p1.Host, p1.StopTimeout, p1.ParsedOptions)
	}
	if s1.NodeID != "vm_1" {
		t.Errorf("node_id %q", s1.NodeID)
	}
	// The worker reports: the master becomes running.
	w.send(protocol.TypeSpawning, nil)
	w.send(protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: p2.UserClassesCount, UserCount: 4})
	eventually(t, waitShort, "running", func() bool { return h.m.Status().State == protocol.StateRunning })
	eventually(t, waitShort, "log", func() bool {
		return logs.has(`All users spawned: {"ApiUser": 1, "WebUser": 3} (4 total users)`)
	})
	if !logs.has("Sending spawn jobs of 4 users at 2.00 spawn rate to 1 ready workers") {
		t.Error("missing 'Sending spawn jobs' log")
	}
	// Same-second steps still get increasing timestamps; a new host is sent.
	host := "http://example"
	if err := h.m.Start(2, 100, &host); err != nil {
		t.Fatal(err)
	}
	p3 := w.expect(protocol.TypeSpawn).Data.(*protocol.Spawn)
	if !(p3.Timestamp > p2.Timestamp) || *p3.Host != host {
		t.Errorf("edit: timestamp %v host %v", p3.Timestamp, *p3.Host)
	}
	if want := map[string]int64{"ApiUser": 1, "WebUser": 1}; !reflect.DeepEqual(p3.UserClassesCount, want) {
		t.Errorf("ramp down LIFO = %v; want %v", p3.UserClassesCount, want)
	}
}

func TestRedispatchOnJoinAndQuit(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	a := h.worker("a_1")
	a.ready(skipCheck)
	if err := h.m.Start(6, 100, nil); err != nil {
		t.Fatal(err)
	}
	a.expect(protocol.TypeSpawn)
	a.send(protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: map[string]int64{"A": 6}, UserCount: 6})
	eventually(t, waitShort, "running", func() bool { return h.m.Status().State == protocol.StateRunning })
	// Like Locust ≥ 2.29, the master tells cicada workers the ramp is over.
	if sc, ok := a.expect(protocol.TypeSpawningComplete).Data.(*protocol.MasterSpawningComplete); !ok || sc.UserCount != 6 {
		t.Errorf("master spawning_complete = %+v", sc)
	}
	b := h.worker("b_1")
	b.ready(skipCheck)
	if got := b.expect(protocol.TypeSpawn).Data.(*protocol.Spawn).UserClassesCount["A"]; got != 3 {
		t.Errorf("joining worker got %d; want 3", got)
	}
	if got := a.expect(protocol.TypeSpawn).Data.(*protocol.Spawn).UserClassesCount["A"]; got != 3 {
		t.Errorf("first worker got %d; want 3", got)
	}
	b.send(protocol.TypeQuit, nil)
	if got := a.expect(protocol.TypeSpawn).Data.(*protocol.Spawn).UserClassesCount["A"]; got != 6 {
		t.Errorf("after quit, remaining worker got %d; want 6", got)
	}
	eventually(t, waitShort, "quit log", func() bool { return logs.has("Worker 'b_1' (index 1) quit. ") })
	a.send(protocol.TypeQuit, nil)
	eventually(t, waitShort, "last worker log", func() bool { return logs.has("The last worker quit, stopping test.") })
}

func TestStopSequence(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w := h.worker("w_1")
	w.ready(ready("2.12.1"))
	if err := h.m.Start(2, 100, nil); err != nil {
		t.Fatal(err)
	}
	w.expect(protocol.TypeSpawn)
	w.send(protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: map[string]int64{"A": 2}, UserCount: 2})
	eventually(t, waitShort, "running", func() bool { return h.m.Status().State == protocol.StateRunning })

	stopped := make(chan error, 1)
	go func() { stopped <- h.m.Stop(context.Background()) }()
	w.expect(protocol.TypeStop)
	// Still running during its stop timeout: heartbeats must not adopt it.
	w.send(protocol.TypeClientStopped, nil)
	w.heartbeat(protocol.StateRunning)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitShort):
		t.Fatal("Stop did not return")
	}
	if n := len(h.m.Status().Workers); n != 0 {
		t.Errorf("%d workers after client_stopped; want 0", n)
	}
	// The users per class of the moment the stop began stay for the
	// report's final ratios (Locust's final_user_classes_count).
	if s := h.m.Status(); s.FinalUserClassesCount["A"] != 2 || s.UserClassesCount["A"] != 0 {
		t.Errorf("after stop: final %v, current %v; want final A=2, current 0", s.FinalUserClassesCount, s.UserClassesCount)
	}
	w.ready(ready("2.12.1"))
	eventually(t, waitShort, "stopped", func() bool {
		s := h.m.Status()
		return s.State == protocol.StateStopped && len(s.Workers) == 1 && s.Workers[0].State == protocol.StateReady
	})
	// A new test clears the statistics.
	w.send(protocol.TypeStats, report(5, 0, map[string]int64{"A": 0}))
	eventually(t, waitShort, "stats", func() bool { return h.m.Snapshot().Total.NumRequests == 5 })
	if err := h.m.Start(1, 1, nil); err != nil {
		t.Fatal(err)
	}
	w.expect(protocol.TypeSpawn)
	if n := h.m.Snapshot().Total.NumRequests; n != 0 {
		t.Errorf("%d requests after a new start; want 0", n)
	}
}

// finalWorker answers spawn and quits like a Python worker: on quit it
// sends a last stats report (after delay) and then quit.
func finalWorker(t *testing.T, h *harness, id string, final *protocol.StatsReport, delay time.Duration, sendQuit bool) *fakeWorker {
	w := h.worker(id)
	w.ready(ready(""))
	var state atomic.Value
	state.Store(protocol.StateReady)
	stop := w.beatEvery(20*time.Millisecond, func() string { return state.Load().(string) })
	t.Cleanup(stop)
	go func() {
		for {
			select {
			case m := <-w.msgs:
				switch m.Type {
				case protocol.TypeSpawn:
					s := m.Data.(*protocol.Spawn)
					w.send(protocol.TypeSpawning, nil)
					w.send(protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: s.UserClassesCount, UserCount: -1})
					state.Store(protocol.StateRunning)
				case protocol.TypeQuit:
					stop()
					if final == nil {
						return
					}
					time.Sleep(delay) // the worker stopping its users
					w.send(protocol.TypeStats, final)
					if sendQuit {
						w.send(protocol.TypeQuit, nil)
					}
					return
				}
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func TestHeadlessFinalReportWait(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.Headless = true
	o.ExpectWorkers = 3
	o.Users = 3
	o.SpawnRate = 100
	o.RunTime = 300 * time.Millisecond
	o.UserClasses = []UserClass{{Name: "A"}}
	o.FinalReportTimeout = 2 * time.Second
	var out syncBuf
	o.Stderr = &out
	h := startMaster(t, o, logs)
	// Final reports arrive late (after Locust's 0.5 s), one without quit,
	// one never.
	finalWorker(t, h, "late_1", report(100, 0, map[string]int64{"A": 0}), 800*time.Millisecond, true)
	finalWorker(t, h, "noquit_1", report(10, 0, map[string]int64{"A": 0}), 100*time.Millisecond, false)
	finalWorker(t, h, "silent_1", nil, 0, false)
	code, err := h.wait()
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Errorf("exit code %d; want 0", code)
	}
	if n := h.m.Snapshot().Total.NumRequests; n != 110 {
		t.Errorf("%d requests counted; want 110", n)
	}
	for _, want := range []string{
		"Waiting for workers to be ready, ",
		"Run time limit set to 0.3 seconds",
		"--run-time limit reached, shutting down",
		"Worker silent_1 (index 2) sent no final stats report",
		"Shutting down (exit code 0)",
	} {
		if !logs.has(want) {
			t.Errorf("log %q missing; logs:\n%s", want, logs)
		}
	}
	if logs.has("Worker late_1") && logs.has("late_1 (index 0) sent no final") {
		t.Error("late_1 reported as missing its final report")
	}
	text := out.String()
	if !strings.Contains(text, "Response time percentiles (approximated)") || !strings.Contains(text, "Aggregated") {
		t.Errorf("summary missing from stderr:\n%s", text)
	}
}

func TestExitCodes(t *testing.T) {
	three := 3
	tests := []struct {
		name     string
		failures int
		onError  *int
		want     int
	}{
		{"clean", 0, nil, 0},
		{"failures", 2, nil, 1},
		{"failures with exit-code-on-error 3", 2, &three, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logBuf{}
			o := testOptions(logs)
			o.Headless = true
			o.RunTime = 100 * time.Millisecond
			o.UserClasses = []UserClass{{Name: "A"}}
			o.ExitCodeOnError = tt.onError
			h := startMaster(t, o, logs)
			finalWorker(t, h, "w_1", report(5, tt.failures, map[string]int64{"A": 0}), 0, true)
			code, err := h.wait()
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Errorf("exit code %d; want %d", code, tt.want)
			}
		})
	}
}

func TestExpectWorkersMaxWait(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.Headless = true
	o.ExpectWorkers = 2
	o.ExpectWorkersMaxWait = 300 * time.Millisecond
	var out syncBuf
	o.Stderr = &out
	h := startMaster(t, o, logs)
	w := h.worker("w_1")
	w.ready(skipCheck)
	code, err := h.wait()
	if err != nil || code != 1 {
		t.Fatalf("Run = %d, %v; want 1", code, err)
	}
	if !logs.has("Gave up waiting for workers to connect") || !logs.has("Waiting for workers to be ready, 1 of 2 connected") {
		t.Errorf("logs:\n%s", logs)
	}
	if logs.has("Shutting down") || strings.Contains(out.String(), "percentiles") {
		t.Error("a give-up printed the summary")
	}
	w.expect(protocol.TypeQuit)
}

func TestAdoptUnknownHeartbeat(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w := h.worker("zombie_1")
	w.heartbeat(protocol.StateReady) // never sent client_ready: the master restarted
	w.expect(protocol.TypeHeartbeat)
	eventually(t, waitShort, "adopted", func() bool {
		s := h.m.Status()
		return len(s.Workers) == 1 && s.Workers[0].Adopted && s.Workers[0].State == protocol.StateReady
	})
	if err := h.m.Start(2, 100, nil); err != nil {
		t.Fatal(err)
	}
	if got := w.expect(protocol.TypeSpawn).Data.(*protocol.Spawn).UserClassesCount["A"]; got != 2 {
		t.Errorf("adopted worker got %d users; want 2", got)
	}
	// A worker running users of an old test while none runs is stopped.
	r := h.worker("zombie_2")
	r.heartbeat(protocol.StateRunning)
	eventually(t, waitShort, "second adopted", func() bool { return len(h.m.Status().Workers) == 2 })
	// The test runs: it is dispatched to instead.
	r.expect(protocol.TypeSpawn)
}

func TestAdoptedRunningWorkerIsStopped(t *testing.T) {
	logs := &logBuf{}
	h := startMaster(t, testOptions(logs), logs)
	w := h.worker("zombie_1")
	w.heartbeat(protocol.StateRunning)
	w.expect(protocol.TypeStop)
}

func TestLearnClassesFromReport(t *testing.T) {
	logs := &logBuf{}
	h := startMaster(t, testOptions(logs), logs)
	w := h.worker("py_1")
	w.ready(ready(""))
	if err := h.m.Start(1, 1, nil); !errors.Is(err, ErrNoUserClasses) {
		t.Errorf("Start before classes are known: %v; want ErrNoUserClasses", err)
	}
	w.send(protocol.TypeStats, report(0, 0, map[string]int64{"WebUser": 0, "ApiUser": 0}))
	eventually(t, waitShort, "classes", func() bool { return len(h.m.Status().Classes) == 2 })
	if err := h.m.Start(2, 100, nil); err != nil {
		t.Fatal(err)
	}
	if got := w.expect(protocol.TypeSpawn).Data.(*protocol.Spawn).UserClassesCount; !reflect.DeepEqual(got, map[string]int64{"ApiUser": 1, "WebUser": 1}) {
		t.Errorf("spawn %v", got)
	}
}

func TestShapeStages(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.Headless = true
	o.UserClasses = []UserClass{{Name: "A"}}
	o.Stages = []Stage{{Duration: 300 * time.Millisecond, Users: 2, SpawnRate: 100}, {Duration: 600 * time.Millisecond, Users: 1, SpawnRate: 100}}
	h := startMaster(t, o, logs)
	if !h.m.Status().Shape {
		t.Error("Status().Shape = false with stages")
	}
	w := finalWorker(t, h, "w_1", report(1, 0, map[string]int64{"A": 1}), 0, true)
	_ = w
	code, err := h.wait()
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	for _, want := range []string{
		"Shape test updating to 2 users at 100.00 spawn rate",
		"Shape test updating to 1 users at 100.00 spawn rate",
		"Shape test stopping",
		"--run-time limit reached, shutting down",
	} {
		if !logs.has(want) {
			t.Errorf("log %q missing; logs:\n%s", want, logs)
		}
	}
}

func TestCSVFiles(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.Headless = true
	o.RunTime = 400 * time.Millisecond
	o.UserClasses = []UserClass{{Name: "A"}}
	prefix := filepath.Join(t.TempDir(), "sub", "run")
	o.CSVPrefix = prefix
	o.CSVFullHistory = true
	h := startMaster(t, o, logs)
	finalWorker(t, h, "w_1", report(7, 1, map[string]int64{"A": 0}), 0, true)
	if code, err := h.wait(); err != nil || code != 1 {
		t.Fatalf("Run = %d, %v; want 1", code, err)
	}
	read := func(suffix string) []string {
		b, err := os.ReadFile(prefix + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(string(b), "\r\n") {
			t.Errorf("%s does not end with CRLF", suffix)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\r\n"), "\r\n")
	}
	st := read("_stats.csv")
	if st[0] != strings.Join(stats.StatsCSVHeader, ",") || len(st) != 3 || !strings.HasPrefix(st[2], ",Aggregated,8,1,") {
		t.Errorf("_stats.csv:\n%s", strings.Join(st, "\n"))
	}
	fl := read("_failures.csv")
	if len(fl) != 2 || !strings.Contains(fl[1], ",1") {
		t.Errorf("_failures.csv:\n%s", strings.Join(fl, "\n"))
	}
	if ex := read("_exceptions.csv"); len(ex) != 1 {
		t.Errorf("_exceptions.csv:\n%s", strings.Join(ex, "\n"))
	}
	hist := read("_stats_history.csv")
	last := hist[len(hist)-1]
	if len(hist) < 3 || !strings.Contains(last, ",Aggregated,") || !strings.Contains(last, ",8,1,") {
		t.Errorf("_stats_history.csv (last row must hold the final totals):\n%s", strings.Join(hist, "\n"))
	}
}

func TestControlAfterRun(t *testing.T) {
	logs := &logBuf{}
	h := startMaster(t, testOptions(logs), logs)
	h.m.Quit()
	if code, err := h.wait(); err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if err := h.m.Start(1, 1, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Run: %v", err)
	}
	if err := h.m.Stop(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Stop after Run: %v", err)
	}
	if s := h.m.Status(); s.State != protocol.StateReady {
		t.Errorf("Status after Run: %+v", s)
	}
	if _, err := h.m.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("second Run: %v", err)
	}
}

func TestLocustfileRequestAnswered(t *testing.T) {
	logs := &logBuf{}
	h := startMaster(t, testOptions(logs), logs)
	w := h.worker("vm_download_locustfile_1")
	w.send(protocol.TypeLocustfile, &protocol.Locustfile{Data: map[string]any{"version": "2.46.3"}})
	lf, ok := w.expect(protocol.TypeLocustfile).Data.(*protocol.Locustfile)
	if !ok || lf.Data["error"] == nil {
		t.Errorf("locustfile answer = %+v", lf)
	}
}

// TestLocustfileServed: a master with a scenario file serves it to a
// worker started with -f -, read at each request so that a changed file
// reaches a worker that asks later; a file it cannot read is an error reply.
func TestLocustfileServed(t *testing.T) {
	logs := &logBuf{}
	path := filepath.Join(t.TempDir(), "shop.yaml")
	if err := os.WriteFile(path, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(logs)
	opts.ScenarioFile = path
	h := startMaster(t, opts, logs)
	ask := func(id string) map[string]any {
		w := h.worker(id)
		w.send(protocol.TypeLocustfile, &protocol.Locustfile{Data: map[string]any{"version": "2.46.3"}})
		lf, ok := w.expect(protocol.TypeLocustfile).Data.(*protocol.Locustfile)
		if !ok {
			t.Fatalf("no locustfile answer")
		}
		return lf.Data
	}
	for _, tc := range []struct{ id, contents string }{{"vm_download_locustfile_1", "v1"}, {"vm_download_locustfile_2", "v2 changed"}} {
		if err := os.WriteFile(path, []byte(tc.contents), 0o644); err != nil {
			t.Fatal(err)
		}
		got := ask(tc.id)
		files, _ := got["locustfiles"].([]any)
		if len(files) != 1 {
			t.Fatalf("answer %v, want one file", got)
		}
		f, _ := files[0].(map[string]any)
		if f["filename"] != "shop.yaml" || f["contents"] != tc.contents {
			t.Errorf("served %v, want shop.yaml with %q", f, tc.contents)
		}
	}
	if len(h.m.Status().Workers) != 0 {
		t.Errorf("a locustfile request registered a worker: %+v", h.m.Status().Workers)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := ask("vm_download_locustfile_3"); got["error"] == nil {
		t.Errorf("missing file: answer %v, want an error", got)
	}
}

func TestCPUWarningOnce(t *testing.T) {
	logs := &logBuf{}
	h := startMaster(t, testOptions(logs), logs)
	w := h.worker("hot_1")
	w.ready(skipCheck)
	for range 3 {
		w.send(protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateReady, CPUUsage: 95, MemoryUsage: -1})
	}
	eventually(t, waitShort, "cpu recorded", func() bool {
		s := h.m.Status()
		return len(s.Workers) == 1 && s.Workers[0].CPUUsage == 95
	})
	w.send(protocol.TypeClientReady, skipCheck) // a round trip: all three heartbeats handled
	w.expect(protocol.TypeAck)
	if n := logs.count("Worker hot_1 (index 0) exceeded cpu threshold (will only log this once per worker)"); n != 1 {
		t.Errorf("cpu warning logged %d times; want 1", n)
	}
}

func TestResetStatsAfterRamp(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	o.ResetStats = true
	h := startMaster(t, o, logs)
	w := h.worker("w_1")
	w.ready(skipCheck)
	if err := h.m.Start(2, 100, nil); err != nil {
		t.Fatal(err)
	}
	w.expect(protocol.TypeSpawn)
	w.send(protocol.TypeStats, report(5, 1, map[string]int64{"A": 0}))
	w.send(protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: map[string]int64{"A": 2}, UserCount: 2})
	eventually(t, waitShort, "spawning complete", func() bool { return logs.has("All users spawned") })
	if !logs.has("Resetting stats") {
		t.Error("no 'Resetting stats' log")
	}
	s := h.m.Snapshot()
	if s.Total.NumRequests != 0 || len(s.Errors) != 0 || len(s.Entries) != 1 {
		t.Errorf("after reset: %d requests, %d errors, %d entries; want 0, 0, 1 (entries kept)", s.Total.NumRequests, len(s.Errors), len(s.Entries))
	}
}
