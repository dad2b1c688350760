package worker

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker/httpc"
)

func startTarget(t testing.TB, opts target.Options) *target.Server {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	srv, err := target.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the target", 0, func(ctx context.Context) { _ = srv.Run(ctx) })
	return srv
}

// spawnTo is a first spawn message with host as the master's host.
func spawnTo(host string, counts map[string]int64) *protocol.Spawn {
	return &protocol.Spawn{Timestamp: 1, UserClassesCount: counts, Host: &host, ParsedOptions: map[string]any{}}
}

// idleClass is the seed scenario's user: one GET / and a long wait.
func idleClass(name string, wait time.Duration) UserClass {
	req := &httpc.Request{Path: "/"}
	return UserClass{Name: name, Wait: Constant(wait), Tasks: []Task{{Name: "/", Fn: func(ctx context.Context, u *User) error {
		return u.DoDiscard(ctx, req, nil)
	}}}}
}

// lastConns returns the connection counters of the latest heartbeat.
func lastConns(m *fakeMaster) *protocol.ConnCounters {
	hbs := m.all(protocol.TypeHeartbeat)
	for i := len(hbs) - 1; i >= 0; i-- {
		if hb, ok := hbs[i].msg.Data.(*protocol.Heartbeat); ok && hb.Connections != nil {
			return hb.Connections
		}
	}
	return nil
}

func customMap(t testing.TB, g got) map[string]any {
	t.Helper()
	c, ok := g.msg.Data.(*protocol.Custom)
	if !ok {
		t.Fatalf("%s data is %T; want *protocol.Custom", g.msg.Type, g.msg.Data)
	}
	m, ok := c.Data.(map[string]any)
	if !ok {
		t.Fatalf("%s data is %T; want a map", g.msg.Type, c.Data)
	}
	return m
}

func asInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case uint64:
		return int64(n)
	case float64:
		return int64(n)
	}
	return -1
}

// TestSecondRoundReusesConnections: idle users and busy users (short
// waits) each send one more request on the connection they hold; every
// one is reused, the heartbeat counters match the server's open
// connections, and the requests are in the stats.
func TestSecondRoundReusesConnections(t *testing.T) {
	srv := startTarget(t, target.Options{})
	m := newFakeMaster(t, 0)
	sc := Scenario{Host: srv.URL(), Classes: []UserClass{idleClass("Idle", time.Hour), idleClass("Busy", 20*time.Millisecond)}}
	rw := startWorker(t, fastOptions(t, m.port), sc)
	register(t, m, rw, 1, 0)
	const idle, busy = 300, 20
	m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnTo(srv.URL(), map[string]int64{"Idle": idle, "Busy": busy}))
	m.await(protocol.TypeSpawningComplete, 1, 20*time.Second)
	waitFor(t, 20*time.Second, "heartbeat with every connection established", func() bool {
		c := lastConns(m)
		return c != nil && c.Established == idle+busy && c.Open == idle+busy && srv.Counters().ConnectionsOpen == idle+busy
	})
	m.send(rw.w.NodeID(), protocol.TypeCicadaSecondRound, nil)
	res := customMap(t, m.await(protocol.TypeCicadaSecondRoundResult, 1, 30*time.Second))
	if asInt(res["users"]) != idle+busy || asInt(res["reused"]) != idle+busy || asInt(res["reconnected"]) != 0 || asInt(res["failed"]) != 0 {
		t.Errorf("second round = %v; want %d users, all reused", res, idle+busy)
	}
	c := lastConns(m)
	if c.Reconnects != 0 || c.Connects != idle+busy {
		t.Errorf("counters = %+v; want %d connects, no reconnects", c, idle+busy)
	}
}

// TestSecondRoundCountsReconnects: the server closed the idle connections,
// so the second round reconnects every user, and the counters say why.
func TestSecondRoundCountsReconnects(t *testing.T) {
	srv := startTarget(t, target.Options{IdleTimeout: 200 * time.Millisecond})
	m := newFakeMaster(t, 0)
	sc := Scenario{Host: srv.URL(), Classes: []UserClass{idleClass("Idle", time.Hour)}}
	rw := startWorker(t, fastOptions(t, m.port), sc)
	register(t, m, rw, 1, 0)
	const n = 30
	m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnTo(srv.URL(), map[string]int64{"Idle": n}))
	m.await(protocol.TypeSpawningComplete, 1, 20*time.Second)
	waitFor(t, 20*time.Second, "the server to close the idle connections", func() bool {
		return srv.Counters().Requests == n && srv.Counters().ConnectionsOpen == 0
	})
	m.send(rw.w.NodeID(), protocol.TypeCicadaSecondRound, nil)
	res := customMap(t, m.await(protocol.TypeCicadaSecondRoundResult, 1, 30*time.Second))
	if asInt(res["users"]) != n || asInt(res["reused"]) != 0 || asInt(res["reconnected"]) != n {
		t.Errorf("second round = %v; want %d users, all reconnected", res, n)
	}
	waitFor(t, 10*time.Second, "counters with the reconnects", func() bool {
		c := lastConns(m)
		return c != nil && c.Reconnects == n && c.Closes[httpc.CloseServerIdle.String()] == n
	})
}

