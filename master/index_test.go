package master

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// Every test of the package runs with the index recounted after every
// message and tick: a drift ends the test binary at once, naming it.
func init() {
	testHookLoopEvent = func(m *Master) {
		if err := m.st.checkIndex(); err != nil {
			fmt.Fprintf(os.Stderr, "master: the loop's incremental index drifted from a recount: %v\n", err)
			os.Exit(3)
		}
	}
}

// recount is the loop's figures computed the way they were before the
// index (a scan of every node), to compare with the index.
func recount(st *loopState) (workers, ready int, classes map[string]int64) {
	classes = make(map[string]int64)
	for _, nd := range st.reg.nodes {
		if nd.state == protocol.StateReady {
			ready++
		}
		if !active(nd.state) {
			continue
		}
		workers++
		for c, n := range nd.classes {
			classes[c] += n
		}
	}
	return workers, ready, classes
}

// fireRamp does what the loop does when the dispatch timer has fired.
func fireRamp(m *Master) {
	select {
	case <-m.st.ramp.rampC:
		m.st.ramp.rampC = nil
		m.advanceRamp()
	default:
	}
}

// TestIndexRandomEvents drives the loop with random sequences of
// registrations, heartbeats in every state, spawning reports, stats
// reports, quits, heartbeat ticks, starts, stops and quits of the master,
// and compares the index with a recount after each event.
func TestIndexRandomEvents(t *testing.T) {
	classNames := []string{"A", "B", "C"}
	states := []string{protocol.StateReady, protocol.StateSpawning, protocol.StateRunning, protocol.StateMissing, "stopped", "cleanup"}
	var quits, dones, redispatches, missing int
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		m := loopMaster(t, 0, Options{
			UserClasses:        []UserClass{{Name: "A", Weight: 2}, {Name: "B"}},
			HeartbeatInterval:  time.Duration(r.IntN(4)) * time.Millisecond, // 0: the default, 1 s
			HeartbeatLiveness:  1,
			DeadTicks:          2,
			EnableRebalancing:  seed%2 == 0,
			FinalReportGrace:   time.Duration(r.IntN(2)) * time.Hour,
			FinalReportTimeout: time.Hour,
		})
		st := &m.st
		id := func() string { return fmt.Sprintf("h%d_%d", r.IntN(3), r.IntN(8)) }
		classes := func() map[string]int64 {
			c := make(map[string]int64)
			for _, n := range classNames[:r.IntN(len(classNames)+1)] {
				c[n] = int64(r.IntN(4))
			}
			return c
		}
		for step := 0; step < 400; step++ {
			var what string
			switch k := r.IntN(100); {
			case k < 15:
				what = "client_ready"
				m.handle(msgFrom(id(), protocol.TypeClientReady, &protocol.ClientReady{VersionSkipCheck: r.IntN(2) == 0, Version: "2.12.1"}))
			case k < 45:
				what = "heartbeat"
				m.handle(msgFrom(id(), protocol.TypeHeartbeat, &protocol.Heartbeat{State: states[r.IntN(len(states))], CPUUsage: 1, MemoryUsage: 1}))
			case k < 50:
				what = "spawning"
				m.handle(msgFrom(id(), protocol.TypeSpawning, nil))
			case k < 58:
				what = "spawning_complete"
				c := classes()
				m.handle(msgFrom(id(), protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: c, UserCount: sumCounts(c)}))
			case k < 68:
				what = "stats"
				m.handle(msgFrom(id(), protocol.TypeStats, report(1, 0, classes())))
			case k < 71:
				what = "client_stopped"
				m.handle(msgFrom(id(), protocol.TypeClientStopped, nil))
			case k < 74:
				what = "quit"
				m.handle(msgFrom(id(), protocol.TypeQuit, nil))
			case k < 86:
				what = "tick"
				m.liveness()
			case k < 92:
				what = "start"
				_ = m.start(int64(r.IntN(20)), float64(1+r.IntN(1000)))
			case k < 95:
				what = "stop"
				m.stopTest(r.IntN(2) == 0)
			case k < 96 && step > 250: // mostly a running master, then its exit
				what = "master quit"
				m.beginQuit()
			default:
				what = "timer"
				fireRamp(m)
			}
			if err := st.checkIndex(); err != nil {
				t.Fatalf("seed %d step %d (%s): %v", seed, step, what, err)
			}
			workers, ready, classes := recount(st)
			if got := st.workerCount(); got != workers {
				t.Fatalf("seed %d step %d (%s): workerCount %d, recount %d", seed, step, what, got, workers)
			}
			if got := st.countState(protocol.StateReady); got != ready {
				t.Fatalf("seed %d step %d (%s): ready %d, recount %d", seed, step, what, got, ready)
			}
			if got := st.reportedClasses(); !reflect.DeepEqual(got, classes) {
				t.Fatalf("seed %d step %d (%s): reportedClasses %v, recount %v", seed, step, what, got, classes)
			}
			missing += st.countState(protocol.StateMissing)
			if st.end.quitting && !st.end.done {
				if m.finalAllIn() {
					t.Fatalf("seed %d step %d (%s): every final report is in but the master still waits", seed, step, what)
				}
			}
		}
		if st.end.quitting {
			quits++
		}
		if st.end.done {
			dones++
		}
		redispatches += st.ix().count
	}
	t.Logf("%d runs quit, %d ended; %d re-dispatches; %d missing nodes seen", quits, dones, redispatches, missing)
	if quits == 0 || dones == 0 || redispatches == 0 || missing == 0 {
		t.Error("the random events do not reach every path")
	}
}

