//go:build dpdk && cgo && linux

package dpdk_test

import (
	"context"
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/link/afxdp"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// labTimeout bounds every lab loop.
const labTimeout = 45 * time.Second

// labIdle is the DPDK links' idle sleep in the lab: on this shared 2-core
// machine a spinning core would take the CPU nginx and the kernel's veth
// need.
const labIdle = 50 * time.Microsecond

func ip4(s string) uint32 { return binary.BigEndian.Uint32(net.ParseIP(s).To4()) }

// labLink is a link under test on the lab's host end, with the waiter the
// loop idles on and its drop counts.
type labLink struct {
	link.Link
	engine.Waiter
	drops func() string // empty when the link dropped nothing
}

// linkKinds opens each kind of link on the host end of a HostPair: DPDK's
// af_packet and af_xdp virtual devices, and the pure-Go links beside them.
var linkKinds = map[string]func(t testing.TB, e *lab.End) labLink{
	"dpdk-af_packet": func(t testing.TB, e *lab.End) labLink {
		return dpdkLink(t, "net_af_packet_"+e.Name+",iface="+e.Name+",qpairs=1,framecnt=4096", labIdle)
	},
	// The same polling without a pause, as DPDK programs run.
	"dpdk-af_packet-poll": func(t testing.TB, e *lab.End) labLink {
		return dpdkLink(t, "net_af_packet_"+e.Name+",iface="+e.Name+",qpairs=1,framecnt=4096", 0)
	},
	"dpdk-af_xdp": func(t testing.TB, e *lab.End) labLink {
		return dpdkLink(t, "net_af_xdp_"+e.Name+",iface="+e.Name+",start_queue=0,queue_count=1,force_copy=1,busy_budget=0", labIdle)
	},
	"afpacket": func(t testing.TB, e *lab.End) labLink {
		l, err := afpacket.Open(afpacket.Config{Index: e.Index, BlockSize: 64 << 10, Blocks: 1024, RetireTimeout: time.Millisecond})
		if err != nil {
			t.Fatalf("afpacket.Open(%s) = %v", e.Name, err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return labLink{Link: l, Waiter: l, drops: func() string {
			if st := l.Stats(); st.KernelDrops != 0 || st.RxTruncated != 0 || st.RxMalformed != 0 || st.TxDropped != 0 {
				return strings.TrimSpace(strings.ReplaceAll(strconv.Quote(strings.TrimSpace(fmtStats(st))), `\n`, " "))
			}
			return ""
		}}
	},
	"afxdp": func(t testing.TB, e *lab.End) labLink {
		l, err := afxdp.Open(afxdp.Config{Interface: e.Name})
		if err != nil {
			t.Fatalf("afxdp.Open(%s) = %v", e.Name, err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return labLink{Link: l, Waiter: waitFunc(func(d time.Duration) { _ = l.Wait(d) }), drops: func() string {
			st, err := l.Stats()
			if err != nil || st.KernelRxDropped != 0 || l.Counters().TxDropped != 0 {
				return fmtStats(st) + " " + errString(err)
			}
			return ""
		}}
	},
}

// waitFunc adapts afxdp.Link's Wait, which returns an error.
type waitFunc func(time.Duration)

func (f waitFunc) Wait(d time.Duration) { f(d) }

func dpdkLink(t testing.TB, dev string, idle time.Duration) labLink {
	t.Helper()
	initEAL(t)
	l, err := dpdk.Open(dpdk.Config{Device: dev, IdleSleep: idle})
	if err != nil {
		t.Fatalf("dpdk.Open(%s) = %v", dev, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return labLink{Link: l, Waiter: l, drops: func() string {
		st, err := l.Stats()
		if err != nil || st.PortRxMissed != 0 || st.PortRxNoMbuf != 0 || st.PortRxErrors != 0 || st.PortTxErrors != 0 ||
			st.RxMultiSeg != 0 || l.Counters().TxDropped != 0 || l.Counters().TxNoBuffer != 0 {
			return fmtStats(st) + " " + errString(err)
		}
		return ""
	}}
}

// nginxRun is a client stack over a link on the lab's host end against
// nginx in the server namespace.
type nginxRun struct {
	hp     *lab.HostPair
	link   labLink
	nginx  *testpeer.Nginx
	rsts   int64 // the server namespace's OutRsts before the run
	client *stack.Stack
}

func newNginxRun(t testing.TB, kind string, cfg stack.Config) *nginxRun {
	t.Helper()
	hp, err := labtest.New(t).HostPair()
	if err != nil {
		t.Fatalf("HostPair = %v", err)
	}
	r := &nginxRun{hp: hp, link: linkKinds[kind](t, hp.Cicada)}
	r.nginx = testpeer.StartNginx(t, testpeer.NginxConfig{Host: lab.ServerIP, AccessLog: true, Connections: 19000,
		Wrap: []string{"ip", "netns", "exec", hp.Server.Name}, Dial: hp.Server.Dial})
	// The readiness probe's connections must end before the baseline.
	if err := testpeer.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		out, err := hp.Server.Output("ss", "-Htan", "exclude", "listening", "exclude", "time-wait")
		return err == nil && strings.TrimSpace(out) == ""
	}); err != nil {
		t.Fatalf("probe connections of nginx still open: %v", err)
	}
	r.rsts = outRsts(t, hp.Server)
	cfg.RetransmitTimeout, cfg.MaxRetries = time.Second, 8
	cfg.Mode, cfg.Link = stack.Client, r.link.Link
	cfg.ClientIP, cfg.ServerIP, cfg.ServerPort = ip4(lab.ClientIP), ip4(lab.ServerIP), uint16(r.nginx.Port)
	if r.client, err = stack.New(cfg); err != nil {
		t.Fatalf("stack.New = %v", err)
	}
	return r
}

func outRsts(t testing.TB, n *lab.Netns) int64 {
	t.Helper()
	m, err := n.SNMP("Tcp")
	if err != nil {
		t.Fatalf("%v", err)
	}
	return m["OutRsts"]
}

// run drives the client until until holds (or a connection fails),
// failing t at labTimeout; it returns the time taken.
func (r *nginxRun) run(t testing.TB, loop *engine.Loop, until func(c *stack.Counters, launched int) bool) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), labTimeout)
	defer cancel()
	loop.Stack, loop.Waiter = r.client, r.link.Waiter
	loop.Until = func(c *stack.Counters, n int) bool { return until(c, n) || c.SocketsFailed > 0 }
	start := time.Now()
	if err := loop.Run(ctx); err != nil || r.client.Counters().SocketsFailed > 0 {
		t.Fatalf("loop (%v) after %d launches\nclient %+v\nlink %+v %s", err, loop.Launched(), r.client.Counters(), r.link.Counters(), r.link.drops())
	}
	return time.Since(start)
}

// check asserts nginx answered want 200s, the stack counted want 2xx,
// received no reset, the server namespace's kernel sent none and the
// link dropped nothing. (The host namespace's OutRsts is the whole
// machine's: not asserted; the host end holds no address and the lab's
// blackhole route covers the range.)
func (r *nginxRun) check(t testing.TB, want int) {
	t.Helper()
	c := r.client.Counters()
	if c.HTTP2xx != uint64(want) || c.RstIn != 0 || c.HTTPErrors != 0 || c.SocketsFailed != 0 {
		t.Errorf("client 2xx %d (want %d), RstIn %d, HTTPErrors %d, failed %d; want zeros", c.HTTP2xx, want, c.RstIn, c.HTTPErrors, c.SocketsFailed)
	}
	var by map[string]int
	if err := testpeer.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		_, by, _ = r.nginx.Requests()
		return by["200"] >= want
	}); err != nil || by["200"] != want || len(by) != 1 {
		t.Errorf("nginx logged %v; want exactly %d 200s", by, want)
	}
	if got := outRsts(t, r.hp.Server); got != r.rsts {
		t.Errorf("server namespace OutRsts %d; before %d", got, r.rsts)
	}
	if d := r.link.drops(); d != "" {
		t.Errorf("link drops: %s", d)
	}
}

