package testpeer

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeT records how a helper ended the test; Fatalf and Skipf stop the
// helper as the testing package does, by unwinding to run.
type fakeT struct {
	testing.TB
	ended string // "fatal: msg" or "skip: msg"
}

type endTest struct{}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.ended = "fatal: " + fmt.Sprintf(format, args...)
	panic(endTest{})
}
func (f *fakeT) Skipf(format string, args ...any) {
	f.ended = "skip: " + fmt.Sprintf(format, args...)
	panic(endTest{})
}

// run calls fn with a fakeT and returns how it ended ("" if it returned).
func run(t *testing.T, fn func(T)) string {
	f := &fakeT{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(endTest); !ok {
					panic(r)
				}
			}
		}()
		fn(f)
	}()
	return f.ended
}

func TestEventually(t *testing.T) {
	calls := 0
	got := run(t, func(ft T) { Eventually(ft, 10*time.Second, "third call", func() bool { calls++; return calls == 3 }) })
	if got != "" || calls != 3 {
		t.Errorf("Eventually(true at the third call) ended %q after %d calls; want success after 3", got, calls)
	}
	got = run(t, func(ft T) { Eventually(ft, 30*time.Millisecond, "never", func() bool { return false }) })
	if want := "fatal: timed out after 30ms waiting for never"; got != want {
		t.Errorf("Eventually(never) ended %q; want %q", got, want)
	}
}

func TestPollTimeout(t *testing.T) {
	start := time.Now()
	err := Poll(20*time.Millisecond, time.Millisecond, func() bool { return false })
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("Poll(never) = %v; want ErrTimeout", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("Poll(never, 20ms) returned after %v; want at least 20ms", d)
	}
	if err := Poll(0, 0, func() bool { return true }); err != nil {
		t.Errorf("Poll(0, 0, always) = %v; want nil", err)
	}
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct{ ci, want string }{
		{"true", "fatal: required under CI=true: nginx not installed"},
		{"", "skip: skipped: nginx not installed"},
		{"1", "skip: skipped: nginx not installed"},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			if got := run(t, func(ft T) { Missing(ft, "%s not installed", "nginx") }); got != tc.want {
				t.Errorf("Missing under CI=%q ended %q; want %q", tc.ci, got, tc.want)
			}
		})
	}
}

func TestLookPeer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		missing bool
	}{
		{"sh", false},
		{"/no/such/dir/nginx", true},
		{"no-such-program-cicada", true},
	} {
		_, err := LookPeer(tc.name)
		if got := errors.Is(err, ErrMissing); got != tc.missing {
			t.Errorf("LookPeer(%q) = %v; want missing %v", tc.name, err, tc.missing)
		}
	}
	t.Setenv("CI", "true")
	if got := run(t, func(ft T) { RequirePeer(ft, "/no/such/dir/nginx") }); !strings.HasPrefix(got, "fatal: ") {
		t.Errorf("RequirePeer(missing) under CI=true ended %q; want a failure", got)
	}
}

func TestCheckPythonMissingModule(t *testing.T) {
	if err := CheckPython("no_such_module_cicada"); !errors.Is(err, ErrMissing) {
		t.Errorf("CheckPython(no_such_module_cicada) = %v; want ErrMissing", err)
	}
}

func TestPickPortIsFree(t *testing.T) {
	p := FreePort(t)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		t.Fatalf("listen on FreePort() = %d: %v", p, err)
	}
	l.Close()
}

func TestNginxConfigRefusesBadLocation(t *testing.T) {
	for _, l := range []Location{{Path: "x", Status: 200}, {Path: "/a;b", Status: 200}, {Path: "/", Status: 0}, {Path: "/", Status: 600}} {
		cfg := NginxConfig{Bin: "sh", Dir: t.TempDir(), Port: 1, Locations: []Location{l}}
		if n, err := cfg.Start(); err == nil {
			_ = n.Stop()
			t.Errorf("NginxConfig{Locations: %+v}.Start() = nil error; want a refusal", l)
		}
	}
}

