package lab_test

import (
	"context"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// testTimeout bounds every lab test's loops.
const testTimeout = 45 * time.Second

// labRTO is the stacks' retransmission setting in the lab. The stack's one
// fixed timeout has no backoff: on this shared 2-core VM (load 7-9, -race)
// queueing delay passes the default 200 ms, retransmissions add load and a
// run collapses; waiting 1 s and trying 8 times keeps the counts exact.
var labRTO = stack.Config{RetransmitTimeout: time.Second, MaxRetries: 8}

func ip4(s string) uint32 { return binary.BigEndian.Uint32(net.ParseIP(s).To4()) }

// openLink opens an AF_PACKET link on e inside its namespace, closed at
// cleanup. A 1 ms retire timeout keeps round trips short in tests; with it
// a block often holds a few frames only, so the ring has many small
// blocks: 1024 of 64 KiB hold a second of retirements.
func openLink(t testing.TB, e *lab.End, qdisc bool) *afpacket.Link {
	t.Helper()
	var l *afpacket.Link
	err := e.Netns.Do(func() error {
		var err error
		l, err = afpacket.Open(afpacket.Config{Index: e.Index, BlockSize: 64 << 10, Blocks: 1024, RetireTimeout: time.Millisecond, Qdisc: qdisc})
		return err
	})
	if err != nil {
		t.Fatalf("afpacket.Open(%s) = %v", e.Name, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// nginxIn starts nginx in the server namespace on lab.ServerIP.
func nginxIn(t testing.TB, p *lab.Pair, cfg testpeer.NginxConfig) *testpeer.Nginx {
	t.Helper()
	cfg.Host, cfg.AccessLog = lab.ServerIP, true
	cfg.Wrap = []string{"ip", "netns", "exec", p.Server.Name}
	cfg.Dial = p.Server.Dial
	if cfg.Connections == 0 {
		cfg.Connections = 19000
	}
	return testpeer.StartNginx(t, cfg)
}

// outRsts returns the namespace's Tcp OutRsts.
func outRsts(t testing.TB, n *lab.Netns) int64 {
	t.Helper()
	m, err := n.SNMP("Tcp")
	if err != nil {
		t.Fatalf("%v", err)
	}
	return m["OutRsts"]
}

// kernelRun is the client stack over AF_PACKET against nginx.
type kernelRun struct {
	lab    *lab.Lab
	p      *lab.Pair
	link   *afpacket.Link
	nginx  *testpeer.Nginx
	rsts   [2]int64 // client and server namespaces' OutRsts before the run
	client *stack.Stack
}

func newKernelRun(t testing.TB, ncfg testpeer.NginxConfig, cfg stack.Config, qdisc bool) *kernelRun {
	t.Helper()
	l := newLab(t)
	p, err := l.KernelPair()
	if err != nil {
		t.Fatalf("KernelPair = %v", err)
	}
	r := &kernelRun{lab: l, p: p, link: openLink(t, p.Cicada, qdisc), nginx: nginxIn(t, p, ncfg)}
	// The readiness probe's connections (and the refused first try, one
	// reset) are the server namespace's only ones so far: let them end
	// before the baseline.
	if err := testpeer.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		out, err := p.Server.Output("ss", "-Htan", "exclude", "listening", "exclude", "time-wait")
		return err == nil && strings.TrimSpace(out) == ""
	}); err != nil {
		t.Fatalf("probe connections of nginx still open: %v", err)
	}
	r.rsts = [2]int64{outRsts(t, p.Client), outRsts(t, p.Server)}
	if cfg.RetransmitTimeout == 0 {
		cfg.RetransmitTimeout, cfg.MaxRetries = labRTO.RetransmitTimeout, labRTO.MaxRetries
	}
	cfg.Mode, cfg.Link = stack.Client, r.link
	cfg.ClientIP, cfg.ServerIP, cfg.ServerPort = ip4(lab.ClientIP), ip4(lab.ServerIP), uint16(r.nginx.Port)
	if r.client, err = stack.New(cfg); err != nil {
		t.Fatalf("stack.New = %v", err)
	}
	return r
}

// run drives the client until until holds, failing t at testTimeout.
func (r *kernelRun) run(t testing.TB, rate float64, total int, until func(c *stack.Counters, launched int) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	// A failed connection ends the run at once: check reports it.
	failFast := func(c *stack.Counters, n int) bool { return until(c, n) || c.SocketsFailed > 0 }
	loop := &engine.Loop{Stack: r.client, Rate: rate, Total: total, Waiter: r.link, Until: failFast}
	if err := loop.Run(ctx); err != nil || r.client.Counters().SocketsFailed > 0 {
		t.Fatalf("loop (%v) after %d launches\nclient %+v\nlink %+v", err, loop.Launched(), r.client.Counters(), r.link.Stats())
	}
}

// check asserts nginx answered want 200s, the stack counted want 2xx, no
// reset was received and neither namespace's kernel sent a reset.
func (r *kernelRun) check(t testing.TB, want int) {
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
	if got := [2]int64{outRsts(t, r.p.Client), outRsts(t, r.p.Server)}; got != r.rsts {
		ext, _ := r.p.Server.Output("nstat", "-a")
		t.Errorf("OutRsts (client, server namespace) %v; before %v\nclient %+v\nserver namespace:\n%s", got, r.rsts, c, ext)
	}
	if st := r.link.Stats(); st.KernelDrops != 0 || st.RxTruncated != 0 || st.RxMalformed != 0 || st.TxDropped != 0 {
		t.Errorf("link drops: %+v", st)
	}
}

func TestLabARPAndOneRequestToNginx(t *testing.T) {
	r := newKernelRun(t, testpeer.NginxConfig{}, stack.Config{PortMin: 10000, PortMax: 10009}, false)
	r.run(t, 1000, 1, func(c *stack.Counters, n int) bool { return n == 1 && c.SocketsClosed == 1 })
	c := r.client.Counters()
	if !r.client.Resolved() || c.ARPOut < 1 || c.ARPIn < 1 {
		t.Errorf("ARP: resolved %v, out %d, in %d", r.client.Resolved(), c.ARPOut, c.ARPIn)
	}
	// The stack answers the server namespace's ping for a client address.
	done := make(chan error, 1)
	go func() { done <- r.p.Server.Exec("ping", "-c", "1", "-W", "5", lab.ClientIP) }()
	r.run(t, 0, 0, func(c *stack.Counters, _ int) bool {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ping %s: %v", lab.ClientIP, err)
			}
			return true
		default:
			return false
		}
	})
	if c := r.client.Counters(); c.ICMPIn != 1 || c.ICMPOut != 1 {
		t.Errorf("ICMP in %d out %d; want 1 1", c.ICMPIn, c.ICMPOut)
	}
	r.check(t, 1)
}

