package master

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"reflect"
	"sort"
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
	w, err := worker.New(worker.Options{MasterHost: "127.0.0.1", MasterPort: port, Logger: slog.New(logs).With("logger", "worker")}, sc)
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
