package target

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// startServer runs a Server on a free port until the test ends.
func startServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "Run", 30*time.Second, func(ctx context.Context) {
		if err := s.Run(ctx); err != nil {
			t.Errorf("Run() = %v", err)
		}
	})
	return s
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testpeer.Eventually(t, 10*time.Second, what, cond)
}

func TestDefaultBodyIs128Bytes(t *testing.T) {
	if len(DefaultBody) != 128 {
		t.Errorf("len(DefaultBody) = %d; want 128", len(DefaultBody))
	}
}

func TestRoutes(t *testing.T) {
	s := startServer(t, Options{})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		method, path, body string
		status             int
		wantBody           string
		header             [2]string
	}{
		{"GET", "/", "", 200, string(DefaultBody), [2]string{"Content-Type", "text/html"}},
		{"GET", "/any/path?x=1", "", 200, string(DefaultBody), [2]string{"Server", "cicada-target"}},
		{"HEAD", "/", "", 200, "", [2]string{"Content-Length", "128"}},
		{"POST", "/", "hello", 200, "5\n", [2]string{}},
		{"PUT", "/x", "", 200, "0\n", [2]string{}},
		{"DELETE", "/", "", 200, string(DefaultBody), [2]string{}},
		{"GET", "/status/404", "", 404, "404 Not Found\n", [2]string{}},
		{"GET", "/status/503", "", 503, "503 Service Unavailable\n", [2]string{}},
		{"GET", "/status/204", "", 204, "", [2]string{}},
		{"GET", "/status/302", "", 302, "302 Found\n", [2]string{"Location", "/"}},
		{"GET", "/status/abc", "", 400, "status code must be 100-599\n", [2]string{}},
		{"GET", "/status/700", "", 400, "status code must be 100-599\n", [2]string{}},
		{"GET", "/delay/x", "", 400, "delay must be a number of milliseconds\n", [2]string{}},
		{"GET", "/delay/1", "", 200, string(DefaultBody), [2]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, s.URL()+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || string(body) != tt.wantBody {
				t.Errorf("%s %s = %d %q; want %d %q", tt.method, tt.path, resp.StatusCode, body, tt.status, tt.wantBody)
			}
			if tt.header[0] != "" && resp.Header.Get(tt.header[0]) != tt.header[1] {
				t.Errorf("%s: %q; want %q", tt.header[0], resp.Header.Get(tt.header[0]), tt.header[1])
			}
		})
	}
}