func TestLabKeepAliveConnectionsToNginx(t *testing.T) {
	const conns = 10000
	r := newKernelRun(t, testpeer.NginxConfig{}, stack.Config{PortMin: 10000, PortMax: 10000 + conns - 1,
		RequestsPerConn: 2, Hold: true}, false)
	r.run(t, 2500, conns, func(c *stack.Counters, n int) bool { return n == conns && c.HTTP2xx == 2*conns })
	if c := r.client.Counters(); c.SocketsCurrent != conns || c.SocketsClosed != 0 {
		t.Errorf("held %d, closed %d; want %d, 0", c.SocketsCurrent, c.SocketsClosed, conns)
	}
	est, err := r.p.Server.Output("ss", "-Htn", "state", "established", "sport", "= :"+itoa(r.nginx.Port))
	if n := strings.Count(est, "\n"); err != nil || n != conns {
		t.Errorf("server namespace has %d established connections (%v); want %d", n, err, conns)
	}
	r.check(t, 2*conns)
}

func TestLabShortConnectionsToNginx(t *testing.T) {
	const conns = 10000
	r := newKernelRun(t, testpeer.NginxConfig{}, stack.Config{PortMin: 10000, PortMax: 10999}, false)
	r.run(t, 2500, conns, func(c *stack.Counters, n int) bool { return n == conns && c.SocketsClosed == conns })
	// Ports are reused in turn; a record still busy is skipped (dperf's
	// rule), so only the opened count is exact.
	if c := r.client.Counters(); c.SocketsOpened != conns || c.SocketsClosed != conns {
		t.Errorf("opened %d, closed %d; want %d each", c.SocketsOpened, c.SocketsClosed, conns)
	}
	r.check(t, conns)
}