func TestLabDPDKShortConnectionsToNginx(t *testing.T) {
	for _, c := range []struct {
		kind  string
		conns int
		rate  float64
	}{
		{"dpdk-af_packet", 5000, 2500},
		{"dpdk-af_xdp", 5000, 2500},
	} {
		t.Run(c.kind, func(t *testing.T) {
			r := newNginxRun(t, c.kind, stack.Config{PortMin: 10000, PortMax: 10999})
			r.run(t, &engine.Loop{Rate: c.rate, Total: c.conns}, func(s *stack.Counters, n int) bool {
				return n == c.conns && s.SocketsClosed == uint64(c.conns)
			})
			if s := r.client.Counters(); s.SocketsOpened != uint64(c.conns) || s.SocketsClosed != uint64(c.conns) || !r.client.Resolved() {
				t.Errorf("opened %d, closed %d, resolved %v; want %d each, resolved", s.SocketsOpened, s.SocketsClosed, r.client.Resolved(), c.conns)
			}
			r.check(t, c.conns)
		})
	}
}

func TestLabDPDKHeldConnectionsToNginx(t *testing.T) {
	const conns = 5000
	for _, kind := range []string{"dpdk-af_packet", "dpdk-af_xdp"} {
		t.Run(kind, func(t *testing.T) {
			r := newNginxRun(t, kind, stack.Config{PortMin: 10000, PortMax: 10000 + conns - 1, RequestsPerConn: 2, Hold: true})
			r.run(t, &engine.Loop{Rate: 2500, Total: conns}, func(c *stack.Counters, n int) bool {
				return n == conns && c.HTTP2xx == 2*conns
			})
			if c := r.client.Counters(); c.SocketsCurrent != conns || c.SocketsClosed != 0 {
				t.Errorf("held %d, closed %d; want %d, 0", c.SocketsCurrent, c.SocketsClosed, conns)
			}
			est, err := r.hp.Server.Output("ss", "-Htn", "state", "established", "sport", "= :"+strconv.Itoa(r.nginx.Port))
			if n := strings.Count(est, "\n"); err != nil || n != conns {
				t.Errorf("server namespace has %d established connections (%v); want %d", n, err, conns)
			}
			r.check(t, 2*conns)
		})
	}
}

