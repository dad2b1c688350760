package users

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/scenario"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// The test tuple space: client 198.18.0.2 (+ ClientIPs), server 198.18.1.1.
var (
	clientIP = netip.MustParseAddr("198.18.0.2")
	serverIP = netip.MustParseAddr("198.18.1.1")
)

const serverHost = "http://198.18.1.1:80"

// sleepWaiter lets an idle pipe loop sleep instead of spinning: the pipe
// cannot block until a frame arrives. Not a synchronisation: the loops
// poll either way.
type sleepWaiter struct{}

func (sleepWaiter) Wait(d time.Duration) { time.Sleep(min(d, 200*time.Microsecond)) }

// pipeLab is n pipes: client ends for the runtime, server stacks on the other
// ends (one per core, each with its core's port slice), run until the
// test ends.
type pipeLab struct {
	served atomic.Uint64 // requests answered by every server stack (200 and 405)
	ends   []link.Link
}

func newLab(t *testing.T, cores int, portMin, portMax uint16) *pipeLab {
	t.Helper()
	l := &pipeLab{}
	split, err := engine.Split(portMin, portMax, cores)
	if err != nil {
		t.Fatal(err)
	}
	servedBy := make([]atomic.Uint64, cores)
	for k := range cores {
		a, b, err := pipe.New(pipe.Config{Seed: uint64(k + 1)})
		if err != nil {
			t.Fatal(err)
		}
		l.ends = append(l.ends, a)
		srv, err := stack.New(stack.Config{Mode: stack.Server, Link: b, ClientIP: ip4(clientIP), ClientIPs: 1,
			PortMin: split[k][0], PortMax: split[k][1], ServerIP: ip4(serverIP), ServerPort: 80})
		if err != nil {
			t.Fatal(err)
		}
		loop := &engine.Loop{Stack: srv, Waiter: sleepWaiter{}, Until: func(c *stack.Counters, _ int) bool {
			servedBy[k].Store(c.Served200 + c.Served405)
			var sum uint64
			for i := range servedBy {
				sum += servedBy[i].Load()
			}
			l.served.Store(sum)
			return false
		}}
		testpeer.Go(t, "server stack", 10*time.Second, func(ctx context.Context) { _ = loop.Run(ctx) })
	}
	return l
}

func (l *pipeLab) links(n int) ([]link.Link, []engine.Waiter, error) {
	if n != len(l.ends) {
		return nil, nil, errors.New("wrong core count")
	}
	w := make([]engine.Waiter, n)
	for i := range w {
		w[i] = sleepWaiter{}
	}
	return l.ends, w, nil
}