// childMode runs this test binary again as a child process that executes
// TestChildProcess in the given mode, optionally through a wrapper command
// (ip netns exec). It returns the child's combined output.
func childMode(t *testing.T, mode string, env []string, wrapper ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := testpeer.SelfCommand(ctx, "TestChildProcess", append([]string{"CICADA_CHILD_MODE=" + mode}, env...), "-test.v")
	if len(wrapper) > 0 {
		args := append(append([]string(nil), wrapper[1:]...), cmd.Args...)
		env := cmd.Env
		cmd = exec.CommandContext(ctx, wrapper[0], args...)
		cmd.Env = env
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestChildProcess is the body of the child processes of the diagnosis
// tests; it does nothing in a normal run.
func TestChildProcess(t *testing.T) {
	mode := os.Getenv("CICADA_CHILD_MODE")
	switch mode {
	case "":
		t.Skip("only runs as a child of the diagnosis tests")
	case "fdlimit":
		childFileLimit(t)
	case "ports":
		childPorts(t, nil)
	case "paused":
		childPaused(t)
	case "hugespawn":
		childHugeSpawn(t)
	case "hugespawn-unbounded":
		childHugeSpawnUnbounded(t)
	case "hugespawn-main":
		childHugeSpawnMain(t)
	case "ports-source-ips":
		ips := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.4")}
		childPorts(t, ips)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
}

// diagRun spawns users and checks: a self-diagnosis warning of kind
// wantKind reaches the master before the first connect error; then, if
// wantErrKind is not "", connects fail with that kind, counted in the
// heartbeat and recorded in the stats with a message naming the load
// generator's limit.
func diagRun(t *testing.T, opts Options, users int64, wantKind, wantErrKind, wantMsg string) *fakeMaster {
	t.Helper()
	srv := startTarget(t, target.Options{})
	m := newFakeMaster(t, 0)
	opts.MasterPort = m.port
	sc := Scenario{Host: srv.URL(), HTTP: HTTPOptions{ConnectTimeout: 5 * time.Second}, Classes: []UserClass{idleClass("Idle", time.Hour)}}
	rw := startWorker(t, opts, sc)
	register(t, m, rw, 1, 0)
	host := srv.URL()
	m.send(rw.w.NodeID(), protocol.TypeSpawn, &protocol.Spawn{Timestamp: 1, UserClassesCount: map[string]int64{"Idle": users}, Host: &host,
		ParsedOptions: map[string]any{"num_users": users, "expect_workers": int64(1)}})
	if wantKind == "" {
		m.await(protocol.TypeSpawningComplete, 1, 30*time.Second)
		connected := func() bool { c := lastConns(m); return c != nil && c.Established == users }
		if err := testpeer.Poll(30*time.Second, 20*time.Millisecond, connected); err != nil {
			t.Fatalf("not every user connected: counters %+v, server %+v", lastConns(m), srv.Counters())
		}
		if ws := m.all(protocol.TypeCicadaWarning); len(ws) > 0 {
			t.Errorf("unexpected warnings: %v", ws[0].msg.Data)
		}
		return m
	}
	wg := m.await(protocol.TypeCicadaWarning, 1, 30*time.Second)
	wm := customMap(t, wg)
	if wm["kind"] != wantKind || !strings.Contains(fmt.Sprint(wm["message"]), wantMsg) {
		t.Errorf("warning = %v; want kind %q mentioning %q", wm, wantKind, wantMsg)
	}
	// The warning came before any connect failed.
	for _, hb := range m.all(protocol.TypeHeartbeat) {
		if !hb.at.Before(wg.at) {
			break
		}
		if h, ok := hb.msg.Data.(*protocol.Heartbeat); ok && h.Connections != nil && len(h.Connections.ConnectErrors) > 0 {
			t.Errorf("connect errors %v reported before the warning", h.Connections.ConnectErrors)
		}
	}
	waitFor(t, 30*time.Second, "connect errors of kind "+wantErrKind, func() bool {
		c := lastConns(m)
		return c != nil && c.ConnectErrors[wantErrKind] > 0 && c.Established+c.ConnectErrors[wantErrKind] >= users
	})
	if !protocol.GeneratorSideKind(wantErrKind) {
		t.Errorf("%q is not a generator-side kind", wantErrKind)
	}
	waitFor(t, 10*time.Second, "the runtime warning about "+wantErrKind, func() bool {
		for _, g := range m.all(protocol.TypeCicadaWarning) {
			if customMap(t, g)["kind"] == "errors: "+wantErrKind {
				return true
			}
		}
		return false
	})
	rw.w.Quit()
	var rep *protocol.StatsReport
	waitFor(t, 10*time.Second, "the final stats report", func() bool {
		for _, g := range m.all(protocol.TypeStats) {
			if r, ok := g.msg.Data.(*protocol.StatsReport); ok && len(r.Errors) > 0 {
				rep = r
			}
		}
		return rep != nil
	})
	found := false
	for _, e := range rep.Errors {
		if strings.Contains(e.Error, "load generator") {
			found = true
		}
	}
	if !found {
		t.Errorf("stats errors %+v; want a failure message naming the load generator", rep.Errors)
	}
	return m
}

func childFileLimit(t *testing.T) {
	// 120 descriptors more than in use now: the target server, the master
	// and the worker share this process, so 150 users (each a client and a
	// server socket) cannot all connect.
	n, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	lim := uint64(len(n) + 120)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
		t.Fatal(err)
	}
	opts := fastOptions(t, 0)
	diagRun(t, opts, 150, "open-files", "open-file limit", "RLIMIT_NOFILE")
}

func childPorts(t *testing.T, ips []netip.Addr) {
	opts := fastOptions(t, 0)
	opts.SourceIPs = ips
	if ips == nil {
		diagRun(t, opts, 150, "ports", "local ports exhausted", "EADDRNOTAVAIL")
		return
	}
	diagRun(t, opts, 150, "", "", "")
}

// TestDiagnosisFileLimit runs a worker whose open-files limit is too low
// for its users (in a child process with a lowered RLIMIT_NOFILE): the
// warning names the limit before the test, connects fail as "open-file
// limit" during it.
func TestDiagnosisFileLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("child process")
	}
	out, err := childMode(t, "fdlimit", nil)
	if err != nil || !strings.Contains(out, "--- PASS: TestChildProcess") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestDiagnosisPortRange runs a worker in a network namespace whose
// ephemeral port range has 100 ports: 150 users to one address get the
// "ports" warning and fail with "local ports exhausted"; with four source
// addresses (--source-ips; two would do, but past half the range connects
// slow down and the worker warns "ports-slow") all 150 connect without a
// warning. Needs root (ip netns); only
// the namespace's loopback is used.
func TestDiagnosisPortRange(t *testing.T) {
	if testing.Short() {
		t.Skip("network namespace")
	}
	// A namespace per run: the first run's connections end in TIME_WAIT,
	// which would take ports from the second.
	small := func(suffix string) string {
		ns := netns(t, suffix)
		if err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.ip_local_port_range=40000 40099").Run(); err != nil {
			t.Fatalf("set the port range in %s: %v", ns, err)
		}
		return ns
	}
	out, err := childMode(t, "ports", nil, "ip", "netns", "exec", small("a"))
	if err != nil || !strings.Contains(out, "--- PASS: TestChildProcess") {
		t.Fatalf("child (one source address): %v\n%s", err, out)
	}
	out, err = childMode(t, "ports-source-ips", nil, "ip", "netns", "exec", small("b"))
	if err != nil || !strings.Contains(out, "--- PASS: TestChildProcess") {
		t.Fatalf("child (four source addresses): %v\n%s", err, out)
	}
}

