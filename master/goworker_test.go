package master

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master/dispatch"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// goScenario has the same classes as the Python locustfile: WebUser
// (weight 3, GET /) and ApiUser (GET /api).
func goScenario(wait time.Duration) worker.Scenario {
	var wt worker.WaitTime
	if wait > 0 {
		wt = worker.Constant(wait)
	}
	get := func(path string) worker.TaskFunc {
		req := &httpc.Request{Path: path}
		return func(ctx context.Context, u *worker.User) error { return u.DoDiscard(ctx, req, nil) }
	}
	return worker.Scenario{Classes: []worker.UserClass{
		{Name: "WebUser", Weight: 3, Wait: wt, Tasks: []worker.Task{{Name: "index", Fn: get("/")}}},
		{Name: "ApiUser", Weight: 1, Wait: wt, Tasks: []worker.Task{{Name: "api", Fn: get("/api")}}},
	}}
}

// startGoWorker runs a cicada worker in-process until the master quits it.
func startGoWorker(t *testing.T, port int, sc worker.Scenario, logs *logBuf) (*worker.Worker, <-chan struct{}) {
	t.Helper()
	return startGoWorkerWith(t, worker.Options{MasterHost: "127.0.0.1", MasterPort: port, Logger: slog.New(logs).With("logger", "worker")}, sc)
}

// startGoWorkerWith is startGoWorker with the worker's options given.
func startGoWorkerWith(t *testing.T, o worker.Options, sc worker.Scenario) (*worker.Worker, <-chan struct{}) {
	t.Helper()
	w, err := worker.New(o, sc)
	if err != nil {
		t.Fatal(err)
	}
	done := testpeer.Go(t, "the worker", waitLong, func(ctx context.Context) {
		if err := w.Run(ctx); err != nil {
			t.Logf("worker Run returned %v", err)
		}
	})
	return w, done
}

func waitWorkerExit(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(waitLong):
		t.Error("worker did not exit after quit")
	}
}

// TestGoWorkersNginx: a cicada master with two cicada workers, users sending
// without waiting, and (if available) a Python worker beside them. Totals
// equal nginx's count and users are split as Locust splits them.
func TestGoWorkersNginx(t *testing.T) {
	for _, withPython := range []bool{false, true} {
		name := "two-go-workers"
		if withPython {
			name = "go-and-python-workers"
		}
		t.Run(name, func(t *testing.T) {
			requirePeers(t)
			ng := startNginx(t)
			logs := &logBuf{}
			o := testOptions(logs)
			o.Headless = true
			o.ExpectWorkers = 2
			o.Users = 8
			o.SpawnRate = 8
			o.RunTime = 3 * time.Second
			o.Host = ng.url
			o.UserClasses = webAPIClasses
			o.StopTimeout = time.Second
			o.FinalReportTimeout, o.FinalReportGrace = 0, 0
			prefix := filepath.Join(t.TempDir(), "go")
			o.CSVPrefix = prefix
			h := startMaster(t, o, logs)
			port := h.m.Addr().(*net.TCPAddr).Port
			_, done1 := startGoWorker(t, port, goScenario(0), logs)
			var done2 <-chan struct{}
			var py *pythonWorker
			if withPython {
				py = startPythonWorker(t, writeLocustfile(t, 0, map[string]string{"WebUser": "/", "ApiUser": "/api"}), port)
			} else {
				_, done2 = startGoWorker(t, port, goScenario(0), logs)
			}
			var split map[string]map[string]int64
			eventually(t, waitLong, "8 users running", func() bool {
				s := h.m.Status()
				split = map[string]map[string]int64{}
				for _, w := range s.Workers {
					split[w.ID] = w.UserClassesCount
				}
				return s.State == protocol.StateRunning && s.UserCount == 8 && len(s.Workers) == 2
			})
			var ids []string
			for id := range split {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			if want := expectedSplit(t, ids, 8, 8); !reflect.DeepEqual(dispatch.Mapping(split), want) {
				t.Errorf("workers run %v; Locust's dispatcher splits %v", split, want)
			}
			code, err := h.wait()
			if err != nil {
				t.Fatal(err)
			}
			waitWorkerExit(t, done1)
			if withPython {
				py.exited(t)
			} else {
				waitWorkerExit(t, done2)
			}
			snap := h.m.Snapshot()
			served, byStatus := ng.requests(t)
			t.Logf("nginx served %d %v; master counted %d (%d failures); exact percentiles: %v",
				served, byStatus, snap.Total.NumRequests, snap.Total.NumFailures, snap.ExactComplete())
			if code != 0 || snap.Total.NumFailures != 0 {
				t.Errorf("exit code %d, %d failures", code, snap.Total.NumFailures)
			}
			if snap.Total.NumRequests == 0 || int64(served) != snap.Total.NumRequests {
				t.Errorf("master counted %d requests; nginx served %d", snap.Total.NumRequests, served)
			}
			if n := checkCSV(t, prefix); n != snap.Total.NumRequests {
				t.Errorf("_stats.csv Aggregated count %d; want %d", n, snap.Total.NumRequests)
			}
			if logs.has("sent no final stats report") {
				t.Errorf("a worker missed its final report:\n%s", logs)
			}
		})
	}
}

// A real cicada worker's users stop gracefully, then it sends
// client_stopped; the requests they finished since its last periodic
// report come in the next one, after the master deleted its node. Every
// request the target served must be counted once the test has stopped.
func TestGoWorkerRequestsAfterStopCounted(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		_, _ = fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	logs := &logBuf{}
	o := testOptions(logs)
	o.Host = srv.URL
	o.UserClasses = webAPIClasses
	// Users finish their task (none is cut mid-request), and the worker
	// sends client_ready 3 s after client_stopped: its next report, due
	// 1 s after client_stopped at most, comes in between.
	o.StopTimeout = 3 * time.Second
	h := startMaster(t, o, logs)
	startGoWorkerWith(t, worker.Options{MasterHost: "127.0.0.1", MasterPort: h.m.Addr().(*net.TCPAddr).Port,
		StatsInterval: time.Second, Logger: slog.New(logs).With("logger", "worker")}, goScenario(10*time.Millisecond))
	eventually(t, waitLong, "the worker ready", func() bool { return h.m.Status().WorkerCount == 1 })
	if err := h.m.Start(2, 100, nil); err != nil {
		t.Fatal(err)
	}
	// Just after a periodic report, let the target serve a few requests
	// more, which only the report after client_stopped can carry.
	eventually(t, waitLong, "a running report merged", func() bool { return h.m.Snapshot().Total.NumRequests > 0 })
	eventually(t, waitShort, "requests since that report", func() bool {
		return served.Load() >= h.m.Snapshot().Total.NumRequests+5
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := h.m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The target has served its last request (the users have stopped).
	if err := testpeer.Poll(waitShort, 0, func() bool { return h.m.Snapshot().Total.NumRequests == served.Load() }); err != nil {
		t.Errorf("master counted %d requests; the target served %d: %v", h.m.Snapshot().Total.NumRequests, served.Load(), err)
	}
}
