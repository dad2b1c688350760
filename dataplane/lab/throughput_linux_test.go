package lab_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// The throughput through a token bucket (issue 17): the lab's device chain
// with a tc tbf of tbfMbit towards the client (as cmd/cicada's
// TestBenchLabThroughputLimit), 64 KiB objects over tputConns keep-alive
// connections, four pairs in one run so that the figures stand side by side
// on the same machine at the same moment:
//
//	kernel client (wrk)  <- nginx           (the kernel's figure)
//	data-plane client    <- nginx           (the stack as a receiver)
//	kernel client (wrk)  <- data-plane server (the stack as a sender)
//	data-plane client    <- data-plane server
//
// The kernel client owns lab.ClientIP in the client namespace, the client
// stack the next address (the kernel drops frames for an address it does
// not hold, forwarding being off there); nginx owns lab.ServerIP in the
// server namespace, the server stack tputStackServer beside it.
const (
	tbfMbit         = 40
	tputObject      = 64 << 10
	tputConns       = 16
	tputStackServer = "198.18.1.2"
	tputWindow      = 3 * time.Second
)

// tputLab is the chain with its servers.
type tputLab struct {
	d      *lab.DUT
	clink  *afpacket.Link
	server *stack.Stack
	stop   func() stack.Counters
	ports  uint16 // the next client ports of a client stack
}

func newTputLab(t testing.TB) *tputLab {
	t.Helper()
	testpeer.RequirePeer(t, "wrk")
	testpeer.RequirePeer(t, "tc")
	_, d := newDUT(t, lab.DUTConfig{ClientIPs: 2, Conns: 200})
	r := &tputLab{d: d, ports: 20000}
	for _, c := range []struct {
		ns   *lab.Netns
		args []string
	}{
		{d.Client, []string{"addr", "add", lab.ClientIP + "/24", "dev", d.Cicada.Name}},
		{d.Client, []string{"route", "add", "198.18.1.0/24", "via", lab.Gateway}},
		{d.Server, []string{"addr", "add", lab.ServerNet, "dev", d.Peer.Name}},
		{d.Server, []string{"route", "add", lab.ClientRange, "via", lab.DUTServerGateway}},
		{d.Device, []string{"neigh", "replace", tputStackServer, "lladdr", d.Peer.MAC.String(), "nud", "permanent", "dev", d.DevServer.Name}},
	} {
		if err := c.ns.Exec("ip", c.args...); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(strings.Repeat("x", tputObject)), 0o644); err != nil {
		t.Fatal(err)
	}
	testpeer.StartNginx(t, testpeer.NginxConfig{Root: dir, Port: 80, Host: lab.ServerIP,
		Wrap: []string{"ip", "netns", "exec", d.Server.Name}, Dial: d.Server.Dial})
	r.clink = openLink(t, d.Cicada, false)
	slink := openLink(t, d.Peer, false)
	sc := labRTO
	sc.Mode, sc.Link, sc.IdleTimeout = stack.Server, slink, time.Minute
	sc.ClientIP, sc.ClientIPs, sc.PortMin, sc.PortMax = ip4(lab.ClientIP), 2, 10000, 60999
	sc.ServerIP, sc.ServerPort = ip4(tputStackServer), 80
	var err error
	if r.server, err = stack.New(sc); err != nil {
		t.Fatalf("stack.New(server) = %v", err)
	}
	r.stop = serveInBackground(t, r.server, slink)
	return r
}

// bucket sets the device's token bucket towards the client: tbfMbit with a
// queue of latency (400ms as cmd/cicada's test: 2 MB, more than every
// window in flight; 20ms: 132 KB, where windows overflow it).
func (r *tputLab) bucket(t testing.TB, latency string) {
	t.Helper()
	if err := r.d.Device.Exec("tc", "qdisc", "replace", "dev", r.d.DevClient.Name, "root", "tbf", "rate", strconv.Itoa(tbfMbit)+"mbit",
		"burst", "32kb", "latency", latency); err != nil {
		t.Fatal(err)
	}
}