// BenchmarkLabShortConns: new connections per second (SYN, GET, nginx's
// page, FIN; at most 2,048 open), one client core over each kind of link
// on the same lab topology, side by side in one run:
// -bench LabShortConns/ prints dpdk-af_packet and dpdk-af_xdp (idle
// sleep 50 us), dpdk-af_packet-poll (no sleep), afpacket and afxdp.
func BenchmarkLabShortConns(b *testing.B) {
	for _, kind := range []string{"dpdk-af_packet", "dpdk-af_xdp", "dpdk-af_packet-poll", "afpacket", "afxdp"} {
		b.Run(kind, func(b *testing.B) {
			r := newNginxRun(b, kind, stack.Config{PortMin: 10000, PortMax: 59999})
			b.ResetTimer()
			el := r.run(b, &engine.Loop{MaxOpen: 2048, Total: b.N}, func(c *stack.Counters, n int) bool {
				return n == b.N && c.SocketsClosed == uint64(b.N)
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/el.Seconds(), "conn/s")
			b.ReportMetric(0, "ns/op")
			r.check(b, b.N)
		})
	}
}

// BenchmarkLabHeldConns: b.N keep-alive connections opened and held (one
// request each), launched in steps of 1,000, each once the previous has
// its responses (as the lab's 50,000-connection test does: a burst of
// b.N SYNs overflows nginx's accept queue and the run measures the
// retransmission timeout), per kind of link; reports the ramp's
// connections per second and the number held. -benchtime 10000x: nginx
// here holds about 19,000 files.
func BenchmarkLabHeldConns(b *testing.B) {
	const step = 1000
	for _, kind := range []string{"dpdk-af_packet", "dpdk-af_xdp", "afpacket", "afxdp"} {
		b.Run(kind, func(b *testing.B) {
			if b.N > 15000 {
				b.Fatalf("%d held connections: nginx here holds about 19,000 files", b.N)
			}
			r := newNginxRun(b, kind, stack.Config{PortMin: 10000, PortMax: 10000 + uint16(b.N) - 1, Hold: true})
			b.ResetTimer()
			var el time.Duration
			for done := 0; done < b.N; {
				n := min(step, b.N-done)
				done += n
				el += r.run(b, &engine.Loop{MaxOpen: b.N, Rate: 1e9, Total: n}, func(c *stack.Counters, k int) bool {
					return k == n && c.HTTP2xx == uint64(done)
				})
			}
			b.StopTimer()
			c := r.client.Counters()
			b.ReportMetric(float64(b.N)/el.Seconds(), "conn/s")
			b.ReportMetric(float64(c.SocketsCurrent), "held")
			b.ReportMetric(0, "ns/op")
			r.check(b, b.N)
		})
	}
}
