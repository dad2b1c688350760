package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// labTimeout bounds every lab run's loops.
const labTimeout = 45 * time.Second

func ip4(s string) uint32 { return binary.BigEndian.Uint32(net.ParseIP(s).To4()) }

// labRun is a client engine and a server engine of n cores each over
// AF_PACKET fanout groups on the two ends of one lab veth.
type labRun struct {
	n                   int
	clients, servers    []*stack.Stack
	clinks, slinks      []*afpacket.Link
	client, server      *engine.Engine
	stopClient, stopSrv func()
	pace                []engine.Launcher
}

// newLabRun builds the lab, the links and the stacks (ports 10000..59999
// split between n cores), with a Launcher per client core from pace.
func newLabRun(t testing.TB, n int, pace engine.Launcher) *labRun {
	t.Helper()
	l := labtest.New(t)
	p, err := l.StackPair()
	if err != nil {
		t.Fatalf("StackPair = %v", err)
	}
	slices, err := engine.Split(10000, 59999, n)
	if err != nil {
		t.Fatal(err)
	}
	r := &labRun{n: n, pace: make([]engine.Launcher, n)}
	// A 1 ms retire timeout keeps round trips short (as the lab's tests).
	lcfg := func(e *lab.End) afpacket.Config {
		return afpacket.Config{Index: e.Index, BlockSize: 64 << 10, Blocks: 512, RetireTimeout: time.Millisecond}
	}
	if err := p.Cicada.Netns.Do(func() (err error) {
		r.clinks, err = afpacket.OpenFanout(lcfg(p.Cicada), afpacket.Fanout{Group: 11, Slices: slices, Side: afpacket.ClientSide})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Peer.Netns.Do(func() (err error) {
		r.slinks, err = afpacket.OpenFanout(lcfg(p.Peer), afpacket.Fanout{Group: 12, Slices: slices, Side: afpacket.ServerSide})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, l := range append(r.clinks, r.slinks...) {
			_ = l.Close()
		}
	})
	ccores, score := make([]engine.Core, n), make([]engine.Core, n)
	for k, sl := range slices {
		// The lab's retransmission setting (dataplane/lab): 1 s, 8 tries.
		base := stack.Config{ClientIP: ip4(lab.ClientIP), ServerIP: ip4(lab.ServerIP), PortMin: sl[0], PortMax: sl[1],
			RetransmitTimeout: time.Second, MaxRetries: 8}
		cc, sc := base, base
		cc.Mode, cc.Link, sc.Mode, sc.Link = stack.Client, r.clinks[k], stack.Server, r.slinks[k]
		cs, err := stack.New(cc)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := stack.New(sc)
		if err != nil {
			t.Fatal(err)
		}
		r.clients, r.servers = append(r.clients, cs), append(r.servers, ss)
		ccores[k], score[k] = engine.Core{Stack: cs, Waiter: r.clinks[k]}, engine.Core{Stack: ss, Waiter: r.slinks[k]}
		r.pace[k] = pace
	}
	if r.server, err = engine.New(engine.Config{Cores: score, LockThreads: true}); err != nil {
		t.Fatal(err)
	}
	if r.client, err = engine.New(engine.Config{Cores: ccores, LockThreads: true,
		Tick: func(k int, s *stack.Stack, now int64) { r.pace[k].Launch(s, now) }}); err != nil {
		t.Fatal(err)
	}
	r.stopSrv = startEngine(t, r.server)
	return r
}

// startEngine runs e on a goroutine and returns its stop, also called at
// cleanup; stop fails t unless Run returns nil within 5 s.
func startEngine(t testing.TB, e *engine.Engine) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return 5 s after cancel")
		}
	}
	t.Cleanup(stop)
	return stop
}

// live returns the client cores' live counters summed, through Do.
func (r *labRun) live(t testing.TB) stack.Counters {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	per := make([]stack.Counters, r.n)
	if err := r.client.Do(ctx, func(k int, s *stack.Stack, _ int64) { per[k] = s.Counters() }); err != nil {
		t.Fatalf("Do: %v", err)
	}
	var sum stack.Counters
	for _, c := range per {
		sum.SocketsClosed += c.SocketsClosed
		sum.SocketsFailed += c.SocketsFailed
		sum.HTTP2xx += c.HTTP2xx
	}
	return sum
}