// tputFigure is one pair's measurement.
type tputFigure struct {
	name string
	mbit float64 // object bytes (bodies) per second, in Mbit/s
	note string
}

var wrkReqs = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// tputPath is the 64 KiB object: nginx's file, the stack's /bytes/.
func tputPath(server string) string {
	if server == tputStackServer {
		return "/bytes/" + strconv.Itoa(tputObject)
	}
	return "/"
}

// kernelFetch runs wrk from the client namespace against server for
// tputWindow and returns the bodies' rate in Mbit/s.
func (r *tputLab) kernelFetch(t testing.TB, server string) float64 {
	t.Helper()
	out, err := r.d.Client.Output("wrk", "-t1", "-c"+strconv.Itoa(tputConns), "-d"+strconv.Itoa(int(tputWindow/time.Second))+"s",
		"--timeout", "5s", "http://"+server+":80"+tputPath(server))
	if err != nil {
		t.Fatalf("wrk: %v\n%s", err, out)
	}
	m := wrkReqs.FindStringSubmatch(out)
	if m == nil || strings.Contains(out, "Non-2xx") || strings.Contains(out, "Socket errors") {
		t.Fatalf("wrk against %s:\n%s", server, out)
	}
	rps, _ := strconv.ParseFloat(m[1], 64)
	return rps * tputObject * 8 / 1e6
}

