package engine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/dataplane/wire"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// fakeClock is an engine clock the test moves.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() int64              { return c.ns.Load() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// cluster is n client stacks and n server stacks of one tuple space, core k
// of each side owning port slice k, joined pairwise by pipes whose server
// ends share one MAC (the engine gives every core core 0's next hop).
type cluster struct {
	clients, servers []*stack.Stack
	slices           [][2]uint16
	serverMACs       []wire.MAC
}

func newCluster(t testing.TB, n int, min, max uint16, cc stack.Config) *cluster {
	t.Helper()
	slices, err := engine.Split(min, max, n)
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{slices: slices}
	for _, sl := range slices {
		mac := wire.MAC{2, 0, 0, 0, 1, 0x0b} // one peer, as on one interface
		a, b, err := pipe.New(pipe.Config{MACB: mac})
		if err != nil {
			t.Fatal(err)
		}
		c, s := cc, stack.Config{}
		c.ClientIP, c.ServerIP, c.PortMin, c.PortMax = 0x0a000001, 0x0a000101, sl[0], sl[1]
		s.ClientIP, s.ServerIP, s.PortMin, s.PortMax, s.ClientIPs = c.ClientIP, c.ServerIP, sl[0], sl[1], c.ClientIPs
		c.Mode, c.Link, s.Mode, s.Link = stack.Client, a, stack.Server, b
		cs, err := stack.New(c)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := stack.New(s)
		if err != nil {
			t.Fatal(err)
		}
		cl.clients, cl.servers = append(cl.clients, cs), append(cl.servers, ss)
		cl.serverMACs = append(cl.serverMACs, mac)
	}
	return cl
}

func cores(ss []*stack.Stack) []engine.Core {
	out := make([]engine.Core, len(ss))
	for k, s := range ss {
		out[k].Stack = s
	}
	return out
}