func parseScenario(t testing.TB, src string) worker.Scenario {
	t.Helper()
	f, err := scenario.Parse("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f.Scenario
}

const okHTTP = "http: {disable_cookies: true, max_redirects: 0}\n"

func testOptions(l func(int) ([]link.Link, []engine.Waiter, error)) Options {
	return Options{Links: l, ClientIP: clientIP, PortMin: 10000, PortMax: 10999}
}

func pipeLinks(n int) ([]link.Link, []engine.Waiter, error) {
	var ls []link.Link
	for range n {
		a, _, err := pipe.New(pipe.Config{})
		if err != nil {
			return nil, nil, err
		}
		ls = append(ls, a)
	}
	return ls, nil, nil
}

// dpdkWant is the refusal a dpdk option gets: its own in a binary with
// the dpdk tag, how to build one in any other.
func dpdkWant(tagged string) string {
	if dpdk.Available {
		return tagged
	}
	return "build with `make build-dpdk`"
}

// TestNewRefuses table-tests every refusal: the error wraps ErrRefused or
// ErrOption and names what is refused.
func TestNewRefuses(t *testing.T) {
	task := func(extra string) string {
		return okHTTP + "host: " + serverHost + "\nusers:\n  - name: U\n    tasks:\n      - path: /x\n" + extra
	}
	long := strings.Repeat("a", 1500)
	tests := []struct {
		name string
		sc   func() worker.Scenario
		mod  func(*Options)
		err  error
		want string
	}{
		{"cookies", func() worker.Scenario {
			return parseScenario(t, "host: "+serverHost+"\nhttp: {max_redirects: 0}\nusers: [{name: U, tasks: [{path: /}]}]")
		}, nil, ErrRefused, "http.disable_cookies"},
		{"redirects", func() worker.Scenario {
			return parseScenario(t, "host: "+serverHost+"\nhttp: {disable_cookies: true}\nusers: [{name: U, tasks: [{path: /}]}]")
		}, nil, ErrRefused, "http.max_redirects"},
		{"connect timeout", func() worker.Scenario {
			return parseScenario(t, "host: "+serverHost+"\nhttp: {disable_cookies: true, max_redirects: 0, connect_timeout: 3}\nusers: [{name: U, tasks: [{path: /}]}]")
		}, nil, ErrRefused, "http.connect_timeout"},
		{"tls", func() worker.Scenario {
			return parseScenario(t, okHTTP+"host: https://198.18.1.1\nusers: [{name: U, tasks: [{path: /}]}]")
		}, nil, ErrRefused, "no TLS"},
		{"tls options", func() worker.Scenario {
			return parseScenario(t, "host: "+serverHost+"\nhttp: {disable_cookies: true, max_redirects: 0, tls: {min_version: '1.3'}}\nusers: [{name: U, tasks: [{path: /}]}]")
		}, nil, ErrRefused, "http.tls"},
		{"http2", func() worker.Scenario {
			return parseScenario(t, "host: "+serverHost+"\nhttp: {disable_cookies: true, max_redirects: 0, http2: true}\nusers: [{name: U, tasks: [{path: /}]}]")
		}, nil, ErrRefused, "http.http2"},
		{"parallel task", func() worker.Scenario {
			sc := parseScenario(t, task(""))
			sc.Classes[0].Tasks[0].Parallel = true
			return sc
		}, nil, ErrRefused, `task 0 ("/x") parallel`},
		{"dns name", func() worker.Scenario {
			return parseScenario(t, okHTTP+"host: http://example.test:8080\nusers: [{name: U, tasks: [{path: /}]}]")
		}, nil, ErrRefused, "not an IPv4 address"},
		{"ipv6", func() worker.Scenario {
			return parseScenario(t, okHTTP+"host: http://[::1]:80\nusers: [{name: U, tasks: [{path: /}]}]")
		}, nil, ErrRefused, "not an IPv4 address"},
		{"body_contains", func() worker.Scenario {
			return parseScenario(t, task("        checks: {body_contains: ok}\n"))
		}, nil, ErrRefused, `class "U" task 0 ("/x") request 0 checks.body_contains`},
		{"max_response_time", func() worker.Scenario {
			return parseScenario(t, task("        checks: {max_response_time: 100}\n"))
		}, nil, ErrRefused, "checks.max_response_time"},
		{"on_stop", func() worker.Scenario {
			return parseScenario(t, task("    on_stop: [{path: /bye}]\n"))
		}, nil, ErrRefused, `class "U" on_stop`},
		{"request over one segment", func() worker.Scenario {
			return parseScenario(t, task("        body: "+long+"\n"))
		}, nil, ErrRefused, "one segment of at most 1460 bytes"},
		{"absolute url", func() worker.Scenario {
			return parseScenario(t, okHTTP+"host: "+serverHost+"\nusers: [{name: U, tasks: [{path: 'http://198.18.1.1/x'}]}]")
		}, nil, ErrRefused, "absolute URL"},
		{"websocket class", func() worker.Scenario {
			return parseScenario(t, okHTTP+"host: "+serverHost+"\nusers: [{name: W, kind: websocket, url: /ws, tasks: [{name: chat, steps: [{send: hi}]}]}]")
		}, nil, ErrRefused, `class "W" task 0 ("chat"): a websocket task cannot run on the data plane`},
		{"tcp class", func() worker.Scenario {
			return parseScenario(t, okHTTP+"host: "+serverHost+"\nusers: [{name: T, kind: tcp, url: 'tcp://198.18.1.1:7', tasks: [{steps: [{send: hi}]}]}]")
		}, nil, ErrRefused, `class "T" task 0 (""): a tcp task cannot run on the data plane`},
		{"go task", func() worker.Scenario {
			sc := parseScenario(t, task(""))
			sc.Classes[0].Tasks = append(sc.Classes[0].Tasks, worker.Task{Name: "code", Fn: func(context.Context, *worker.User) error { return nil }})
			return sc
		}, nil, ErrRefused, `task 1 ("code"): a Go task function`},
		{"go wait", func() worker.Scenario {
			sc := parseScenario(t, task(""))
			sc.Classes[0].Wait = worker.Constant(time.Second)
			return sc
		}, nil, ErrRefused, `class "U" wait`},
		{"go on_start", func() worker.Scenario {
			sc := parseScenario(t, task(""))
			sc.Classes[0].OnStart = func(context.Context, *worker.User) error { return nil }
			return sc
		}, nil, ErrRefused, `class "U" on_start`},
		{"computed header", func() worker.Scenario {
			return parseScenario(t, task("        headers: {Content-Length: '5'}\n"))
		}, nil, ErrRefused, "is computed"},
		{"weight over the stack's limit", func() worker.Scenario {
			return parseScenario(t, okHTTP+"host: "+serverHost+"\nusers: [{name: U, tasks: [{path: /, weight: 2000000}]}]")
		}, nil, ErrRefused, "Weight 2000000"},
		{"throughput below the stack's limit", func() worker.Scenario {
			return parseScenario(t, okHTTP+"users: [{name: U, wait: constant_throughput(0.0000001), tasks: [{path: /}]}]")
		}, nil, ErrRefused, "constant throughput"},
		{"too many users", func() worker.Scenario { return parseScenario(t, task("")) },
			func(o *Options) { o.MaxUsers = 1001 }, ErrRefused, "1 client IPs × 1000 ports"},
		{"no link", func() worker.Scenario { return parseScenario(t, task("")) },
			func(o *Options) { o.Links = nil }, ErrOption, "neither"},
		{"links and interface", func() worker.Scenario { return parseScenario(t, task("")) },
			func(o *Options) { o.Interface = "eth0" }, ErrOption, "Links set together"},
		{"ipv6 client", func() worker.Scenario { return parseScenario(t, task("")) },
			func(o *Options) { o.ClientIP = netip.MustParseAddr("::2") }, ErrOption, "not an IPv4"},
		{"gateway in client range", func() worker.Scenario { return parseScenario(t, task("")) },
			func(o *Options) { o.ClientIPs = 4; o.Gateway = netip.MustParseAddr("198.18.0.3") }, ErrOption, "inside the client range"},
		{"afxdp multi-core", func() worker.Scenario { return parseScenario(t, task("")) },
			func(o *Options) { o.Links = nil; o.Link = LinkAFXDP; o.Interface = "x"; o.Cores = 2 }, ErrOption, "AF_XDP with 2 cores"},
		{"dpdk multi-core", func() worker.Scenario { return parseScenario(t, task("")) },
			func(o *Options) { o.Links = nil; o.Link = LinkDPDK; o.DPDK.Port = "0"; o.Cores = 2 }, ErrOption, dpdkWant("dpdk: 2 cores asked")},
		{"dpdk no port", func() worker.Scenario { return parseScenario(t, task("")) },
			func(o *Options) { o.Links = nil; o.Link = LinkDPDK }, ErrOption, dpdkWant("no DPDK port")},
		{"negative rate", func() worker.Scenario { return parseScenario(t, task("")) },
			func(o *Options) { o.ConnectRate = -1 }, ErrOption, "connect rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions(pipeLinks)
			if tt.mod != nil {
				tt.mod(&opts)
			}
			_, err := New(opts, tt.sc())
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v; want %v naming %q", err, tt.err, tt.want)
			}
		})
	}
	// The same scenario with the options fixed is accepted.
	rt, err := New(testOptions(pipeLinks), parseScenario(t, task("        headers: {X-A: b}\n")))
	if err != nil {
		t.Fatalf("valid scenario refused: %v", err)
	}
	if rt.MaxUsers() != 1000 {
		t.Fatalf("MaxUsers = %d; want the tuple space 1000", rt.MaxUsers())
	}
	_ = rt.Close()
}

