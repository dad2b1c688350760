package worker_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/scenario"
	"github.com/cicada-load/cicada/worker"
)

const locustfile = `from locust import HttpUser, task, constant

class HelloWorldUser(HttpUser):
    wait_time = constant(0.5)

    @task
    def hello(self):
        self.client.get("/")
`

// locustMaster is a real Python Locust master process. cmd, stderr (the
// log file) and done are the Process's Cmd, LogPath and Done(), under
// their old names.
type locustMaster struct {
	*testpeer.Process
	cmd    *exec.Cmd
	stderr string
	done   <-chan struct{}
}

func startLocust(t *testing.T, dir string, args ...string) *locustMaster {
	t.Helper()
	p := testpeer.StartLocust(t, testpeer.LocustConfig{
		Dir:        dir,
		Locustfile: locustfile,
		Args:       append([]string{"--master", "--master-bind-host", "127.0.0.1", "--loglevel", "INFO"}, args...),
	})
	return &locustMaster{Process: p, cmd: p.Cmd, stderr: p.LogPath, done: p.Done()}
}

// kill sends sig and waits for the master to exit (SIGKILL after 20 s).
func (m *locustMaster) kill(sig syscall.Signal) { _ = m.Stop(sig, 20*time.Second) }

// wait waits up to d for the master to exit by itself and returns its exit
// error.
func (m *locustMaster) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	exited, err := m.Wait(d)
	if !exited {
		t.Fatalf("locust master still running after %v; log:\n%s", d, m.Log())
	}
	return err
}

func (m *locustMaster) log() string { return m.Log() }

// problems returns the master's log lines at WARNING or above, and
// tracebacks, except the ones listed as expected and Locust's warning that
// a worker "exceeded cpu threshold": it reports the CPU share the worker
// measured (over 90 % of a core under -race on a busy 2-core machine), a
// fact about the machine, not a fault of the protocol.
func (m *locustMaster) problems(expected ...string) []string {
	expected = append(expected, "exceeded cpu threshold")
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
	// log holds the worker's log at INFO and above (its quit timing,
	// users that did not stop before the final report), for a failure
	// message; empty with CICADA_TEST_LOG, which logs to stderr.
	log *testpeer.SyncBuffer
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
	buf := new(testpeer.SyncBuffer)
	log := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
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
	cw := &cicadaWorker{w: w, cancel: cancel, res: make(chan error, 1), log: buf}
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