func TestNginxCountsRequests(t *testing.T) {
	n := StartNginx(t, NginxConfig{AccessLog: true, Locations: []Location{
		{Path: "/", Status: 200, Body: "ok\n"},
		{Path: "/fail", Status: 500, Body: "no\n"},
	}})
	for _, path := range []string{"/", "/a", "/fail", "/", "/fail/x"} {
		resp, err := http.Get(n.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if err := n.Stop(); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	total, by, err := n.Requests()
	if err != nil || total != 5 || by["200"] != 3 || by["500"] != 2 {
		t.Errorf("Requests() = %d, %v, %v; want 5, map[200:3 500:2], nil", total, by, err)
	}
	if err := n.Stop(); err != nil {
		t.Errorf("second Stop() = %v; want nil", err)
	}
	quiet := StartNginx(t, NginxConfig{})
	if _, _, err := quiet.Requests(); !errors.Is(err, ErrNoAccessLog) {
		t.Errorf("Requests() without access log = %v; want ErrNoAccessLog", err)
	}
}

// TestProcessLifecycle runs a shell as the "Locust" program: the launcher's
// environment, log, exit status and Stop are the same for any program.
func TestProcessLifecycle(t *testing.T) {
	p := StartLocust(t, LocustConfig{Bin: "sh", Args: []string{"-c", "echo unbuffered=$PYTHONUNBUFFERED; exit 3"}})
	exited, err := p.Wait(10 * time.Second)
	var ee interface{ ExitCode() int }
	if !exited || !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Wait() = %v, %v; want exited with status 3", exited, err)
	}
	if got := p.Log(); got != "unbuffered=1\n" {
		t.Errorf("Log() = %q; want %q", got, "unbuffered=1\n")
	}

	long := StartLocust(t, LocustConfig{Bin: "sh", Args: []string{"-c", "sleep 60"}})
	start := time.Now()
	if err := long.Stop(syscall.SIGTERM, 10*time.Second); err == nil {
		t.Errorf("Stop(SIGTERM) of sleep = nil; want the signal as exit error")
	}
	if long.Alive() || time.Since(start) > 9*time.Second {
		t.Errorf("after Stop(SIGTERM): alive %v after %v; want ended at once", long.Alive(), time.Since(start))
	}
}

// TestNginxScaleOptions starts nginx as the scale tests do: several
// workers, reuseport, long keep-alive, many connections.
func TestNginxScaleOptions(t *testing.T) {
	n := StartNginx(t, NginxConfig{Workers: 2, ReusePort: true, Keepalive: 20 * time.Minute, Connections: 2000})
	resp, err := http.Get(n.URL() + "/any")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || string(body) != "hello\n" {
		t.Errorf("GET /any = %d %q, %v; want 200 %q", resp.StatusCode, body, err, "hello\n")
	}
	conf, err := os.ReadFile(filepath.Join(n.Dir, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"worker_processes 2;", "worker_connections 2000;", "keepalive_timeout 1200s;", "reuseport;", "access_log off;"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("nginx.conf lacks %q:\n%s", want, conf)
		}
	}
}

// TestNginxStopEndsWorkers checks that Start waits for every worker and
// that no worker outlives Stop, gracefully or killed.
func TestNginxStopEndsWorkers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		grace time.Duration
	}{
		{"graceful", syscall.SIGQUIT, 10 * time.Second},
		{"killed", syscall.SIGCONT, time.Millisecond}, // SIGCONT is ignored: Stop must kill
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := StartNginx(t, NginxConfig{Workers: 3})
			workers := n.Children()
			if len(workers) != 3 {
				t.Fatalf("Children() after Start = %v; want 3 workers", workers)
			}
			_ = n.StopWithin(tc.sig, tc.grace)
			Eventually(t, 10*time.Second, "the workers gone", func() bool {
				for _, pid := range workers {
					if syscall.Kill(pid, 0) == nil {
						return false
					}
				}
				return true
			})
			if n.Alive() {
				t.Errorf("nginx alive after StopWithin(%v)", tc.sig)
			}
		})
	}
}

func TestNginxServesRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "index.html"), []byte("<p>page</p>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := StartNginx(t, NginxConfig{Root: root})
	resp, err := http.Get(n.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "<p>page</p>\n" || resp.Header.Get("Content-Type") != "text/html" {
		t.Errorf("GET / = %q (%s), %v; want the index.html as text/html", body, resp.Header.Get("Content-Type"), err)
	}
	for _, cfg := range []NginxConfig{
		{Root: root, Locations: []Location{{Path: "/", Status: 200}}},
		{Root: "relative/dir"},
	} {
		cfg.Bin, cfg.Dir, cfg.Port = "sh", t.TempDir(), 1
		if n, err := cfg.Start(); err == nil {
			_ = n.Stop()
			t.Errorf("NginxConfig{Root: %q, Locations: %v}.Start() = nil error; want a refusal", cfg.Root, cfg.Locations)
		}
	}
}

func TestSyncBufferConcurrentWrites(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("ab"))
			}
		}()
	}
	wg.Wait()
	if got := len(b.String()); got != 8*100*2 {
		t.Errorf("len(String()) after 800 writes of 2 bytes = %d; want 1600", got)
	}
}