// TestRequestBytes checks the bytes built for a request: the kernel
// worker's default headers (no Accept-Encoding), options, request headers
// overriding defaults, Host, Content-Length and body, path prefix.
func TestRequestBytes(t *testing.T) {
	sc := parseScenario(t, `
host: http://198.18.1.1:8080/api/
http: {disable_cookies: true, max_redirects: 0, user_agent: ua, headers: {X-O: o}}
users:
  - name: U
    tasks:
      - {method: POST, path: /p, body: hi, headers: {Accept: text/plain}}
      - {path: q}
`)
	p, err := compile(&sc)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := parseHost("h", sc.Host)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		i    int
		want string
	}{
		{0, "POST /api/p HTTP/1.1\r\nHost: 198.18.1.1:8080\r\nUser-Agent: ua\r\nX-O: o\r\nAccept: text/plain\r\nContent-Length: 2\r\n\r\nhi"},
		{1, "GET /api/q HTTP/1.1\r\nHost: 198.18.1.1:8080\r\nUser-Agent: ua\r\nAccept: */*\r\nX-O: o\r\n\r\n"},
	}
	for _, tt := range tests {
		if got := string(p.raw(&srv, &p.requests[tt.i])); got != tt.want {
			t.Errorf("request %d:\n got %q\nwant %q", tt.i, got, tt.want)
		}
	}
	if got := srv.url(&p.requests[1]); got != "http://198.18.1.1:8080/api/q" {
		t.Errorf("url = %q", got)
	}
}

