package stack

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
)

// BenchmarkUsersTurn: one loop turn (both stacks polled, stats taken) of
// 1,000 users with between(1 ms, 5 ms) waits on the wheel, one turn per op.
func BenchmarkUsersTurn(b *testing.B) {
	prog := oneClassBench()
	p := usersPair(b, prog, 1000, Config{}, Config{}, pipe.Config{})
	p.c.LaunchClass(p.now, 0, 1000)
	var st Stats
	p.c.TakeStats(&st)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p.now += step
		p.poll()
		p.c.TakeStats(&st)
	}
	b.ReportMetric(float64(p.c.ctr.HTTP2xx)/float64(b.N), "req/turn")
	reportCommon(b)
}

func oneClassBench() *Program {
	return &Program{Requests: []ProgramRequest{{Raw: get("/")}, {Raw: get("/a"), Stat: 1}},
		Classes: []ProgramClass{{Wait: Wait{Kind: WaitBetween, Min: time.Millisecond, Max: 5 * time.Millisecond},
			Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}, {Weight: 3, Requests: []int{1, 0}}}}}}
}

// serveAsync polls the server stack of p on its own goroutine, on the wall
// clock, until the returned stop is called.
func serveAsync(p *pair, start time.Time) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			p.s.Poll(int64(time.Since(start)))
		}
	}()
	return func() { done.Store(true); wg.Wait() }
}

// BenchmarkClientCoreShortConns: the client stack's ceiling on one core,
// the server stack polled by another goroutine over the pipe, wall clock:
// short connections (SYN, GET, 128-byte page, FIN), at most 4,096 open,
// one connection per op. The figure to set beside dperf's 2,000,000 conn/s
// per (client) core.
func BenchmarkClientCoreShortConns(b *testing.B) {
	p := resolvedPair(b, Config{PortMin: 10000, PortMax: 59999}, Config{PortMin: 10000, PortMax: 59999})
	start := time.Now()
	p.now = int64(time.Since(start))
	stop := serveAsync(p, start)
	defer stop()
	n := uint64(b.N)
	deadline := time.Now().Add(60 * time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	launched := uint64(0)
	for turn := 0; p.c.ctr.SocketsClosed < n; turn++ {
		now := int64(time.Since(start))
		if launched < n && p.c.ctr.SocketsCurrent < 4096 {
			launched += uint64(p.c.Launch(now, int(min(64, n-launched))))
		}
		p.c.Poll(now)
		if turn%1024 == 0 && time.Now().After(deadline) {
			b.Fatalf("not done in 60 s: %+v", p.c.Counters())
		}
	}
	el := time.Since(t0).Seconds()
	b.StopTimer()
	b.ReportMetric(float64(n)/el, "conn/s")
	reportCommon(b)
	if c := p.c.Counters(); c.HTTP2xx != n {
		b.Errorf("2xx %d; want %d (failed %d)", c.HTTP2xx, n, c.SocketsFailed)
	}
}

// BenchmarkClientCoreUsers: users with no wait on 1,000 held connections,
// the client on one core and the server on another, one request per op.
func BenchmarkClientCoreUsers(b *testing.B) {
	prog := &Program{Requests: []ProgramRequest{{Raw: get("/")}},
		Classes: []ProgramClass{{Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}}}}
	p := usersPair(b, prog, 1000, Config{}, Config{}, pipe.Config{})
	start := time.Now()
	stop := serveAsync(p, start)
	defer stop()
	p.c.LaunchClass(int64(time.Since(start)), 0, 1000)
	n := uint64(b.N)
	deadline := time.Now().Add(60 * time.Second)
	var st Stats
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	for turn := 0; p.c.ctr.HTTP2xx < n; turn++ {
		p.c.Poll(int64(time.Since(start)))
		if turn%1024 == 0 {
			p.c.TakeStats(&st)
			if time.Now().After(deadline) {
				b.Fatalf("not done in 60 s: %+v", p.c.Counters())
			}
		}
	}
	el := time.Since(t0).Seconds()
	b.StopTimer()
	b.ReportMetric(float64(p.c.ctr.HTTP2xx)/el, "req/s")
	reportCommon(b)
}