// runUntilClosed starts the client engine and waits until total
// connections closed (or one failed), then stops both engines.
func (r *labRun) runUntilClosed(t testing.TB, total int) time.Duration {
	t.Helper()
	start := time.Now()
	r.stopClient = startEngine(t, r.client)
	err := testpeer.Poll(labTimeout, 2*time.Millisecond, func() bool {
		c := r.live(t)
		return c.SocketsClosed >= uint64(total) || c.SocketsFailed > 0
	})
	el := time.Since(start)
	r.stopClient()
	r.stopSrv()
	if err != nil {
		sum, _ := r.client.Counters()
		t.Fatalf("%d connections: %v; client %+v", total, err, sum)
	}
	return el
}

func TestLabEngineTwoCoresOverFanout(t *testing.T) {
	const n, perCore = 2, 2000
	r := newLabRun(t, n, engine.Launcher{MaxOpen: 200, Total: perCore})
	r.runUntilClosed(t, n*perCore)
	csum, ccores := r.client.Counters()
	ssum, scores := r.server.Counters()
	if csum.HTTP2xx != n*perCore || csum.SocketsFailed != 0 || csum.RstIn != 0 {
		t.Errorf("client: 2xx %d, failed %d, resets in %d; want %d, 0, 0", csum.HTTP2xx, csum.SocketsFailed, csum.RstIn, n*perCore)
	}
	if ssum.Served200 != n*perCore || ssum.DropNoSocket != 0 || ssum.RstOut != 0 {
		t.Errorf("server: served %d, no-socket drops %d, resets out %d; want %d, 0, 0", ssum.Served200, ssum.DropNoSocket, ssum.RstOut, n*perCore)
	}
	// Each core carried its own slice's traffic: the fanout delivered
	// every frame to the core owning its port, so no core dropped a
	// frame for want of a socket.
	for k := range n {
		c, s := ccores[k].Counters, scores[k].Counters
		if c.HTTP2xx != perCore || s.Served200 != perCore || c.DropNoSocket != 0 || s.DropNoSocket != 0 || c.PktsIn == 0 {
			t.Errorf("core %d: client 2xx %d, drops %d; server served %d, drops %d; want %d, 0, %d, 0",
				k, c.HTTP2xx, c.DropNoSocket, s.Served200, s.DropNoSocket, perCore, perCore)
		}
		if ccores[k].Busy < 0 || ccores[k].Busy > 1 || ccores[k].Turns == 0 {
			t.Errorf("core %d: busy %v, turns %d", k, ccores[k].Busy, ccores[k].Turns)
		}
	}
	// ARP reached core 0 only; core 1 launched with core 0's next hop.
	if ccores[0].Counters.ARPIn == 0 || ccores[1].Counters.ARPIn != 0 {
		t.Errorf("ARP in: core 0 %d, core 1 %d; want some on core 0 only", ccores[0].Counters.ARPIn, ccores[1].Counters.ARPIn)
	}
	for _, l := range append(r.clinks, r.slinks...) {
		if st := l.Stats(); st.KernelDrops != 0 || st.TxDropped != 0 {
			t.Errorf("link drops: %+v", st)
		}
	}
}

// BenchmarkLabEngineShortConns: new connections per second (SYN, GET,
// 128-byte page, FIN) with 1 and 2 cores per side over AF_PACKET fanout,
// client engine to server engine on one veth, at most 2,048 open in all.
func BenchmarkLabEngineShortConns(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("cores=%d", n), func(b *testing.B) {
			per := (b.N + n - 1) / n
			r := newLabRun(b, n, engine.Launcher{MaxOpen: 2048 / n, Total: per})
			b.ResetTimer()
			el := r.runUntilClosed(b, per*n)
			b.StopTimer()
			sum, cores := r.client.Counters()
			if sum.HTTP2xx != uint64(per*n) {
				b.Fatalf("2xx %d; want %d", sum.HTTP2xx, per*n)
			}
			b.ReportMetric(float64(per*n)/el.Seconds(), "conn/s")
			for k, c := range cores {
				b.ReportMetric(c.Busy, fmt.Sprintf("busy%d", k))
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}