// TestFailureTexts: the texts equal the kernel worker's for the same
// outcome, so mixed clusters merge rows.
func TestFailureTexts(t *testing.T) {
	r := &Runtime{rows: []row{{url: "http://198.18.1.1/x"}, {url: "http://198.18.1.1/y", accept: []uint16{200, 204}}}}
	c := &core{r: r, texts: map[uint32]string{}}
	tests := []struct {
		row    int
		status uint16
		want   string
	}{
		{0, 404, (&httpc.Error{Kind: httpc.HTTPStatus, URL: "http://198.18.1.1/x", Status: 404, Reason: "Not Found"}).Error()},
		{0, 503, "HTTPError('503 Server Error: Service Unavailable for url: http://198.18.1.1/x')"},
		{1, 500, "CatchResponseError('status 500, expected 200 or 204')"},
	}
	for _, tt := range tests {
		if got := c.statusText(tt.row, tt.status); got != tt.want {
			t.Errorf("row %d status %d: %q; want %q", tt.row, tt.status, got, tt.want)
		}
	}
	if want := "HTTPError('404 Client Error: Not Found for url: http://198.18.1.1/x')"; c.statusText(0, 404) != want {
		t.Errorf("404 text %q; want %q", c.statusText(0, 404), want)
	}
	if textReset != "ConnectionResetError(104, 'Connection reset by peer')" || textTimeout != "TimeoutError('timed out')" {
		t.Errorf("reset %q, timeout %q", textReset, textTimeout)
	}
}