// netns creates a network namespace with only its loopback up (nothing in
// it can reach another host) and deletes it at cleanup. It skips when not
// root, unless CI=true.
func netns(t *testing.T, suffix string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testpeer.Missing(t, "network namespace tests need root (ip netns)")
	}
	testpeer.RequirePeer(t, "ip") // iproute2
	name := "cicada-test-" + strconv.Itoa(os.Getpid()) + suffix
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete %s: %v: %s", name, err, out)
		}
	})
	if out, err := exec.Command("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up in %s: %v: %s", name, err, out)
	}
	return name
}

// TestNoCicadaMessagesToPythonMaster: a master whose ack lacks the "cicada"
// key is Python Locust, which would log every cicada_warning as an unknown
// message type; the warning then stays in the worker's own log.
func TestNoCicadaMessagesToPythonMaster(t *testing.T) {
	t.Parallel()
	m := newFakeMaster(t, 0)
	rw := startWorker(t, fastOptions(t, m.port), twoClasses())
	m.await(protocol.TypeClientReady, 1, 10*time.Second)
	m.send(rw.w.NodeID(), protocol.TypeAck, &protocol.Ack{Index: 0}) // as Locust sends it
	waitFor(t, 10*time.Second, "registration", rw.w.Registered)
	rw.w.warnOnce("test-kind", "a limit the worker noticed")
	// Messages leave in order: once the probe arrived, a warning sent
	// before it would have too.
	if err := rw.w.SendMessage("probe", nil); err != nil {
		t.Fatal(err)
	}
	m.await("probe", 1, 10*time.Second)
	if ws := m.all(protocol.TypeCicadaWarning); len(ws) != 0 {
		t.Errorf("sent %d cicada_warning messages to a master that is not cicada", len(ws))
	}
}