// TestHelperSelfChild is the child of TestSelfCommand: it prints its
// variable and its arguments after "--".
func TestHelperSelfChild(t *testing.T) {
	v := os.Getenv("TESTPEER_SELF_CHILD")
	if v == "" {
		t.Skip("child process of TestSelfCommand")
	}
	fmt.Fprintf(os.Stdout, "CHILD %s %s\n", v, strings.Join(flag.Args(), ",")) // stdout is the channel to the parent
	os.Exit(0)
}

func TestSelfCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := SelfCommand(ctx, "TestHelperSelfChild", []string{"TESTPEER_SELF_CHILD=yes"}, "--", "a", "b").Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if want := "CHILD yes a,b\n"; string(out) != want {
		t.Errorf("child output = %q; want %q", out, want)
	}
	if a := SelfArgs("X", "-test.v"); a[0] != os.Args[0] || a[1] != "-test.run=^X$" || a[len(a)-1] != "-test.v" {
		t.Errorf("SelfArgs = %q", a)
	}
}

func TestCSVRow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x_connections.csv")
	if err := os.WriteFile(path, []byte("Name,Open,Established\nw1,2,1\nTotal,5,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := CSVRow(path, "Total")
	if len(got) != 3 || got["Name"] != "Total" || got["Open"] != "5" || got["Established"] != "4" {
		t.Errorf("CSVRow(Total) = %v; want the Total row", got)
	}
	if got := CSVRow(path, "w2"); got != nil {
		t.Errorf("CSVRow(w2) = %v; want nil", got)
	}
	partial := filepath.Join(dir, "partial.csv")
	if err := os.WriteFile(partial, []byte("Name,Open,Established\nTotal,5,4\nw1,2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := CSVRow(partial, "Total"); got != nil {
		t.Errorf("CSVRow(a file being written) = %v; want nil", got)
	}
	if got := CSVRow(filepath.Join(dir, "missing.csv"), "Total"); got != nil {
		t.Errorf("CSVRow(missing file) = %v; want nil", got)
	}
}

func TestChildLine(t *testing.T) {
	sc := bufio.NewScanner(strings.NewReader("starting\nADDR 127.0.0.1:1\nmore\n"))
	if got, err := ChildLine(sc, "ADDR "); err != nil || got != "127.0.0.1:1" {
		t.Errorf("ChildLine = %q, %v; want the address", got, err)
	}
	if !sc.Scan() || sc.Text() != "more" {
		t.Errorf("the scanner does not read on after the line")
	}
	for _, out := range []string{"ERR setrlimit: denied\nADDR x\n", "no address\n"} {
		if _, err := ChildLine(bufio.NewScanner(strings.NewReader(out)), "ADDR "); !errors.Is(err, ErrChildFailed) {
			t.Errorf("ChildLine(%q) error = %v; want ErrChildFailed", out, err)
		}
	}
}

func TestGo(t *testing.T) {
	var done <-chan struct{}
	var sawCancel bool
	t.Run("returns on cancel", func(t *testing.T) {
		done = Go(t, "run", time.Second, func(ctx context.Context) {
			<-ctx.Done()
			sawCancel = true
		})
		select {
		case <-done:
			t.Fatal("run returned before the test ended")
		default:
		}
	})
	select {
	case <-done:
	default:
		t.Fatal("done not closed after the cleanup")
	}
	if !sawCancel {
		t.Error("run's context was not cancelled")
	}
	stuck := make(chan struct{})
	defer close(stuck)
	f := &fakeT{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != (endTest{}) {
				panic(r)
			}
		}()
		var cleanups []func()
		ct := &cleanupT{fakeT: f, cleanups: &cleanups}
		Go(ct, "stuck", 10*time.Millisecond, func(context.Context) { <-stuck })
		for _, c := range cleanups {
			c()
		}
	}()
	if !strings.HasPrefix(f.ended, "fatal: stuck did not return") {
		t.Errorf("a run that ignores its context ended the test with %q; want a fatal naming it", f.ended)
	}
}

// cleanupT collects cleanups instead of registering them with the test.
type cleanupT struct {
	*fakeT
	cleanups *[]func()
}

func (c *cleanupT) Cleanup(f func()) { *c.cleanups = append(*c.cleanups, f) }