// finalAllIn is checkFinal's condition computed by a scan.
func (m *Master) finalAllIn() bool {
	now := timeNow()
	for _, f := range m.st.end.final {
		if !f.quit && !f.gone && !(f.stats && now.Sub(f.statsAt) >= m.opts.FinalReportGrace) {
			return false
		}
	}
	return true
}

// TestFinalReportGrace: a worker whose final stats report arrived holds the
// exit up for FinalReportGrace unless its quit arrives; the index follows
// reports that quit after their stats.
func TestFinalReportGrace(t *testing.T) {
	now := time.Now()
	timeNow = func() time.Time { return now }
	t.Cleanup(func() { timeNow = time.Now })
	m := loopMaster(t, 3, Options{FinalReportGrace: 2 * time.Second, FinalReportTimeout: time.Hour})
	m.beginQuit()
	stats := func(id string) { m.handle(msgFrom(id, protocol.TypeStats, report(1, 0, nil))) }
	quit := func(id string) { m.handle(msgFrom(id, protocol.TypeQuit, nil)) }
	stats(workerID(0)) // in grace until now+2s
	now = now.Add(time.Second)
	stats(workerID(1)) // until now+3s
	quit(workerID(2))
	if m.st.end.done {
		t.Fatal("done with two reports in grace")
	}
	quit(workerID(1)) // the later grace is no longer awaited
	now = now.Add(time.Second + time.Millisecond)
	m.checkFinal()
	if !m.st.end.done {
		t.Fatalf("not done after worker 0's grace; index %+v", m.st.ix().final)
	}
}

// coalesceRun registers n workers, runs a test of 2n users on them, lets
// the odd ones go missing and heals them one message at a time. locust
// makes every request re-dispatch at once, as Locust does. It returns the
// final split and the number of re-dispatches.
func coalesceRun(t *testing.T, n int, locust bool) (map[string]map[string]int64, int) {
	m := loopMaster(t, n, Options{
		UserClasses:       []UserClass{{Name: "A", Weight: 3}, {Name: "B"}},
		HeartbeatLiveness: 1,
		EnableRebalancing: true,
	})
	st := &m.st
	if err := m.start(int64(2*n), 1e6); err != nil {
		t.Fatal(err)
	}
	hb := func(i int) {
		if locust {
			st.ix().last = time.Time{}
		}
		m.handle(msgFrom(workerID(i), protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateRunning}))
	}
	for i := 0; i < n; i++ {
		m.handle(msgFrom(workerID(i), protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: map[string]int64{"A": 1, "B": 1}, UserCount: 2}))
	}
	for tick := 0; tick < 3; tick++ {
		for i := 0; i < n; i += 2 {
			hb(i)
		}
		if locust {
			st.ix().last = time.Time{}
		}
		m.liveness()
	}
	if got := st.countState(protocol.StateMissing); got != n/2 {
		t.Fatalf("%d missing; want %d", got, n/2)
	}
	for i := 1; i < n; i += 2 {
		hb(i)
	}
	deadline := time.Now().Add(waitShort)
	for st.ix().pending {
		if time.Now().After(deadline) {
			t.Fatal("coalesced re-dispatch not done")
		}
		<-st.ramp.rampC // the loop's dispatch timer
		st.ramp.rampC = nil
		m.advanceRamp()
	}
	if st.workerCount() != n {
		t.Fatalf("%d workers; want %d", st.workerCount(), n)
	}
	return st.ramp.disp.Users(), st.ix().count
}

// TestCoalescedRedispatch: when many workers heal at once, the master
// re-dispatches a few times instead of once per worker, and every worker
// ends up with the users it has when each heal re-dispatches (Locust).
func TestCoalescedRedispatch(t *testing.T) {
	const n = 200
	want, locustCount := coalesceRun(t, n, true)
	got, count := coalesceRun(t, n, false)
	if !reflect.DeepEqual(got, want) {
		ids := make([]string, 0, len(got))
		for id := range got {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		t.Fatalf("coalesced split differs from Locust's, e.g. %s: %v, Locust %v", ids[0], got[ids[0]], want[ids[0]])
	}
	if locustCount < n/2 {
		t.Errorf("%d re-dispatches without coalescing; want at least %d (one per healed worker)", locustCount, n/2)
	}
	if count > 3 {
		t.Errorf("%d re-dispatches for a burst of %d heals; want at most 3", count, n/2)
	}
	t.Logf("re-dispatches: %d coalesced, %d one per heal", count, locustCount)
}

// TestLoopEventAllocs locks in that a heartbeat, with or without a state
// change, allocates nothing on the loop, and a heartbeat tick only its
// small per-tick slices.
func TestLoopEventAllocs(t *testing.T) {
	hook := testHookLoopEvent
	testHookLoopEvent = nil
	t.Cleanup(func() { testHookLoopEvent = hook })
	const n = 1000
	m := loopMaster(t, n, Options{HeartbeatLiveness: 1 << 30})
	m.st.run.state = protocol.StateRunning
	states := [2]string{protocol.StateSpawning, protocol.StateRunning}
	hbs := make([]inbound, 2*n)
	for i := range hbs {
		hbs[i] = msgFrom(workerID(i%n), protocol.TypeHeartbeat, &protocol.Heartbeat{State: states[i/n], CPUUsage: 1, MemoryUsage: 1})
	}
	for _, hb := range hbs {
		m.handle(hb) // the first echoes
	}
	i := 0
	if a := testing.AllocsPerRun(2*n, func() { m.handle(hbs[i%(2*n)]); i++ }); a != 0 {
		t.Errorf("%v allocations per heartbeat; want 0", a)
	}
	if a := testing.AllocsPerRun(20, m.liveness); a > 3 {
		t.Errorf("%v allocations per heartbeat tick; want at most 3", a)
	}
}