// run runs e until the test ends and checks that Run returns nil within
// 5 s of the cancel.
func run(t *testing.T, e *engine.Engine) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v; want nil", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return 5 s after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// perCore reads every core's live counters through Do.
func perCore(t *testing.T, e *engine.Engine, n int) []stack.Counters {
	t.Helper()
	out := make([]stack.Counters, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Do(ctx, func(k int, s *stack.Stack, _ int64) { out[k] = s.Counters() }); err != nil {
		t.Fatalf("Do: %v", err)
	}
	return out
}

// noLeak fails t unless the goroutine count comes back to base.
func noLeak(t *testing.T, base int) {
	t.Helper()
	testpeer.Eventually(t, 5*time.Second, fmt.Sprintf("goroutines back to %d", base), func() bool {
		return runtime.NumGoroutine() <= base
	})
}

func TestEngineSumsShortConnectionsOverCores(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("%d cores", n), func(t *testing.T) {
			base := runtime.NumGoroutine()
			const perCoreTotal = 500
			cl := newCluster(t, n, 10000, 10999, stack.Config{})
			clock := &fakeClock{}
			pace := make([]engine.Launcher, n)
			for k := range pace {
				pace[k] = engine.Launcher{MaxOpen: 40, Total: perCoreTotal}
			}
			var everyCalls [4]atomic.Int64
			client, err := engine.New(engine.Config{Cores: cores(cl.clients), Clock: clock.now, LockThreads: true,
				Tick:  func(k int, s *stack.Stack, now int64) { pace[k].Launch(s, now) },
				Every: func(k int, _ *stack.Stack, _ int64) { everyCalls[k].Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			server, err := engine.New(engine.Config{Cores: cores(cl.servers), Clock: clock.now})
			if err != nil {
				t.Fatal(err)
			}
			stopServer, stopClient := run(t, server), run(t, client)

			total := uint64(n * perCoreTotal)
			if err := testpeer.Poll(40*time.Second, 0, func() bool {
				var closed uint64
				for _, c := range perCore(t, client, n) {
					closed += c.SocketsClosed
				}
				return closed == total
			}); err != nil {
				t.Fatalf("every connection closed: %v; clients %+v; servers %+v", err, perCore(t, client, n), perCore(t, server, n))
			}
			if sum, cs := client.Counters(); len(cs) != n || sum.SocketsOpened != 0 {
				t.Fatalf("before the first second: %d cores, %d opened; want %d cores and nothing published", len(cs), sum.SocketsOpened, n)
			}
			clock.advance(time.Second)
			published := func(e *engine.Engine, at int64) func() bool {
				return func() bool {
					_, cs := e.Counters()
					for _, c := range cs {
						if c.At < at {
							return false
						}
					}
					return true
				}
			}
			testpeer.Eventually(t, 10*time.Second, "a publication of every core after 1 s", published(client, int64(time.Second)))
			testpeer.Eventually(t, 10*time.Second, "the server's publication", published(server, int64(time.Second)))
			sum, cs := client.Counters()
			if sum.SocketsOpened != total || sum.SocketsClosed != total || sum.HTTP2xx != total || sum.SocketsCurrent != 0 || sum.SocketsFailed != 0 {
				t.Errorf("client sum: opened %d closed %d 2xx %d current %d failed %d; want %d, %d, %d, 0, 0",
					sum.SocketsOpened, sum.SocketsClosed, sum.HTTP2xx, sum.SocketsCurrent, sum.SocketsFailed, total, total, total)
			}
			var synOut uint64
			for k, c := range cs {
				synOut += c.Counters.SynOut
				if c.Counters.HTTP2xx != perCoreTotal || c.Busy < 0 || c.Busy > 1 || c.Turns == 0 {
					t.Errorf("core %d: 2xx %d busy %v turns %d; want %d, 0..1, > 0", k, c.Counters.HTTP2xx, c.Busy, c.Turns, perCoreTotal)
				}
			}
			if synOut != sum.SynOut || sum.SynOut != total {
				t.Errorf("SynOut: cores %d, sum %d; want %d", synOut, sum.SynOut, total)
			}
			ssum, _ := server.Counters()
			if ssum.Served200 != total || ssum.DropNoSocket != 0 || ssum.RstOut != 0 {
				t.Errorf("server: served %d, no-socket drops %d, resets %d; want %d, 0, 0", ssum.Served200, ssum.DropNoSocket, ssum.RstOut, total)
			}
			clock.advance(time.Second)
			testpeer.Eventually(t, 10*time.Second, "a second publication", published(client, int64(2*time.Second)))
			for k := range n {
				if got := everyCalls[k].Load(); got < 2 {
					t.Errorf("core %d: Every called %d times after two seconds; want 2 or more", k, got)
				}
			}
			stopClient()
			stopServer()
			noLeak(t, base)
		})
	}
}

func TestEngineCopiesNextHopFromCore0(t *testing.T) {
	// Core 1's link leads nowhere: its stack can only learn the next hop
	// from core 0, whose server answers ARP.
	cl := newCluster(t, 1, 10000, 10499, stack.Config{})
	sink, _, err := pipe.New(pipe.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lonely, err := stack.New(stack.Config{Mode: stack.Client, Link: sink, ClientIP: 0x0a000001, ServerIP: 0x0a000101,
		PortMin: 10500, PortMax: 10999})
	if err != nil {
		t.Fatal(err)
	}
	client, err := engine.New(engine.Config{Cores: []engine.Core{{Stack: cl.clients[0]}, {Stack: lonely}}})
	if err != nil {
		t.Fatal(err)
	}
	server, err := engine.New(engine.Config{Cores: cores(cl.servers)})
	if err != nil {
		t.Fatal(err)
	}
	run(t, server)
	run(t, client)
	var hops [2]wire.MAC
	testpeer.Eventually(t, 10*time.Second, "both cores resolved", func() bool {
		ok := [2]bool{}
		if err := client.Do(context.Background(), func(k int, s *stack.Stack, _ int64) { hops[k], ok[k] = s.NextHop() }); err != nil {
			t.Fatal(err)
		}
		return ok[0] && ok[1]
	})
	if hops[0] != cl.serverMACs[0] || hops[1] != hops[0] {
		t.Errorf("next hops %v, %v; want %v on both", hops[0], hops[1], cl.serverMACs[0])
	}
}

func TestEngineBusyShare(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a real second")
	}
	cl := newCluster(t, 1, 10000, 10999, stack.Config{})
	pace := engine.Launcher{MaxOpen: 64}
	client, err := engine.New(engine.Config{Cores: cores(cl.clients),
		Tick: func(_ int, s *stack.Stack, now int64) { pace.Launch(s, now) }})
	if err != nil {
		t.Fatal(err)
	}
	server, err := engine.New(engine.Config{Cores: cores(cl.servers)})
	if err != nil {
		t.Fatal(err)
	}
	// A server of another tuple space nobody talks to: idle.
	idle, _, err := pipe.New(pipe.Config{})
	if err != nil {
		t.Fatal(err)
	}
	is, err := stack.New(stack.Config{Mode: stack.Server, Link: idle, ClientIP: 0x0a000001, ServerIP: 0x0a000101})
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := engine.New(engine.Config{Cores: []engine.Core{{Stack: is}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*engine.Engine{server, client, quiet} {
		run(t, e)
	}
	testpeer.Eventually(t, 20*time.Second, "a publication by each", func() bool {
		_, a := client.Counters()
		_, b := quiet.Counters()
		return a[0].At > 0 && b[0].At > 0
	})
	_, busy := client.Counters()
	_, still := quiet.Counters()
	// How busy the loaded core is depends on the machine's other load, so
	// only its range is asserted: above 0 (it did work) and at most 1.
	if b := busy[0].Busy; b <= 0 || b > 1 || busy[0].Counters.HTTP2xx == 0 {
		t.Errorf("loaded core busy %v (2xx %d); want (0, 1] and responses", b, busy[0].Counters.HTTP2xx)
	}
	if b := still[0].Busy; b != 0 || still[0].Turns == 0 {
		t.Errorf("idle core busy %v over %d turns; want 0 and turns", b, still[0].Turns)
	}
}

func TestEngineDoAndRunLifecycle(t *testing.T) {
	base := runtime.NumGoroutine()
	cl := newCluster(t, 3, 10000, 10999, stack.Config{})
	e, err := engine.New(engine.Config{Cores: cores(cl.servers)})
	if err != nil {
		t.Fatal(err)
	}
	// Before Run, Do waits; its context bounds the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	err = e.Do(ctx, func(int, *stack.Stack, int64) { t.Error("a withdrawn Do ran") })
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do before Run = %v; want context.DeadlineExceeded", err)
	}
	// A Do posted before Run runs once Run starts, once on every core, on
	// the stack of that core.
	var ran [3]atomic.Int32
	doDone := make(chan error, 1)
	go func() {
		doDone <- e.Do(context.Background(), func(k int, s *stack.Stack, _ int64) {
			if s != cl.servers[k] {
				t.Errorf("core %d got another core's stack", k)
			}
			ran[k].Add(1)
		})
	}()
	stop := run(t, e)
	select {
	case err := <-doDone:
		if err != nil {
			t.Fatalf("Do = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Do did not return 10 s after Run started")
	}
	for k := range ran {
		if got := ran[k].Load(); got != 1 {
			t.Errorf("core %d ran fn %d times; want 1", k, got)
		}
	}
	if err := e.Run(context.Background()); !errors.Is(err, engine.ErrRunning) {
		t.Errorf("second Run = %v; want ErrRunning", err)
	}
	start := time.Now()
	stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Run took %v to return after cancel", d)
	}
	if err := e.Do(context.Background(), func(int, *stack.Stack, int64) {}); !errors.Is(err, engine.ErrStopped) {
		t.Errorf("Do after Run = %v; want ErrStopped", err)
	}
	if err := e.Do(context.Background(), nil); !errors.Is(err, engine.ErrConfig) {
		t.Errorf("Do(nil) = %v; want ErrConfig", err)
	}
	// Run's end publishes every core.
	if _, cs := e.Counters(); len(cs) != 3 || cs[0].Turns == 0 || cs[1].Turns == 0 || cs[2].Turns == 0 {
		t.Errorf("after Run: %+v; want 3 cores with turns", cs)
	}
	noLeak(t, base)
}

func TestNewRefusesBadConfig(t *testing.T) {
	cl := newCluster(t, 1, 10000, 10999, stack.Config{})
	s := cl.servers[0]
	for name, cfg := range map[string]engine.Config{
		"no cores":      {},
		"nil stack":     {Cores: []engine.Core{{}}},
		"shared stack":  {Cores: []engine.Core{{Stack: s}, {Stack: s}}},
		"negative wait": {Cores: []engine.Core{{Stack: s}}, IdleWait: -1},
	} {
		if _, err := engine.New(cfg); !errors.Is(err, engine.ErrConfig) {
			t.Errorf("%s: New = %v; want ErrConfig", name, err)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		min, max uint16
		n        int
		want     [][2]uint16
	}{
		{10000, 10999, 1, [][2]uint16{{10000, 10999}}},
		{10000, 10999, 2, [][2]uint16{{10000, 10499}, {10500, 10999}}},
		{10000, 10009, 3, [][2]uint16{{10000, 10003}, {10004, 10006}, {10007, 10009}}},
		{1, 65535, 2, [][2]uint16{{1, 32768}, {32769, 65535}}},
		{5, 5, 1, [][2]uint16{{5, 5}}},
		{7, 9, 3, [][2]uint16{{7, 7}, {8, 8}, {9, 9}}},
	} {
		got, err := engine.Split(tc.min, tc.max, tc.n)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%d, %d, %d) = %v, %v; want %v", tc.min, tc.max, tc.n, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		min, max uint16
		n        int
	}{{0, 10, 1}, {10, 9, 1}, {10, 19, 0}, {10, 19, 11}, {10, 19, -1}} {
		if _, err := engine.Split(tc.min, tc.max, tc.n); !errors.Is(err, engine.ErrConfig) {
			t.Errorf("Split(%d, %d, %d) = %v; want ErrConfig", tc.min, tc.max, tc.n, err)
		}
	}
}

func FuzzSplit(f *testing.F) {
	f.Add(uint16(10000), uint16(59999), 7)
	f.Add(uint16(1), uint16(65535), 65535)
	f.Fuzz(func(t *testing.T, lo, hi uint16, n int) {
		got, err := engine.Split(lo, hi, n)
		if err != nil {
			if !errors.Is(err, engine.ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		// Contiguous from lo to hi, ascending, sizes within one.
		next, small, large := int(lo), 1<<17, 0
		for _, s := range got {
			if int(s[0]) != next || s[1] < s[0] {
				t.Fatalf("Split(%d, %d, %d) = %v: slice %v breaks the run at %d", lo, hi, n, got, s, next)
			}
			size := int(s[1]-s[0]) + 1
			small, large, next = min(small, size), max(large, size), int(s[1])+1
		}
		if len(got) != n || next != int(hi)+1 || large-small > 1 {
			t.Fatalf("Split(%d, %d, %d) = %v: %d slices ending at %d, sizes %d..%d", lo, hi, n, got, len(got), next-1, small, large)
		}
	})
}

// BenchmarkEngineTurn measures one idle turn of a one-core engine (no
// frames, no launches): the engine's own cost per turn.
func BenchmarkEngineTurn(b *testing.B) {
	cl := newCluster(b, 1, 10000, 10999, stack.Config{})
	var turns atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	limit := int64(b.N)
	e, err := engine.New(engine.Config{Cores: cores(cl.servers), Tick: func(int, *stack.Stack, int64) {
		if turns.Add(1) == limit {
			cancel()
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if err := e.Run(ctx); err != nil {
		b.Fatal(err)
	}
}
