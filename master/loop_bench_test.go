package master

import (
	"fmt"
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
	m.st.rampTimer = time.NewTimer(time.Hour)
	m.st.rampTimer.Stop()
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
	b.Run("heartbeat", func(b *testing.B) {
		m := loopMaster(b, n, Options{})
		hbs := make([]inbound, n)
		for i := range hbs {
			hbs[i] = msgFrom(workerID(i), protocol.TypeHeartbeat, &protocol.Heartbeat{State: StateReady, CPUUsage: 1, MemoryUsage: 1 << 20})
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
	b.Run("state-change", func(b *testing.B) {
		m := loopMaster(b, n, Options{})
		m.st.state = StateRunning // check_stopped does its work
		states := [2]string{StateSpawning, StateRunning}
		hbs := make([]inbound, 2*n)
		for i := range hbs {
			hbs[i] = msgFrom(workerID(i%n), protocol.TypeHeartbeat, &protocol.Heartbeat{State: states[i/n], CPUUsage: 1, MemoryUsage: 1 << 20})
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
}
