//go:build dpdk && cgo && linux

package dpdk_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// ringSeq names each ring pair of the process once (ring ports cannot be
// removed).
var ringSeq atomic.Int64

func ringPair(t testing.TB) (*dpdk.Link, *dpdk.Link) {
	t.Helper()
	initEAL(t)
	k := ringSeq.Add(1)
	a, b, err := dpdk.OpenRingPair(fmt.Sprintf("net_ring_c%d", k), fmt.Sprintf("net_ring_s%d", k), dpdk.Config{Mbufs: 8192})
	if err != nil {
		t.Fatalf("OpenRingPair = %v", err)
	}
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

const (
	clientIP = 198<<24 | 18<<16 | 0<<8 | 1
	serverIP = 198<<24 | 18<<16 | 1<<8 | 1
)

// stackPair is a client and a server stack over a ring pair, polled by
// one goroutine (so one core carries both sides and DPDK's rings).
type stackPair struct {
	c, s  *stack.Stack
	start time.Time
}

func newStackPair(t testing.TB, cc, sc stack.Config) *stackPair {
	t.Helper()
	a, b := ringPair(t)
	for _, c := range []*stack.Config{&cc, &sc} {
		c.ClientIP, c.ServerIP = clientIP, serverIP
		// -race on a shared 2-core machine: a 200 ms timeout would set
		// off retransmissions while the other stack is merely slow.
		c.RetransmitTimeout, c.MaxRetries = time.Second, 8
		c.PortMin, c.PortMax = cc.PortMin, cc.PortMax
	}
	cc.Mode, cc.Link, sc.Mode, sc.Link = stack.Client, a, stack.Server, b
	p := &stackPair{start: time.Now()}
	var err error
	if p.c, err = stack.New(cc); err != nil {
		t.Fatalf("stack.New(client) = %v", err)
	}
	if p.s, err = stack.New(sc); err != nil {
		t.Fatalf("stack.New(server) = %v", err)
	}
	return p
}

// run launches total connections, 32 a turn at most and at most
// maxInFlight launched but not finished, polling both stacks until
// finished() reaches total; it fails t after limit.
func (p *stackPair) run(t testing.TB, total int, limit time.Duration, finished func() int) {
	t.Helper()
	const maxInFlight = 1024
	launched := 0
	deadline := time.Now().Add(limit)
	for finished() < total {
		now := time.Since(p.start).Nanoseconds()
		if n := min(32, total-launched, maxInFlight-(launched-finished())); n > 0 && p.c.Resolved() {
			launched += p.c.Launch(now, n)
		}
		p.c.Poll(now)
		p.s.Poll(now)
		if time.Now().After(deadline) {
			t.Fatalf("not done after %v, %d launched\nclient %+v\nserver %+v", limit, launched, p.c.Counters(), p.s.Counters())
		}
	}
}

func TestRingPairFramesBothWays(t *testing.T) {
	a, b := ringPair(t)
	const n = 20000 // over twice each pool
	frames := make([][]byte, dpdk.MaxBurst)
	for _, dir := range [][2]*dpdk.Link{{a, b}, {b, a}} {
		src, dst := dir[0], dir[1]
		sent, got := 0, 0
		for got < n {
			if sent < n {
				k := 0
				for ; k < min(len(frames), n-sent); k++ {
					f := src.Buffer()
					if f == nil {
						t.Fatalf("Buffer = nil after %d sent", sent)
					}
					size := 60 + (sent+k)%1455
					for i := range size {
						f[i] = byte(sent + k + i)
					}
					frames[k] = f[:size]
				}
				if s := src.Transmit(frames[:k]); s != k {
					t.Fatalf("Transmit(%d) = %d: %+v", k, s, src.Counters())
				}
				sent += k
			}
			k := dst.Receive(frames)
			for _, f := range frames[:k] {
				if want := 60 + got%1455; len(f) != want || f[0] != byte(got) || f[len(f)-1] != byte(got+want-1) {
					t.Fatalf("frame %d: %d bytes starting %d; want %d starting %d", got, len(f), f[0], want, byte(got))
				}
				got++
			}
		}
	}
	for _, l := range []*dpdk.Link{a, b} {
		if c := l.Counters(); c.TxFrames != n || c.RxFrames != n || c.TxDropped != 0 || c.TxNoBuffer != 0 {
			t.Errorf("port %d counters %+v; want %d each way, no drop", l.PortID(), c, n)
		}
		// Every mbuf is back but the transmit cache's and the last
		// burst lent by Receive: at most two bursts.
		if st, err := l.Stats(); err != nil || st.PoolFree < 8192-2*dpdk.MaxBurst {
			t.Errorf("port %d: %d mbufs free of 8,192 (%v); want all but two bursts", l.PortID(), st.PoolFree, err)
		}
	}
}

func TestRingPairShortConnections(t *testing.T) {
	const conns = 5000
	p := newStackPair(t, stack.Config{PortMin: 10000, PortMax: 10999}, stack.Config{})
	p.run(t, conns, 30*time.Second, func() int { return int(min(p.c.Counters().SocketsClosed, p.s.Counters().SocketsClosed)) })
	c, s := p.c.Counters(), p.s.Counters()
	if c.SocketsOpened != conns || c.HTTP2xx != conns || c.SocketsFailed != 0 || c.RstIn != 0 || c.RetransSyn+c.RetransData+c.RetransFin != 0 {
		t.Errorf("client %+v; want %d opened, %d 2xx, no failure, reset or retransmission", c, conns, conns)
	}
	if s.SocketsOpened != conns || s.RstIn != 0 {
		t.Errorf("server %+v; want %d opened, no reset", s, conns)
	}
}

func TestRingPairHeldConnections(t *testing.T) {
	const conns = 20000
	p := newStackPair(t, stack.Config{PortMin: 10000, PortMax: 10000 + conns - 1, Hold: true, RequestsPerConn: 2}, stack.Config{})
	p.run(t, conns, 40*time.Second, func() int { return int(p.c.Counters().HTTP2xx / 2) })
	if c, s := p.c.Counters(), p.s.Counters(); c.SocketsCurrent != conns || s.SocketsCurrent != conns || c.SocketsFailed != 0 {
		t.Errorf("client %+v\nserver %+v; want %d held on both sides", c, s, conns)
	}
}

// nullClient is a client stack over a null device (transmit discards,
// receive makes frames of garbage) with a next hop set by hand: no
// packet I/O at all, only the stack, the engine's loop and the link's C
// calls.
func nullClient(t testing.TB, port string) (*stack.Stack, *dpdk.Link) {
	t.Helper()
	initEAL(t)
	l := open(t, dpdk.Config{Port: port})
	s, err := stack.New(stack.Config{Mode: stack.Client, Link: l, ClientIP: clientIP, ClientIPs: 100,
		ServerIP: serverIP, PortMin: 1024, PortMax: 65535, RetransmitTimeout: time.Hour, MaxRetransmitTimeout: time.Hour})
	if err != nil {
		t.Fatalf("stack.New = %v", err)
	}
	s.SetNextHop(wire.MAC{2, 0, 0, 0, 0, 1})
	return s, l
}

// nullRun launches total connections (one SYN each) through the engine's
// loop as fast as it goes and returns the time taken.
func nullRun(t testing.TB, s *stack.Stack, l *dpdk.Link, total int) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	loop := &engine.Loop{Stack: s, Total: total, MaxOpen: total, Burst: 64, Waiter: l,
		Until: func(_ *stack.Counters, n int) bool { return n == total }}
	start := time.Now()
	if err := loop.Run(ctx); err != nil {
		t.Fatalf("loop = %v after %d launches: %+v", err, loop.Launched(), s.Counters())
	}
	return time.Since(start)
}

