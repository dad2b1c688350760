package master

import (
	"fmt"
	"github.com/cicada-load/cicada/master/dispatch"
	"log/slog"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// loopMaster returns a master whose loop state is driven directly by the
// test (handle, liveness, start), without Run: nothing is received, and
// messages to workers fail as sent to unknown peers. It has n registered
// cicada workers "w_00000"… in state ready.
func loopMaster(tb testing.TB, n int, opts Options) *Master {
	tb.Helper()
	opts.BindHost, opts.BindPort = "127.0.0.1", -1
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	m.st.ramp.rampTimer = time.NewTimer(time.Hour)
	m.st.ramp.rampTimer.Stop()
	for i := 0; i < n; i++ {
		m.handle(msgFrom(workerID(i), protocol.TypeClientReady, &protocol.ClientReady{VersionSkipCheck: true}))
	}
	return m
}

func workerID(i int) string { return fmt.Sprintf("w_%05d", i) }

func msgFrom(id, typ string, data any) inbound {
	return inbound{id: id, msg: protocol.Message{Type: typ, Data: data, NodeID: id}}
}

// BenchmarkLoop10k measures the loop's work per event with 10,000
// registered workers: a heartbeat that changes nothing, a heartbeat that
// changes the worker's state (Locust's check_stopped runs), and one
// heartbeat tick (liveness) over all workers.
func BenchmarkLoop10k(b *testing.B) {
	const n = 10000
	hook := testHookLoopEvent // the tests' recount would dominate
	testHookLoopEvent = nil
	b.Cleanup(func() { testHookLoopEvent = hook })
	b.Run("heartbeat", func(b *testing.B) {
		m := loopMaster(b, n, Options{})
		hbs := make([]inbound, n)
		for i := range hbs {
			hbs[i] = msgFrom(workerID(i), protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateReady, CPUUsage: 1, MemoryUsage: 1 << 20})
		}
		for _, hb := range hbs {
			m.handle(hb) // the first echo to each worker
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.handle(hbs[i%n])
		}
	})
	b.Run("heartbeat-conns", func(b *testing.B) {
		m := loopMaster(b, n, Options{})
		hbs := make([]inbound, n)
		for i := range hbs {
			hbs[i] = msgFrom(workerID(i), protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateReady, CPUUsage: 1, MemoryUsage: 1 << 20,
				Connections: &protocol.ConnCounters{Open: 100, Established: 100, Connects: 100}})
		}
		for _, hb := range hbs {
			m.handle(hb)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.handle(hbs[i%n])
		}
	})
	b.Run("state-change", func(b *testing.B) {
		m := loopMaster(b, n, Options{})
		m.st.run.state = protocol.StateRunning // check_stopped does its work
		states := [2]string{protocol.StateSpawning, protocol.StateRunning}
		hbs := make([]inbound, 2*n)
		for i := range hbs {
			hbs[i] = msgFrom(workerID(i%n), protocol.TypeHeartbeat, &protocol.Heartbeat{State: states[i/n], CPUUsage: 1, MemoryUsage: 1 << 20})
		}
		for _, hb := range hbs {
			m.handle(hb)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.handle(hbs[i%(2*n)])
		}
	})
	b.Run("liveness-tick", func(b *testing.B) {
		m := loopMaster(b, n, Options{HeartbeatLiveness: 1 << 30})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.liveness()
		}
	})
	b.Run("liveness-tick-conns", func(b *testing.B) {
		m := loopMaster(b, n, Options{HeartbeatLiveness: 1 << 30})
		for i := 0; i < n; i++ {
			m.handle(msgFrom(workerID(i), protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateReady, CPUUsage: 1, MemoryUsage: 1 << 20,
				Connections: &protocol.ConnCounters{Open: 100, Established: 100, Connects: 100}}))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.liveness()
		}
	})
	// One re-dispatch of 10,000 users over 10,000 workers: what Locust
	// does for every worker that joins, heals or leaves while a test runs.
	b.Run("redispatch", func(b *testing.B) {
		m := loopMaster(b, n, Options{UserClasses: []UserClass{{Name: "A"}}})
		if err := m.start(n, dispatch.MaxSpawnRate); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.redispatch()
		}
	})
	// 100 of 10,000 workers heal in one burst while a test of 10,000 users
	// runs (one op = the whole burst, re-dispatches included).
	b.Run("heal-burst-100", func(b *testing.B) {
		b.ReportAllocs()
		redispatches := 0
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			m := loopMaster(b, n, Options{UserClasses: []UserClass{{Name: "A"}}})
			st := &m.st
			for j := 0; j < n; j += 100 {
				st.setNodeState(st.reg.nodes[workerID(j)], protocol.StateMissing)
			}
			if err := m.start(n, dispatch.MaxSpawnRate); err != nil {
				b.Fatal(err)
			}
			st.run.state = protocol.StateRunning
			hbs := make([]inbound, 0, n/100)
			for j := 0; j < n; j += 100 {
				hbs = append(hbs, msgFrom(workerID(j), protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateRunning}))
			}
			before := st.ix().count
			b.StartTimer()
			for _, hb := range hbs {
				m.handle(hb)
			}
			for st.ix().pending {
				<-st.ramp.rampC
				st.ramp.rampC = nil
				m.advanceRamp()
			}
			b.StopTimer()
			redispatches += st.ix().count - before
			m.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(redispatches)/float64(b.N), "redispatches/op")
	})
}