// stackFetch runs tputConns keep-alive connections of a client stack
// against server: half a second to ramp, then tputWindow counted. It
// returns the bodies' rate in Mbit/s and the client's counters.
func (r *tputLab) stackFetch(t testing.TB, server string, ports uint16, cfg stack.Config) (float64, stack.Counters) {
	t.Helper()
	cfg.Mode, cfg.Link, cfg.Gateway = stack.Client, r.clink, ip4(lab.Gateway)
	cfg.ClientIP, cfg.ServerIP, cfg.ServerPort = ip4(lab.ClientIP)+1, ip4(server), 80
	cfg.PortMin, cfg.PortMax = ports, ports+tputConns-1
	cfg.RequestsPerConn = 65535
	cfg.Request = stack.BuildRequest("GET", tputPath(server), server, nil)
	if cfg.RetransmitTimeout == 0 {
		cfg.RetransmitTimeout, cfg.MaxRetries = labRTO.RetransmitTimeout, labRTO.MaxRetries
	}
	c, err := stack.New(cfg)
	if err != nil {
		t.Fatalf("stack.New(client) = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var start, end time.Time
	var n0, n1 uint64
	loop := &engine.Loop{Stack: c, MaxOpen: tputConns, Total: tputConns, Waiter: r.clink, Until: func(ctr *stack.Counters, _ int) bool {
		now := time.Now()
		switch {
		case ctr.SocketsFailed > 0:
			return true
		case start.IsZero() && ctr.SocketsCurrent == tputConns:
			start = now.Add(500 * time.Millisecond)
		case !start.IsZero() && n0 == 0 && now.After(start):
			n0, start = ctr.HTTP2xx+1, now // +1: a count of 0 stays distinct from unset
		case n0 != 0 && now.Sub(start) >= tputWindow:
			n1, end = ctr.HTTP2xx+1, now
			return true
		}
		return false
	}}
	if err := loop.Run(ctx); err != nil || n1 == 0 {
		t.Fatalf("stack against %s: %v\nclient %+v", server, err, c.Counters())
	}
	ctr := c.Counters()
	if ctr.SocketsFailed != 0 || ctr.HTTPErrors != 0 {
		t.Fatalf("stack against %s: failures\nclient %+v", server, ctr)
	}
	return float64(n1-n0) * tputObject * 8 / 1e6 / end.Sub(start).Seconds(), ctr
}

var tbfDropped = regexp.MustCompile(`dropped ([0-9]+)`)

// tbfDrops returns the token bucket's drop count.
func (r *tputLab) tbfDrops(t testing.TB) int64 {
	t.Helper()
	out, err := r.d.Device.Output("tc", "-s", "qdisc", "show", "dev", r.d.DevClient.Name)
	if err != nil {
		t.Fatal(err)
	}
	m := tbfDropped.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no drop count in %q", out)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// retrans returns the server namespace's Tcp RetransSegs (nginx's).
func (r *tputLab) retrans(t testing.TB) int64 {
	t.Helper()
	m, err := r.d.Server.SNMP("Tcp")
	if err != nil {
		t.Fatal(err)
	}
	return m["RetransSegs"]
}

// TestLabThroughputThroughTokenBucket measures the four pairs with each
// queue. With the deep queue (cmd/cicada's) the data plane's client and
// server each reach 85 % of the bucket's rate (bodies only: Ethernet,
// IPv4 and TCP headers take about 4 % of it). With the shallow one, where
// the bucket drops, each reaches 60 % of the kernel pair's figure of the
// same run: the sender's collapse before issue 17 was 36 % of it. On a
// quiet machine the data plane is at 95-104 % of the kernel there, but a
// busy one (other jobs, -race) slows the stack's single polling loop, and
// so its duplicate ACKs, more than the kernel's softirqs: 60-80 % was seen
// at load 10-12 (see dataplane/README.md). A pair below its floor gets
// a second 3 s window: under -race at load 10, the stack-to-stack pair
// once fell to 31.9 Mbit/s through the deep queue without a single drop,
// the two stacks' loops starved, not their TCP.
func TestLabThroughputThroughTokenBucket(t *testing.T) {
	r := newTputLab(t)
	for _, latency := range []string{"400ms", "20ms"} {
		figs := r.measure(t, latency)
		floor, of := 0.85*tbfMbit, "85 % of the bucket"
		if latency != "400ms" {
			floor, of = 0.6*figs[0].mbit, "60 % of the kernel pair: no collapse"
		}
		for k := 1; k < len(figs); k++ {
			if figs[k].mbit >= floor {
				continue
			}
			// A stall of this shared machine (other jobs, -race) is not
			// the stack's ceiling: the pair gets a second window.
			again := r.one(t, k)
			logFigures(t, latency+" (again)", []tputFigure{again})
			if again.mbit < floor {
				t.Errorf("queue %s: %s: %.1f then %.1f Mbit/s; want at least %.1f (%s)", latency, figs[k].name, figs[k].mbit, again.mbit, floor, of)
			}
		}
	}
	r.objectsWhole(t)
	sc := r.stop()
	t.Logf("server stack: RetransData %d, FastRetransmit %d, CwndReductions %d, Served200 %d, Served400 %d",
		sc.RetransData, sc.FastRetransmit, sc.CwndReductions, sc.Served200, sc.Served400)
}

// BenchmarkLabThroughputTokenBucket reports the four pairs' figures through
// the shallow queue, where the bucket drops, once per run (-benchtime 1x):
// body Mbit/s of each.
func BenchmarkLabThroughputTokenBucket(b *testing.B) {
	r := newTputLab(b)
	b.ReportAllocs()
	for range b.N {
		figs := r.measure(b, "20ms")
		for k, unit := range []string{"kernel<-nginx-Mbit/s", "stack<-nginx-Mbit/s", "kernel<-stack-Mbit/s", "stack<-stack-Mbit/s"} {
			b.ReportMetric(figs[k].mbit, unit)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// measure sets the bucket's queue and measures the four pairs, logging
// their figures with the drops and retransmissions each saw.
func (r *tputLab) measure(t testing.TB, latency string) []tputFigure {
	t.Helper()
	r.bucket(t, latency)
	figs := make([]tputFigure, 4)
	for k := range figs {
		figs[k] = r.one(t, k)
	}
	logFigures(t, latency, figs)
	return figs
}

// one measures pair k (0..3 in measure's order) with the drops and
// retransmissions it saw.
func (r *tputLab) one(t testing.TB, k int) tputFigure {
	t.Helper()
	drops, rtx := r.tbfDrops(t), r.retrans(t)
	var f tputFigure
	var c stack.Counters
	switch k {
	case 0:
		f.name, f.mbit = "kernel (wrk) <- nginx", r.kernelFetch(t, lab.ServerIP)
	case 1:
		f.name = "data plane <- nginx"
		f.mbit, c = r.stackFetch(t, lab.ServerIP, r.ports, stack.Config{})
		r.ports += tputConns
	case 2:
		f.name, f.mbit = "kernel (wrk) <- data plane", r.kernelFetch(t, tputStackServer)
	default:
		f.name = "data plane <- data plane"
		f.mbit, c = r.stackFetch(t, tputStackServer, r.ports, stack.Config{})
		r.ports += tputConns
	}
	d, x := r.tbfDrops(t), r.retrans(t)
	f.note = "tbf drops " + strconv.FormatInt(d-drops, 10) + ", server ns RetransSegs " + strconv.FormatInt(x-rtx, 10)
	if k%2 == 1 {
		f.note += ", client " + recvNote(&c)
	}
	return f
}

func logFigures(t testing.TB, latency string, figs []tputFigure) {
	t.Helper()
	var b strings.Builder
	for _, f := range figs {
		b.WriteString("FIGURE\tthroughput through tbf " + strconv.Itoa(tbfMbit) + " Mbit/s, queue " + latency + "\t" + f.name + "\t" +
			strconv.FormatFloat(f.mbit, 'f', 1, 64) + " Mbit/s\t" + f.note + "\n")
	}
	t.Logf("64 KiB objects, %d connections, %v each:\n%s", tputConns, tputWindow, b.String())
}

// objectsWhole fetches /bytes/<n> objects of the server stack with curl
// through the bucket (keep-alive, several per connection) and checks each
// byte, and a bad size's 400.
func (r *tputLab) objectsWhole(t *testing.T) {
	t.Helper()
	testpeer.RequirePeer(t, "curl")
	sizes := []int{0, 1, 1460, 100000, 1 << 20, 3000001}
	args := []string{"-sS", "--max-time", "20"}
	dir := t.TempDir()
	for k, n := range sizes {
		if k > 0 {
			args = append(args, "--next", "-sS", "--max-time", "20")
		}
		args = append(args, "-o", filepath.Join(dir, strconv.Itoa(k)), "http://"+tputStackServer+"/bytes/"+strconv.Itoa(n))
	}
	args = append(args, "--next", "-sS", "-o", filepath.Join(dir, "bad"), "-w", "%{http_code}", "http://"+tputStackServer+"/bytes/16777217")
	out, err := r.d.Client.Output("curl", args...)
	if err != nil || out != "400" {
		t.Fatalf("curl: %v, status of the bad size %q", err, out)
	}
	for k, n := range sizes {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(k)))
		if err != nil || len(b) != n {
			t.Fatalf("/bytes/%d: %d bytes (%v)", n, len(b), err)
		}
		for i, c := range b {
			if c != 'a'+byte(i%26) {
				t.Fatalf("/bytes/%d: byte %d is %q", n, i, c)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "bad")); string(b) != "size must be 0-16777216 bytes\n" {
		t.Fatalf("the 400's body %q", b)
	}
}

// recvNote is a client stack's receiving counters.
func recvNote(c *stack.Counters) string {
	return "OutOfOrderHeld " + strconv.FormatUint(c.OutOfOrderHeld, 10) + ", DropOutOfOrder " + strconv.FormatUint(c.DropOutOfOrder, 10) + ", DupAckOut " + strconv.FormatUint(c.DupAckOut, 10) +
		", RetransData " + strconv.FormatUint(c.RetransData, 10)
}
