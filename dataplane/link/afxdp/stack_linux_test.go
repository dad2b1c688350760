package afxdp

// This test reaches up to dataplane/stack (a test-only import; the package
// itself depends on link and wire only): the stack's client over an AF_XDP
// link in one namespace against the stack's server over a second AF_XDP link
// in the other.

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/stack"
)

// The addresses exist only in the stacks' frames: no kernel on the path
// owns or routes them (neither namespace has an address or a route, and the
// XDP programs steal every frame), and they lie in the lab range
// 198.19.0.0/16 all the same.
const (
	labClientIP = 198<<24 | 19<<16 | 1<<8 | 1 // 198.19.1.1
	labServerIP = 198<<24 | 19<<16 | 2<<8 | 1 // 198.19.2.1
)

// stackPair opens an AF_XDP link on each end of the lab and a client
// stack on A, a server stack on B, sharing ports client ports.
func stackPair(t testing.TB, l *lab, ports int) (ca, sb *Link, client, server *stack.Stack) {
	t.Helper()
	cfg := Config{FillRing: 256, CompletionRing: 256, RXRing: 256, TXRing: 256}
	ca = l.openA(t, cfg)
	if err := inNetns(l.nsB, func() (err error) {
		c := cfg
		c.Interface = l.ifB
		sb, err = Open(c)
		return err
	}); err != nil {
		t.Fatalf("Open in %s: %v", l.nsB, err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	common := stack.Config{ClientIP: labClientIP, ServerIP: labServerIP,
		PortMin: 40000, PortMax: uint16(40000 + ports - 1)}
	cc, sc := common, common
	cc.Mode, cc.Link = stack.Client, ca
	sc.Mode, sc.Link = stack.Server, sb
	var err error
	if client, err = stack.New(cc); err != nil {
		t.Fatal(err)
	}
	if server, err = stack.New(sc); err != nil {
		t.Fatal(err)
	}
	return ca, sb, client, server
}

// runShort launches n short connections, 8 per turn, polling both stacks
// with the real clock until both closed n sockets (at most 60 s), and
// returns the time taken.
func runShort(t testing.TB, client, server *stack.Stack, n int) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	opened := 0
	for turn := 0; ; turn++ {
		now := int64(time.Since(start))
		client.Poll(now)
		server.Poll(now)
		if opened < n {
			opened += client.Launch(now, min(8, n-opened))
		}
		c, s := client.Counters(), server.Counters()
		if opened == n && c.SocketsClosed == uint64(n) && s.SocketsClosed == uint64(n) {
			return time.Since(start)
		}
		if time.Now().After(deadline) || turn > 500_000_000 {
			t.Fatalf("after %v: opened %d\nclient %+v\nserver %+v", time.Since(start), opened, c, s)
		}
	}
}

// TestStackShortConnections runs a few hundred short connections (SYN, GET,
// 128-byte page, FIN) from the stack's client to its server across the veth,
// both over AF_XDP, polled by one goroutine with the real clock: every
// response a 2xx, every socket closed on both sides, no reset, no failure.
func TestStackShortConnections(t *testing.T) {
	l := newLab(t)
	const n, ports = 300, 100 // ports reused three times each
	ca, sb, client, server := stackPair(t, l, ports)
	elapsed := runShort(t, client, server, n)
	c, s := client.Counters(), server.Counters()
	for _, w := range []struct {
		name      string
		got, want uint64
	}{
		{"client HTTP2xx", c.HTTP2xx, n}, {"client SocketsFailed", c.SocketsFailed, 0},
		{"client HTTPErrors", c.HTTPErrors, 0}, {"client RstIn", c.RstIn, 0}, {"client RstOut", c.RstOut, 0},
		{"server Served200", s.Served200, n}, {"server SocketsFailed", s.SocketsFailed, 0},
		{"server RstOut", s.RstOut, 0}, {"client ARPOut", c.ARPOut, 1},
		{"client DropNoTxBuffer", c.DropNoTxBuffer, 0}, {"server DropNoTxBuffer", s.DropNoTxBuffer, 0},
		// Nothing else is on the wire and nothing is lost on it.
		{"server link RxFrames", sb.Counters().RxFrames, ca.Counters().TxFrames},
		{"client link RxFrames", ca.Counters().RxFrames, sb.Counters().TxFrames},
		{"client link TxFrames", ca.Counters().TxFrames, c.PktsOut},
	} {
		if w.got != w.want {
			t.Errorf("%s = %d, want %d", w.name, w.got, w.want)
		}
	}
	t.Logf("%d connections in %v; retransmits client %d server %d; client link %+v",
		n, elapsed, c.RetransSyn+c.RetransData+c.RetransFin, s.RetransSyn+s.RetransData+s.RetransFin,
		ca.Counters())
}

// BenchmarkStackShortConns measures short connections per second (SYN, GET,
// 128-byte page, FIN) between the stack's client and server over two AF_XDP
// links on the veth, one goroutine polling both sides (so one core carries
// client, server and the kernel's veth work). Run with e.g. -benchtime
// 100000x.
func BenchmarkStackShortConns(b *testing.B) {
	l := newLab(b)
	_, _, client, server := stackPair(b, l, 10000)
	b.ResetTimer()
	el := runShort(b, client, server, b.N)
	b.StopTimer()
	c := client.Counters()
	if c.HTTP2xx != uint64(b.N) {
		b.Errorf("HTTP2xx %d of %d (failed %d)", c.HTTP2xx, b.N, c.SocketsFailed)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "conn/s")
	b.ReportMetric(float64(c.RetransSyn+c.RetransData+c.RetransFin), "retransmits")
}