func TestDelay(t *testing.T) {
	s := startServer(t, Options{MaxDelay: 300 * time.Millisecond})
	for _, tt := range []struct {
		path     string
		min, max time.Duration
	}{
		{"/delay/100", 100 * time.Millisecond, 20 * time.Second},
		{"/delay/999999", 300 * time.Millisecond, 20 * time.Second}, // capped by MaxDelay
	} {
		start := time.Now()
		resp, err := http.Get(s.URL() + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if d := time.Since(start); d < tt.min || d > tt.max {
			t.Errorf("GET %s took %v; want %v..%v", tt.path, d, tt.min, tt.max)
		}
	}
}

func TestCountersAndStats(t *testing.T) {
	s := startServer(t, Options{})
	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	for i := 0; i < 5; i++ {
		fmt.Fprintf(conn, "GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	got := s.Counters()
	if got.Requests != 5 || got.ConnectionsAccepted != 1 || got.ConnectionsOpen != 1 {
		t.Errorf("Counters() = %+v; want 5 requests on 1 open connection", got)
	}
	resp, err := http.Get(s.URL() + "/_cicada/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Counters
		UptimeSeconds float64 `json:"uptime_seconds"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != 5 || st.ConnectionsAccepted != 2 || st.ConnectionsOpen != 2 || st.UptimeSeconds <= 0 {
		t.Errorf("/_cicada/stats = %+v; want 5 requests, 2 accepted, 2 open", st)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("stats Content-Type = %q", ct)
	}
	conn.Close()
	waitFor(t, "the closed connection to be counted", func() bool { return s.Counters().ConnectionsOpen <= 1 })
}

func TestRunShutdown(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := New(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	// An idle keep-alive connection and a request stuck in /delay.
	idle, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprintf(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := http.ReadResponse(bufio.NewReader(idle), nil); err != nil {
		t.Fatal(err)
	}
	delayed := make(chan error, 1)
	go func() {
		resp, err := http.Get(s.URL() + "/delay/60000")
		if err == nil {
			resp.Body.Close()
		}
		delayed <- err
	}()
	waitFor(t, "the delayed request", func() bool { return s.Counters().Requests == 2 })
	start := time.Now()
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Run() = %v; want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
	if d := time.Since(start); d > ShutdownTimeout+5*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	<-delayed
	if err := s.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("second Run() = %v; want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after Run = %v", err)
	}
	idle.Close()
	http.DefaultClient.CloseIdleConnections()
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before+2 })
}

func TestCloseWithoutRun(t *testing.T) {
	s, err := New(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr().String()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := s.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close = %v; want ErrClosed", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("listener still accepts after Close")
	}
}

func TestListenError(t *testing.T) {
	s := startServer(t, Options{})
	if _, err := New(Options{Listen: s.Addr().String()}); err == nil || !strings.HasPrefix(err.Error(), "target: listen") {
		t.Errorf("New on a busy port = %v; want a target: listen error", err)
	}
}

// Idle memory: the clients run in a child process (this test binary
// re-executed), so that only the server's memory is measured here.

func TestIdleConnectionMemory(t *testing.T) {
	if os.Getenv("TARGET_CLIENT_CHILD") != "" {
		idleClientsChild(os.Getenv("TARGET_CLIENT_CHILD"))
		return
	}
	n := 5000
	if testing.Short() {
		n = 1000
	}
	per := measureIdleConns(t, n)
	t.Logf("%d idle keep-alive connections: %.0f bytes of server heap+stack per connection", n, per)
}

// BenchmarkIdleConnections measures once, whatever -benchtime says.
func BenchmarkIdleConnections(b *testing.B) {
	per := measureIdleConns(b, 10000)
	for b.Loop() {
	}
	b.ReportMetric(per, "heap+stack-B/conn")
}

func measureIdleConns(t testing.TB, n int) float64 {
	s := startServer(t, Options{})
	warm, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	fmt.Fprintf(warm, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	http.ReadResponse(bufio.NewReader(warm), nil)
	before := memNow()
	cmd := testpeer.SelfCommand(context.Background(), "TestIdleConnectionMemory", []string{"TARGET_CLIENT_CHILD=" + s.Addr().String() + "," + strconv.Itoa(n)})
	stdin, out := startPipedChild(t, cmd)
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	if _, err := testpeer.ChildLine(bufio.NewScanner(out), "READY"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all connections", func() bool { return s.Counters().ConnectionsOpen >= int64(n+1) })
	after := memNow()
	return float64(after-before) / float64(n)
}

// startPipedChild starts cmd with a pipe to its stdin (the children of
// these tests run until it closes) and one from its stdout.
func startPipedChild(t testing.TB, cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, stdout
}

func memNow() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse
}

// idleClientsChild opens n connections to addr, makes one request on each,
// prints READY and holds them until stdin closes.
//
//nolint:forbidigo // a child process: stdout is its channel to the parent test
func idleClientsChild(arg string) {
	addr, ns, _ := strings.Cut(arg, ",")
	n, _ := strconv.Atoi(ns)
	conns := make([]net.Conn, 0, n)
	buf := make([]byte, 4096)
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Println("ERR", err)
			return
		}
		conns = append(conns, c)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		got := 0
		for !bytes.Contains(buf[:got], DefaultBody[len(DefaultBody)-8:]) {
			m, err := c.Read(buf[got:])
			if err != nil {
				fmt.Println("ERR", err)
				return
			}
			got += m
		}
	}
	fmt.Println("READY")
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
}

// BenchmarkKeepAliveGET measures the server on one keep-alive connection.
func BenchmarkKeepAliveGET(b *testing.B) {
	s := startServer(b, Options{})
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	buf := make([]byte, 4096)
	tail := DefaultBody[len(DefaultBody)-8:]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		got := 0
		for got < len(tail) || !bytes.Equal(buf[got-len(tail):got], tail) {
			m, err := c.Read(buf[got:])
			if err != nil {
				b.Fatal(err)
			}
			got += m
		}
	}
}

func TestCloseStopsRun(t *testing.T) {
	s, err := New(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	waitFor(t, "the server to answer", func() bool {
		resp, err := http.Get(s.URL())
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Run after Close = %v; want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after Close")
	}
}
