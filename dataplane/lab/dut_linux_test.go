package lab_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// newDUT builds a device-under-test chain, skipping t where the lab cannot
// run and failing it (or skipping outside CI) where nftables is missing.
func newDUT(t testing.TB, cfg lab.DUTConfig) (*lab.Lab, *lab.DUT) {
	t.Helper()
	l := newLab(t)
	testpeer.RequirePeer(t, "nft")
	d, err := l.DUTChain(cfg)
	if err != nil {
		t.Fatalf("DUTChain = %v", err)
	}
	return l, d
}

func hostForward(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestLabDUTChainBuildsAndRemoves(t *testing.T) {
	before := hostForward(t)
	l, d := newDUT(t, lab.DUTConfig{ClientIPs: 3, Conns: 1000})
	if got := hostForward(t); got != before {
		t.Errorf("host net.ipv4.ip_forward %s; was %s", got, before)
	}
	for _, c := range []struct {
		n    *lab.Netns
		key  string
		want string
	}{
		{d.Device, "net.ipv4.ip_forward", "1"},
		{d.Device, "net.ipv4.conf." + d.DevClient.Name + ".forwarding", "1"},
		{d.Client, "net.ipv4.ip_forward", "0"},
		{d.Client, "net.ipv4.conf." + d.Cicada.Name + ".forwarding", "0"},
		{d.Server, "net.ipv4.ip_forward", "0"},
	} {
		if out, err := c.n.Output("sysctl", "-n", c.key); err != nil || strings.TrimSpace(out) != c.want {
			t.Errorf("%s in %s = %q (%v); want %s", c.key, c.n.Name, strings.TrimSpace(out), err, c.want)
		}
	}
	for _, e := range []*lab.End{d.Cicada, d.Peer} {
		if out, err := e.Netns.Output("ip", "-4", "addr", "show", "dev", e.Name); err != nil || strings.Contains(out, "inet ") {
			t.Errorf("stack end %s holds an address or is missing: %q %v", e.Name, out, err)
		}
	}
	neigh, err := d.Device.Output("ip", "neigh", "show", "nud", "permanent")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{lab.ServerIP + " dev " + d.DevServer.Name + " lladdr " + d.Peer.MAC.String(),
		"198.18.0.1 dev " + d.DevClient.Name + " lladdr " + d.Cicada.MAC.String(),
		"198.18.0.3 dev " + d.DevClient.Name + " lladdr " + d.Cicada.MAC.String()} {
		if !strings.Contains(neigh, want) {
			t.Errorf("device neighbours lack %q:\n%s", want, neigh)
		}
	}
	if strings.Contains(neigh, "198.18.0.4 ") {
		t.Errorf("device has a neighbour for a fourth client address:\n%s", neigh)
	}
	rules, err := d.Device.Output("nft", "list", "table", "inet", lab.DUTTable)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"policy drop", "ct state established,related", "ct state new tcp dport 80"} {
		if !strings.Contains(rules, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, rules)
		}
	}
	ct, err := d.Device.Conntrack()
	if err != nil || ct.Total != 0 || ct.Established != 0 {
		t.Errorf("fresh device conntrack %+v (%v); want empty", ct, err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if out := ipOut(t, "netns", "list"); strings.Contains(out, l.Prefix+"-") {
		t.Errorf("namespaces left after Close: %q", out)
	}
	if got := hostForward(t); got != before {
		t.Errorf("host net.ipv4.ip_forward %s after Close; was %s", got, before)
	}
}

func TestLabDUTChainRefusesWhatItCannotHonour(t *testing.T) {
	l := newLab(t)
	max, err := os.ReadFile("/proc/sys/net/netfilter/nf_conntrack_max")
	if err != nil {
		t.Skipf("no conntrack on this kernel: %v", err)
	}
	for _, tc := range []struct {
		name string
		cfg  lab.DUTConfig
	}{
		{"too many client addresses", lab.DUTConfig{ClientIPs: lab.MaxDUTClientIPs + 1}},
		{"negative client addresses", lab.DUTConfig{ClientIPs: -1}},
		{"negative limit", lab.DUTConfig{MaxNew: -1}},
		{"beyond nf_conntrack_max " + strings.TrimSpace(string(max)), lab.DUTConfig{Conns: 1 << 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := l.DUTChain(tc.cfg); !errors.Is(err, lab.ErrDUTConfig) {
				t.Errorf("DUTChain(%+v) = %v; want ErrDUTConfig", tc.cfg, err)
			}
		})
	}
}

// dutRun is a client stack and a server stack over AF_PACKET on either
// side of the device; the server's loop runs on its own goroutine.
type dutRun struct {
	d              *lab.DUT
	client, server *stack.Stack
	clink, slink   *afpacket.Link
	drv            *lab.Driver
	stop           func() stack.Counters
}

func newDUTRun(t testing.TB, dcfg lab.DUTConfig, cc stack.Config) *dutRun {
	t.Helper()
	_, d := newDUT(t, dcfg)
	r := &dutRun{d: d, clink: openLink(t, d.Cicada, false), slink: openLink(t, d.Peer, false)}
	sc := labRTO
	for _, c := range []*stack.Config{&cc, &sc} {
		c.ClientIP, c.ClientIPs, c.ServerIP, c.ServerPort = ip4(lab.ClientIP), dcfg.ClientIPs, ip4(lab.ServerIP), d.Port
		c.PortMin, c.PortMax = cc.PortMin, cc.PortMax
	}
	cc.Mode, cc.Link, cc.Gateway = stack.Client, r.clink, ip4(lab.Gateway)
	sc.Mode, sc.Link, sc.IdleTimeout = stack.Server, r.slink, 10*time.Minute
	var err error
	if r.client, err = stack.New(cc); err != nil {
		t.Fatalf("stack.New(client) = %v", err)
	}
	if r.server, err = stack.New(sc); err != nil {
		t.Fatalf("stack.New(server) = %v", err)
	}
	r.drv = &lab.Driver{Stack: r.client, Waiter: r.clink}
	r.stop = serveInBackground(t, r.server, r.slink)
	return r
}

// ramp launches total connections through r's client (window at most
// unanswered) and polls until each is answered or failed.
func (r *dutRun) ramp(ctx context.Context, total, window int) error {
	r.drv.Window = window
	return r.drv.Run(ctx, total, func(c *stack.Counters) bool {
		return r.drv.Launched() == total && lab.Answered(c) >= uint64(total)
	})
}

// seedProgram is the seed's scenario as a stack Program: one class, GET /,
// then a wait of an hour: every user holds its connection.
func seedProgram() *stack.Program {
	return &stack.Program{
		Requests: []stack.ProgramRequest{{Raw: stack.BuildRequest("GET", "/", lab.ServerIP, nil)}},
		Classes: []stack.ProgramClass{{Tasks: []stack.ProgramTask{{Weight: 1, Requests: []int{0}}},
			Wait: stack.Wait{Kind: stack.WaitConstant, Min: time.Hour}}},
	}
}

func TestLabDUTHoldsConnectionsThroughConntrack(t *testing.T) {
	const conns = 20000
	cc := labRTO
	cc.PortMin, cc.PortMax, cc.Program = 10000, 10000+conns-1, seedProgram()
	r := newDUTRun(t, lab.DUTConfig{ClientIPs: 1, Conns: conns}, cc)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	start := time.Now()
	if err := r.ramp(ctx, conns, 1000); err != nil {
		t.Fatalf("ramp: %v\nclient %+v", err, r.client.Counters())
	}
	ramp := time.Since(start)
	established := func(what string) lab.Conntrack {
		t.Helper()
		var ct lab.Conntrack
		err := testpeer.Poll(10*time.Second, 50*time.Millisecond, func() bool {
			var err error
			ct, err = r.d.Device.Conntrack()
			return err == nil && ct.Established == conns
		})
		if err != nil || ct.Total != conns || len(ct.Other) != 0 {
			t.Errorf("%s: device conntrack %+v; want %d entries, all ESTABLISHED", what, ct, conns)
		}
		return ct
	}
	ct := established("after the ramp")
	c := r.client.Counters()
	t.Logf("%d connections through the device in %v; device conntrack %+v", conns, ramp.Round(time.Millisecond), ct)

	// The second round: one more request on every held connection, no
	// new connection, and the device tracks the same entries.
	sent := r.client.SecondRound(r.drv.Now())
	if err := r.drv.Run(ctx, 0, func(c *stack.Counters) bool {
		return c.SecondRoundOK+c.SecondRoundFailed >= uint64(sent)
	}); err != nil {
		t.Fatalf("second round: %v\nclient %+v", err, r.client.Counters())
	}
	c2 := r.client.Counters()
	established("after the second round")
	s := r.stop()
	for _, w := range []struct {
		name      string
		got, want uint64
	}{
		{"client SocketsCurrent", c.SocketsCurrent, conns},
		{"client SocketsOpened", c.SocketsOpened, conns},
		{"client HTTP2xx", c.HTTP2xx, conns},
		{"client SocketsFailed", c.SocketsFailed, 0},
		{"client RstIn", c.RstIn, 0},
		{"client RstOut", c.RstOut, 0},
		{"second round sent", uint64(sent), conns},
		{"second round SecondRoundOK", c2.SecondRoundOK, conns},
		{"second round SecondRoundFailed", c2.SecondRoundFailed, 0},
		{"second round SynOut (unchanged)", c2.SynOut, c.SynOut},
		{"second round SocketsOpened (unchanged)", c2.SocketsOpened, conns},
		{"second round HTTP2xx", c2.HTTP2xx, 2 * conns},
		{"second round SocketsCurrent", c2.SocketsCurrent, conns},
		{"second round Reconnects", c2.Reconnects, 0},
		{"client RstIn at the end", c2.RstIn, 0},
		{"server SocketsCurrent", s.SocketsCurrent, conns},
		{"server SocketsOpened", s.SocketsOpened, conns},
		{"server Served200", s.Served200, 2 * conns},
		{"server RstIn", s.RstIn, 0},
		{"server RstOut", s.RstOut, 0},
	} {
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

func TestLabDUTConnectionLimitCountsFailed(t *testing.T) {
	const conns, limit = 300, 200
	cc := labRTO
	// A dropped SYN is retried MaxRetries times, the timeout doubling
	// from RetransmitTimeout: short here so that the refused connections
	// fail within a second.
	cc.RetransmitTimeout, cc.MaxRetries = 250*time.Millisecond, 2
	cc.PortMin, cc.PortMax, cc.Hold = 10000, 10000+conns-1, true
	r := newDUTRun(t, lab.DUTConfig{ClientIPs: 1, Conns: conns, MaxNew: limit}, cc)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := r.ramp(ctx, conns, 50); err != nil {
		t.Fatalf("ramp: %v\nclient %+v", err, r.client.Counters())
	}
	c := r.client.Counters()
	if c.HTTP2xx != limit || c.SocketsFailed != conns-limit || c.SocketsCurrent != limit {
		t.Errorf("2xx %d, failed %d, held %d; want %d, %d, %d\n%+v", c.HTTP2xx, c.SocketsFailed, c.SocketsCurrent, limit, conns-limit, limit, c)
	}
	// At least 2 retransmissions per refused connection (an admitted
	// one may retransmit its SYN too on a loaded machine), and the limit
	// rule dropped at least every refused SYN.
	if c.RetransSyn < 2*(conns-limit) {
		t.Errorf("SYN retransmissions %d; want at least %d (2 per refused connection)", c.RetransSyn, 2*(conns-limit))
	}
	rules, err := r.d.Device.Output("nft", "list", "table", "inet", lab.DUTTable)
	m := limitDrops.FindStringSubmatch(rules)
	if err != nil || m == nil {
		t.Fatalf("no limit rule with a counter (%v):\n%s", err, rules)
	}
	if n, _ := strconv.Atoi(m[1]); n < 3*(conns-limit) {
		t.Errorf("the limit rule dropped %d SYNs; want at least %d:\n%s", n, 3*(conns-limit), rules)
	}
}

var limitDrops = regexp.MustCompile(`ct count over [0-9]+ counter packets ([0-9]+) `)