func TestLabLargeResponseFromNginx(t *testing.T) {
	const conns, size = 20, 200 << 10
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(strings.Repeat("x", size)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newKernelRun(t, testpeer.NginxConfig{Root: dir}, stack.Config{PortMin: 10000, PortMax: 10099}, false)
	r.run(t, 100, conns, func(c *stack.Counters, n int) bool { return n == conns && c.SocketsClosed == conns })
	if c := r.client.Counters(); c.BytesIn < conns*size {
		t.Errorf("received %d bytes; want at least %d", c.BytesIn, conns*size)
	}
	r.check(t, conns)
}

func TestLabShortConnectionsToNginxUnderLoss(t *testing.T) {
	const conns = 2000
	// One port per connection: reusing a port while nginx still
	// retransmits its FIN to the previous one is another test's matter.
	r := newKernelRun(t, testpeer.NginxConfig{}, stack.Config{PortMin: 10000, PortMax: 10000 + conns - 1}, false)
	dropped := r.injectLoss(t, 1)
	r.run(t, 1000, conns, func(c *stack.Counters, n int) bool { return n == conns && c.SocketsClosed == conns })
	dropped()
	c := r.client.Counters()
	if c.RetransSyn+c.RetransData+c.RetransFin+c.FastRetransmit == 0 && c.DropOutOfOrder == 0 {
		t.Errorf("no retransmission or gap under 1%% loss: %+v", c)
	}
	r.check(t, conns)
}

// stackRun is a client stack and a server stack over AF_PACKET in two
// namespaces; the server's loop runs on its own goroutine until stop.
type stackRun struct {
	client, server *stack.Stack
	clink, slink   *afpacket.Link
	stop           func() stack.Counters
}

func newStackRun(t testing.TB, cc, sc stack.Config) *stackRun {
	t.Helper()
	l := newLab(t)
	p, err := l.StackPair()
	if err != nil {
		t.Fatalf("StackPair = %v", err)
	}
	r := &stackRun{clink: openLink(t, p.Cicada, false), slink: openLink(t, p.Peer, false)}
	for _, c := range []*stack.Config{&cc, &sc} {
		c.ClientIP, c.ServerIP = ip4(lab.ClientIP), ip4(lab.ServerIP)
		c.PortMin, c.PortMax = cc.PortMin, cc.PortMax
	}
	cc.Mode, cc.Link, sc.Mode, sc.Link = stack.Client, r.clink, stack.Server, r.slink
	if r.client, err = stack.New(cc); err != nil {
		t.Fatalf("stack.New(client) = %v", err)
	}
	if r.server, err = stack.New(sc); err != nil {
		t.Fatalf("stack.New(server) = %v", err)
	}
	r.stop = serveInBackground(t, r.server, r.slink)
	return r
}

func TestLabStackHoldsConnectionsPastNginxFileLimit(t *testing.T) {
	const conns = 50000 // nginx stops near 20,000 open files per process here
	cc := labRTO
	cc.PortMin, cc.PortMax, cc.Hold = 10000, 10000+conns-1, true
	r := newStackRun(t, cc, labRTO)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	// At most 1,000 launched connections await their response
	// (lab.Driver's window), so the ramp runs as fast as the shared cores
	// allow without queueing past the retransmission timeout. Driver
	// keeps one clock; engine.Loop restarts its clock and launch count
	// on every Run, which broke the former steps of one Run each.
	start := time.Now()
	d := &lab.Driver{Stack: r.client, Waiter: r.clink, Window: 1000}
	err := d.Run(ctx, conns, func(c *stack.Counters) bool {
		return d.Launched() == conns && c.HTTP2xx == conns || c.SocketsFailed > 0
	})
	ramp := time.Since(start)
	s := r.stop()
	c := r.client.Counters()
	if err != nil || c.SocketsFailed != 0 {
		t.Fatalf("driver (%v) after %d launches\nclient %+v\nserver %+v\nlinks %+v\n%+v", err, d.Launched(), c, s, r.clink.Stats(), r.slink.Stats())
	}
	t.Logf("%d connections held in %v; client table %d records", conns, ramp.Round(time.Millisecond), r.client.Conns())
	check := []struct {
		name      string
		got, want uint64
	}{
		{"client SocketsCurrent", c.SocketsCurrent, conns},
		{"client HTTP2xx", c.HTTP2xx, conns},
		{"client RstIn", c.RstIn, 0},
		{"server SocketsCurrent", s.SocketsCurrent, conns},
		{"server Served200", s.Served200, conns},
		{"server RstIn", s.RstIn, 0},
		{"server RstOut", s.RstOut, 0},
	}
	for _, w := range check {
		if w.got != w.want {
			t.Errorf("%s = %d; want %d", w.name, w.got, w.want)
		}
	}
	for _, l := range []*afpacket.Link{r.clink, r.slink} {
		if st := l.Stats(); st.KernelDrops != 0 || st.TxDropped != 0 {
			t.Errorf("link drops: %+v", st)
		}
	}
}

// serveInBackground runs server's loop until the returned stop is called
// (or the test ends); stop returns the server's final counters, the same
// on every call.
func serveInBackground(t testing.TB, server *stack.Stack, w engine.Waiter) (stop func() stack.Counters) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout+5*time.Second)
	done := make(chan stack.Counters, 1)
	go func() {
		_ = (&engine.Loop{Stack: server, Waiter: w}).Run(ctx)
		done <- server.Counters()
	}()
	var final *stack.Counters
	stop = func() stack.Counters {
		if final == nil {
			cancel()
			c := <-done
			final = &c
		}
		return *final
	}
	t.Cleanup(func() { stop() })
	return stop
}

