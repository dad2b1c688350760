package worker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/scenario"
)

// requirePeer returns the path of an external program, skipping the test
// when it is missing (failing under CI=true).
func requirePeer(t *testing.T, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI=true: %v", path, err)
		}
		t.Skipf("%s not installed: %v", path, err)
	}
	return path
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// pollUntil polls cond every 50 ms until it holds or d passes.
func pollUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nginx is a private nginx serving "hello" on a free 127.0.0.1 port.
type nginx struct {
	port      int
	accessLog string
}

func startNginx(t *testing.T) *nginx {
	t.Helper()
	bin := requirePeer(t, "/usr/sbin/nginx")
	dir := t.TempDir()
	n := &nginx{port: freePort(t), accessLog: filepath.Join(dir, "access.log")}
	conf := fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log %[2]s;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:%[3]d;
    location / { return 200 "hello\n"; }
  }
}
`, dir, n.accessLog, n.port)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", cf, "-p", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	pollUntil(t, 10*time.Second, "nginx to listen", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", n.port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return n
}

func (n *nginx) url() string { return fmt.Sprintf("http://127.0.0.1:%d", n.port) }

func (n *nginx) requests(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(n.accessLog)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{'\n'})
}

const locustfile = `from locust import HttpUser, task, constant

class HelloWorldUser(HttpUser):
    wait_time = constant(0.5)

    @task
    def hello(self):
        self.client.get("/")
`

// locustMaster is a real Python Locust master process.
type locustMaster struct {
	cmd    *exec.Cmd
	stderr string // file
	done   chan struct{}
	err    error
}

func startLocust(t *testing.T, dir string, args ...string) *locustMaster {
	t.Helper()
	bin := requirePeer(t, "/usr/bin/locust")
	lf := filepath.Join(dir, "locustfile.py")
	if err := os.WriteFile(lf, []byte(locustfile), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &locustMaster{stderr: filepath.Join(dir, fmt.Sprintf("master-%d.log", time.Now().UnixNano())), done: make(chan struct{})}
	ef, err := os.Create(m.stderr)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(bin, append([]string{"-f", lf, "--master", "--master-bind-host", "127.0.0.1", "--loglevel", "INFO"}, args...)...)
	m.cmd.Dir = dir
	m.cmd.Stderr = ef
	m.cmd.Stdout = ef
	m.cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start locust: %v", err)
	}
	go func() {
		m.err = m.cmd.Wait()
		ef.Close()
		close(m.done)
	}()
	t.Cleanup(func() { m.kill(syscall.SIGKILL) })
	return m
}

func (m *locustMaster) kill(sig syscall.Signal) {
	select {
	case <-m.done:
		return
	default:
	}
	_ = m.cmd.Process.Signal(sig)
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

func (m *locustMaster) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-m.done:
		return m.err
	case <-time.After(d):
		t.Fatalf("locust master still running after %v; log:\n%s", d, m.log())
		return nil
	}
}

func (m *locustMaster) log() string {
	b, _ := os.ReadFile(m.stderr)
	return string(b)
}

// problems returns the master's log lines at WARNING or above, and
// tracebacks, except the ones listed as expected.
func (m *locustMaster) problems(expected ...string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(m.log()))
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "/WARNING/") && !strings.Contains(line, "/ERROR/") &&
			!strings.Contains(line, "/CRITICAL/") && !strings.Contains(line, "Traceback") {
			continue
		}
		ok := false
		for _, e := range expected {
			if strings.Contains(line, e) {
				ok = true
			}
		}
		if !ok {
			out = append(out, line)
		}
	}
	return out
}

// cicadaWorker is an in-process worker running the HelloWorldUser scenario.
type cicadaWorker struct {
	w      *worker.Worker
	cancel context.CancelFunc
	res    chan error
}

const helloScenario = `
users:
  - name: HelloWorldUser
    wait: constant(0.5)
    tasks:
      - path: /
`

func startCicadaWorker(t *testing.T, masterPort int) *cicadaWorker {
	t.Helper()
	f, err := scenario.Parse("hello.yaml", []byte(helloScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("CICADA_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	w, err := worker.New(worker.Options{
		MasterPort: masterPort,
		Logger:     log,
		Transport:  zmtp.Options{ReconnectMin: 50 * time.Millisecond, ReconnectMax: 500 * time.Millisecond},
	}, f.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cw := &cicadaWorker{w: w, cancel: cancel, res: make(chan error, 1)}
	go func() { cw.res <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-cw.res:
		case <-time.After(20 * time.Second):
			t.Errorf("worker %s did not stop", w.NodeID())
		}
	})
	return cw
}

func (cw *cicadaWorker) users() int64 {
	_, n := cw.w.UserCount()
	return n
}

func (cw *cicadaWorker) result(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-cw.res:
		cw.res <- err
		return err
	case <-time.After(d):
		t.Fatalf("worker Run did not return within %v", d)
		return nil
	}
}

// aggregated reads the Aggregated row of a Locust stats CSV.
func aggregated(t *testing.T, path string) (requests, failures int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, r := range rows[1:] {
		if r[col["Name"]] == "Aggregated" {
			requests, _ = strconv.Atoi(r[col["Request Count"]])
			failures, _ = strconv.Atoi(r[col["Failure Count"]])
			return requests, failures
		}
	}
	t.Fatalf("no Aggregated row in %s", path)
	return 0, 0
}

// webAPI talks to a Locust master's web UI.
type webAPI struct {
	base string
	c    http.Client
}

func (a *webAPI) swarm(t *testing.T, users int, rate float64) {
	t.Helper()
	form := url.Values{"user_count": {strconv.Itoa(users)}, "spawn_rate": {strconv.FormatFloat(rate, 'f', -1, 64)}}
	resp, err := a.c.PostForm(a.base+"/swarm", form)
	if err != nil {
		t.Fatalf("POST /swarm: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /swarm: %s", resp.Status)
	}
}

func (a *webAPI) stop(t *testing.T) {
	t.Helper()
	resp, err := a.c.Get(a.base + "/stop")
	if err != nil {
		t.Fatalf("GET /stop: %v", err)
	}
	resp.Body.Close()
}

// workers returns the worker ids and states listed by /stats/requests.
func (a *webAPI) workers() (map[string]string, error) {
	resp, err := a.c.Get(a.base + "/stats/requests")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Workers []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"workers"`
	}
	if err := jsonDecode(resp.Body, &body); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, w := range body.Workers {
		out[w.ID] = w.State
	}
	return out, nil
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