// TestWorkerWithMaster runs the data plane runtime inside a real worker
// joined to an in-process cicada master, over two pipes (two cores) to
// server stacks: spawn up and down by class, a second round, stop; the
// master's request count equals the requests the servers answered, and
// again after a second test ended by quit while its users ran (the final
// report).
func TestWorkerWithMaster(t *testing.T) {
	const cores = 2
	lb := newLab(t, cores, 10000, 10999)
	sc := parseScenario(t, okHTTP+`
users:
  - {name: A, wait: constant(0.05), tasks: [{path: /a}]}
  - {name: B, wait: 'between(0.02, 0.06)', on_start: [{path: /login}], tasks: [{path: /b, checks: {status: 200}}, {name: two, requests: [{path: /c}, {method: POST, path: /d, checks: {status: 405}}]}]}
`)
	opts := testOptions(lb.links)
	opts.Cores = cores
	opts.ConnectRate = 2000
	opts.Logger = testLogger(t)
	rt, err := New(opts, sc)
	if err != nil {
		t.Fatal(err)
	}
	host := serverHost
	m, err := master.New(master.Options{BindHost: "127.0.0.1", BindPort: -1, Host: host, StopTimeout: time.Second,
		UserClasses: []master.UserClass{{Name: "A", Weight: 1}, {Name: "B", Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mres := make(chan error, 1)
	go func() { _, err := m.Run(ctx); mres <- err }()
	w, err := worker.New(worker.Options{MasterPort: m.Addr().(*net.TCPAddr).Port, Runtime: rt, MaxUsers: rt.MaxUsers(),
		HeartbeatInterval: 100 * time.Millisecond, StatsInterval: 500 * time.Millisecond}, sc)
	if err != nil {
		t.Fatal(err)
	}
	wres := make(chan error, 1)
	go func() { wres <- w.Run(ctx) }()
	testpeer.Eventually(t, 20*time.Second, "the worker ready", func() bool { return m.Status().WorkerCount == 1 })

	for _, step := range []struct{ users, a, b int64 }{{40, 20, 20}, {10, 5, 5}} {
		if err := m.Start(int(step.users), 1000, &host); err != nil {
			t.Fatal(err)
		}
		testpeer.Eventually(t, 20*time.Second, "users per class", func() bool {
			c, total := w.UserCount()
			return total == step.users && c["A"] == step.a && c["B"] == step.b
		})
		for cl, want := range []int64{step.a, step.b} {
			if got := classUsers(*rt.coresPtr.Load(), cl); got != want {
				t.Errorf("class %d: %d users in the stacks; want %d", cl, got, want)
			}
		}
		if step.b == 20 {
			// Launched users may still be connecting: a B user stopped
			// before its on_start sends none. Step down only once every
			// B user's on_start is in.
			testpeer.Eventually(t, 20*time.Second, "every B user's on_start", func() bool {
				for _, e := range m.Snapshot().Entries {
					if e.Method+" "+e.Name == "GET /login" {
						return e.NumRequests == 20
					}
				}
				return false
			})
		}
	}
	testpeer.Eventually(t, 20*time.Second, "requests served", func() bool { return lb.served.Load() > 200 })
	// The heartbeat's counters reach the master.
	testpeer.Eventually(t, 10*time.Second, "connection counters at the master", func() bool {
		ws := m.Status().Workers
		return len(ws) == 1 && ws[0].Connections != nil && ws[0].Connections.Open > 0
	})

	srctx, srcancel := context.WithTimeout(ctx, 10*time.Second)
	res, err := w.SecondRound(srctx)
	srcancel()
	if err != nil || res.Users == 0 || res.Reused != res.Users || res.Failed != 0 {
		t.Errorf("second round = %+v, %v; want every user reused", res, err)
	}

	if err := m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	testpeer.Eventually(t, 20*time.Second, "users stopped", func() bool { _, n := w.UserCount(); return n == 0 })
	// After the stop every finished request is in a report: the master's
	// total equals the pages served, once the last report arrived.
	testpeer.Eventually(t, 10*time.Second, "the master's total equal to the pages served", func() bool {
		return uint64(m.Snapshot().Total.NumRequests) == lb.served.Load()
	})
	snap := m.Snapshot()
	if snap.Total.NumFailures != 0 {
		t.Errorf("%d failures", snap.Total.NumFailures)
	}
	names := map[string]int64{}
	for _, e := range snap.Entries {
		names[e.Method+" "+e.Name] = e.NumRequests
	}
	for _, n := range []string{"GET /a", "GET /b", "GET /login", "GET /c", "POST /d"} {
		if names[n] == 0 {
			t.Errorf("no requests of %s: %v", n, names)
		}
	}
	if names["GET /login"] != 20 {
		t.Errorf("%d on_start requests; want one per B user started (20)", names["GET /login"])
	}
	// A new test, ended by quit while the users run: the final report
	// holds every request answered.
	testpeer.Eventually(t, 20*time.Second, "the worker ready again", func() bool {
		ws := m.Status().Workers
		return len(ws) == 1 && ws[0].State == "ready"
	})
	before := lb.served.Load() // the first test's users all stopped: stable
	if err := m.Start(6, 1000, &host); err != nil {
		t.Fatal(err)
	}
	testpeer.Eventually(t, 20*time.Second, "requests of the second test", func() bool { return lb.served.Load() > before+100 })
	m.Quit()
	select {
	case err := <-wres:
		if err != nil {
			t.Errorf("worker Run = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not quit")
	}
	if err := <-mres; err != nil {
		t.Errorf("master Run = %v", err)
	}
	// The master cleared its stats when the second test started.
	if got, want := m.Snapshot().Total.NumRequests, int64(lb.served.Load()-before); got != want {
		t.Errorf("after quit the master counted %d requests of the second test; the servers answered %d", got, want)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("CICADA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// TestSpawnPaced: a spawn launches at most ConnectRate users per second
// and core (plus the bucket's hundredth of a second), so 1,000 users at
// 500/s take at least about 2 s; then the runtime holds them all.
func TestSpawnPaced(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 s ramp")
	}
	lb := newLab(t, 1, 10000, 11999)
	opts := testOptions(lb.links)
	opts.PortMax = 11999
	opts.ConnectRate = 500
	rt, err := New(opts, parseScenario(t, okHTTP+"users: [{name: U, wait: constant(10), tasks: [{path: /}]}]"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Start(worker.RuntimeEnv{Recorder: stats.NewRecorder(nil)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := rt.Spawn(ctx, worker.RuntimeSpawn{Host: serverHost, Classes: []worker.RuntimeClass{{Name: "U", Users: 1000}}}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if min := time.Duration(float64(1000-5) / 500 * float64(time.Second)); took < min {
		t.Fatalf("1,000 users launched in %v at 500/s; want at least %v", took, min)
	}
	if got := rt.Users()["U"]; got != 1000 {
		t.Fatalf("Users = %d; want 1000", got)
	}
	t.Logf("1,000 users at 500/s took %v", took.Round(time.Millisecond))
	rt.Stop(5 * time.Second)
	if got := rt.Users()["U"]; got != 0 {
		t.Fatalf("Users after Stop = %d", got)
	}
}

// BenchmarkRecordRow converts one stats row (40 buckets, two failing
// statuses, a timeout) and records it in bulk: the per-row, per-second
// cost of the stats path.
func BenchmarkRecordRow(b *testing.B) {
	rec := stats.NewRecorder(nil)
	r := &Runtime{rows: []row{{method: "GET", name: "/x", url: "http://198.18.1.1/x"}}, env: worker.RuntimeEnv{Recorder: rec}}
	r.log.Store(slog.New(slog.DiscardHandler))
	c := newCore(r, 0, 1, 1)
	sr := stack.StatsRow{Requests: 4000, Failures: 30, FailStatusN: 2, FailTimeout: 10,
		RespTimeSumUs: 4000 * 3000, RespTimeMinUs: 200, RespTimeMaxUs: 90_000, ContentBytes: 4000 * 128}
	sr.FailStatus[0] = stack.StatusCount{Status: 404, Count: 15}
	sr.FailStatus[1] = stack.StatusCount{Status: 503, Count: 5}
	for i := range 40 {
		sr.Hist[i*2] = 100
	}
	b.ReportAllocs()
	for range b.N {
		c.fill(0, &sr)
		if err := rec.RecordBulk("GET", "/x", &c.bulk); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFailuresRecorded: statuses the server stack refuses (405 for a POST)
// reach the recorder under the kernel worker's failure text, and Stop
// flushes every finished request.
func TestFailuresRecorded(t *testing.T) {
	lb := newLab(t, 1, 10000, 10999)
	rt, err := New(testOptions(lb.links), parseScenario(t, okHTTP+"users: [{name: U, wait: constant(0.01), tasks: [{method: POST, path: /e}]}]"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rec := stats.NewRecorder(nil)
	if err := rt.Start(worker.RuntimeEnv{Recorder: rec}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.Spawn(ctx, worker.RuntimeSpawn{Host: serverHost, Classes: []worker.RuntimeClass{{Name: "U", Users: 5}}}); err != nil {
		t.Fatal(err)
	}
	testpeer.Eventually(t, 20*time.Second, "requests answered", func() bool { return lb.served.Load() >= 50 })
	// The engine publishes its counters once a second.
	testpeer.Eventually(t, 10*time.Second, "5 connects in the heartbeat counters", func() bool {
		cc := rt.Connections()
		return cc.Connects >= 5 && cc.Open == 5
	})
	rt.Stop(5 * time.Second)
	rep := rec.Report(nil, 0)
	served := int64(lb.served.Load())
	if len(rep.Stats) != 1 || rep.Stats[0].NumRequests != served || rep.Stats[0].NumFailures != served {
		t.Fatalf("report %+v; want %d requests, all failed", rep.Stats, served)
	}
	want := "HTTPError('405 Client Error: Method Not Allowed for url: http://198.18.1.1:80/e')"
	for _, e := range rep.Errors {
		if e.Error != want || e.Occurrences != served || e.Method != "POST" || e.Name != "/e" {
			t.Fatalf("error row %+v; want %q × %d", e, want, served)
		}
	}
	if len(rep.Errors) != 1 {
		t.Fatalf("%d error rows; want 1", len(rep.Errors))
	}
}

// TestExamplesForTheDataPlane: the example the README gives the data plane
// runs as written, and the kernel worker's seed scenario is refused with
// the two fields to set, not accepted and half run.
func TestExamplesForTheDataPlane(t *testing.T) {
	f, err := scenario.Load("../../examples/dataplane.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(testOptions(pipeLinks), f.Scenario)
	if err != nil {
		t.Fatalf("examples/dataplane.yaml refused: %v", err)
	}
	if err := rt.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	seed, err := scenario.Load("../../examples/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(testOptions(pipeLinks), seed.Scenario)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "disable_cookies") {
		t.Errorf("examples/seed.yaml on the data plane: %v; want ErrRefused naming http.disable_cookies", err)
	}
}