func TestNullEngineSmoke(t *testing.T) {
	const total = 50000
	s, l := nullClient(t, "net_null0")
	nullRun(t, s, l, total)
	c, lc := s.Counters(), l.Counters()
	if c.SocketsOpened != total || lc.TxFrames != total || lc.TxDropped != 0 || lc.RxFrames == 0 {
		t.Errorf("stack %+v\nlink %+v; want %d SYNs sent, frames received", c, lc, total)
	}
	if st, err := l.Stats(); err != nil || st.PortTxPackets != total {
		t.Errorf("port stats %+v, %v; want %d sent", st, err, total)
	}
}

// BenchmarkNullStack: the stack's packets per second on one core over a
// null device: one SYN out per op (a new connection each, 100 addresses x
// 64,512 ports), while every turn also receives and drops a burst of the
// device's garbage frames.
func BenchmarkNullStack(b *testing.B) {
	s, l := nullClient(b, "net_null0")
	b.ReportAllocs()
	b.ResetTimer()
	el := nullRun(b, s, l, b.N)
	b.StopTimer()
	c := l.Counters()
	b.ReportMetric(float64(c.TxFrames)/el.Seconds(), "tx-pps")
	b.ReportMetric(float64(c.RxFrames)/el.Seconds(), "rx-pps")
	b.ReportMetric(float64(c.TxFrames+c.RxFrames)/el.Seconds(), "pps")
}

// BenchmarkRingPairShortConns: client and server stacks over a DPDK ring
// pair polled by one goroutine (both sides on one core), short
// connections (SYN, GET, 128-byte page, FIN), one per op: the figure to
// set beside the stack's own ceiling over its Go pipe.
func BenchmarkRingPairShortConns(b *testing.B) {
	p := newStackPair(b, stack.Config{PortMin: 10000, PortMax: 59999}, stack.Config{})
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	p.run(b, b.N, 60*time.Second, func() int { return int(p.c.Counters().SocketsClosed) })
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "conn/s")
	if c := p.c.Counters(); c.HTTP2xx != uint64(b.N) || c.SocketsFailed != 0 {
		b.Errorf("client %+v; want %d 2xx", c, b.N)
	}
}