// injectLoss makes nftables in the server namespace drop percent % of
// what nginx's kernel receives and of what it sends (this kernel has no
// sch_netem). check, called after the run, fails t if nothing was dropped.
func (r *kernelRun) injectLoss(t testing.TB, percent int) (check func()) {
	t.Helper()
	for _, rule := range [][]string{
		{"add", "table", "inet", "loss"},
		{"add", "chain", "inet", "loss", "in", "{ type filter hook input priority 0; }"},
		{"add", "chain", "inet", "loss", "out", "{ type filter hook output priority 0; }"},
		{"add", "rule", "inet", "loss", "in", "tcp", "dport", itoa(r.nginx.Port), "numgen", "random", "mod", "100", "<", itoa(percent), "counter", "drop"},
		{"add", "rule", "inet", "loss", "out", "tcp", "sport", itoa(r.nginx.Port), "numgen", "random", "mod", "100", "<", itoa(percent), "counter", "drop"},
	} {
		if err := r.p.Server.Exec("nft", rule...); err != nil {
			testpeer.Missing(t, "nftables: %v", err)
		}
	}
	return func() {
		t.Helper()
		if out, err := r.p.Server.Output("nft", "list", "table", "inet", "loss"); err != nil || strings.Count(out, "packets 0 ") == 2 {
			t.Errorf("nftables dropped nothing (%v):\n%s", err, out)
		}
	}
}
