package master

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master/dispatch"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// Real-process tests: an in-process cicada master with Debian's
// python3-locust 2.12.1 workers (/usr/bin/locust) against a real nginx.
// They are skipped with -short, and skipped when a peer is missing unless
// CI=true, where they fail.

// requirePeers skips real-process tests with -short; startNginx and
// startPythonWorker check that their peer is installed.
func requirePeers(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
}

// nginxServer is a private nginx on a free loopback port that answers "/"
// with 200 and "/fail" with 500, counting requests in its access log.
type nginxServer struct {
	*testpeer.Nginx
	url string
}

func startNginx(t *testing.T) *nginxServer {
	t.Helper()
	n := testpeer.StartNginx(t, testpeer.NginxConfig{AccessLog: true, Locations: []testpeer.Location{
		{Path: "/", Status: 200, Body: "ok\n"},
		{Path: "/fail", Status: 500, Body: "no\n"},
	}})
	return &nginxServer{Nginx: n, url: n.URL()}
}

// stop ends nginx by its PID (SIGQUIT: graceful, logs flushed).
func (n *nginxServer) stop() { _ = n.Stop() }

// requests stops nginx (so that every answered request is logged) and
// returns the number of requests in its access log, by status.
func (n *nginxServer) requests(t *testing.T) (total int, byStatus map[string]int) {
	t.Helper()
	n.stop()
	total, byStatus, err := n.Requests()
	if err != nil {
		t.Fatal(err)
	}
	return total, byStatus
}

// pythonWorker is a Debian python3-locust worker process. cmd, log and
// done are the Process's Cmd, LogPath and Done(), under their old names.
type pythonWorker struct {
	*testpeer.Process
	cmd  *exec.Cmd
	log  string
	done <-chan struct{}
}

func writeLocustfile(t *testing.T, wait float64, paths map[string]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("from locust import FastHttpUser, task, constant\n\n")
	for _, cls := range []string{"ApiUser", "WebUser"} {
		path, ok := paths[cls]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "class %s(FastHttpUser):\n    wait_time = constant(%v)\n", cls, wait)
		if cls == "WebUser" {
			b.WriteString("    weight = 3\n")
		}
		fmt.Fprintf(&b, "\n    @task\n    def go(self):\n        self.client.get(%q)\n\n", path)
	}
	p := filepath.Join(t.TempDir(), "locustfile.py")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func startPythonWorker(t *testing.T, locustfile string, port int) *pythonWorker {
	t.Helper()
	p := testpeer.StartLocust(t, testpeer.LocustConfig{
		Args: []string{"-f", locustfile, "--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(port)},
	})
	return &pythonWorker{Process: p, cmd: p.Cmd, log: p.LogPath, done: p.Done()}
}

// exited waits for the worker process to end by itself.
func (w *pythonWorker) exited(t *testing.T) {
	t.Helper()
	if exited, _ := w.Wait(waitShort); !exited {
		t.Errorf("python worker %d did not exit after quit; log:\n%s", w.Pid(), w.Log())
	}
}

func (w *pythonWorker) logText() string { return w.Log() }

var webAPIClasses = []UserClass{{Name: "WebUser", Weight: 3}, {Name: "ApiUser", Weight: 1}}

// expectedSplit is Locust's split of users over the workers (the dispatcher
// is checked against Locust's own in package dispatch).
func expectedSplit(t *testing.T, ids []string, users int64, rate float64) dispatch.Mapping {
	t.Helper()
	d, err := dispatch.New(ids, webAPIClasses)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.NewDispatch(users, rate); err != nil {
		t.Fatal(err)
	}
	var last dispatch.Mapping
	for {
		s, ok := d.Next()
		if !ok {
			return last
		}
		last = s.Users
	}
}

// checkCSV parses the four CSV files and returns the Aggregated request
// count of _stats.csv.
func checkCSV(t *testing.T, prefix string) int64 {
	t.Helper()
	headers := map[string][]string{
		"_stats.csv":         stats.StatsCSVHeader,
		"_failures.csv":      stats.FailuresCSVHeader,
		"_exceptions.csv":    stats.ExceptionsCSVHeader,
		"_stats_history.csv": stats.HistoryCSVHeader,
	}
	var aggregated int64 = -1
	for suffix, header := range headers {
		b, err := os.ReadFile(prefix + suffix)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatalf("%s is not well-formed CSV: %v", suffix, err)
		}
		if !reflect.DeepEqual(rows[0], header) {
			t.Errorf("%s header = %v", suffix, rows[0])
		}
		for _, r := range rows[1:] {
			if len(r) != len(header) {
				t.Errorf("%s row has %d fields: %v", suffix, len(r), r)
			}
		}
		if suffix == "_stats.csv" {
			last := rows[len(rows)-1]
			if last[1] != "Aggregated" {
				t.Fatalf("_stats.csv last row %v", last)
			}
			aggregated, _ = strconv.ParseInt(last[2], 10, 64)
		}
		if suffix == "_stats_history.csv" && len(rows) < 3 {
			t.Errorf("_stats_history.csv has %d rows", len(rows))
		}
	}
	return aggregated
}

// runPythonCluster runs a headless cicada master with two Python workers
// against nginx and checks split, counts, CSV and exit code.
func runPythonCluster(t *testing.T, wait float64, users int64, runTime time.Duration) {
	requirePeers(t)
	ng := startNginx(t)
	logs := &logBuf{}
	o := testOptions(logs)
	o.Headless = true
	o.ExpectWorkers = 2
	o.Users = int(users)
	o.SpawnRate = float64(users)
	o.RunTime = runTime
	o.Host = ng.url
	o.UserClasses = webAPIClasses
	o.StopTimeout = time.Second // users finish their request, so nginx and the stats agree
	o.FinalReportTimeout, o.FinalReportGrace = 0, 0
	if d, err := time.ParseDuration(os.Getenv("CICADA_TEST_FINAL_WAIT")); err == nil {
		o.FinalReportTimeout = d // demonstrate what Locust's 0.5 s loses
	}
	o.ExpectWorkersMaxWait = 60 * time.Second
	prefix := filepath.Join(t.TempDir(), "run")
	o.CSVPrefix = prefix
	var out syncBuf
	o.Stderr = &out
	h := startMaster(t, o, logs)
	port := h.m.Addr().(*net.TCPAddr).Port
	lf := writeLocustfile(t, wait, map[string]string{"WebUser": "/", "ApiUser": "/api"})
	w1 := startPythonWorker(t, lf, port)
	w2 := startPythonWorker(t, lf, port)

	// While running, each worker reports Locust's split.
	var split map[string]map[string]int64
	eventually(t, waitLong, "both workers running the target users", func() bool {
		s := h.m.Status()
		if s.State != protocol.StateRunning || len(s.Workers) != 2 {
			return false
		}
		split = map[string]map[string]int64{}
		var total int64
		for _, w := range s.Workers {
			split[w.ID] = w.UserClassesCount
			total += w.UserCount
		}
		return total == users
	})
	var ids []string
	for id := range split {
		ids = append(ids, id)
	}
	want := expectedSplit(t, ids, users, float64(users))
	if !reflect.DeepEqual(dispatch.Mapping(split), want) {
		t.Errorf("workers run %v; Locust's dispatcher splits %v", split, want)
	}

	code, err := h.wait()
	if err != nil {
		t.Fatal(err)
	}
	w1.exited(t)
	w2.exited(t)
	snap := h.m.Snapshot()
	served, byStatus := ng.requests(t)
	t.Logf("nginx served %d requests %v; master counted %d (%d failures)", served, byStatus, snap.Total.NumRequests, snap.Total.NumFailures)
	if code != 0 {
		t.Errorf("exit code %d; want 0", code)
	}
	if snap.Total.NumFailures != 0 {
		t.Errorf("%d failures", snap.Total.NumFailures)
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
	if c := logs.count("quit. "); c != 2 {
		t.Errorf("%d worker quit messages logged; want 2", c)
	}
	for _, w := range []*pythonWorker{w1, w2} {
		if log := w.logText(); strings.Contains(log, "Unknown message type") || strings.Contains(log, "Traceback") {
			t.Errorf("python worker log:\n%s", log)
		}
	}
	if !strings.Contains(out.String(), "Response time percentiles (approximated)") {
		t.Errorf("no summary on stderr:\n%s", out.String())
	}
}

func TestPythonWorkersNginx(t *testing.T) {
	runPythonCluster(t, 0.5, 8, 4*time.Second)
}

// TestPythonWorkersContinuous has users send without waiting until the run
// time ends: the totals still equal nginx's count, which needs the wait
// for the workers' final reports (Locust waits 0.5 s).
func TestPythonWorkersContinuous(t *testing.T) {
	runPythonCluster(t, 0, 4, 3*time.Second)
}

func TestPythonWorkerFailuresExitCode(t *testing.T) {
	requirePeers(t)
	ng := startNginx(t)
	logs := &logBuf{}
	o := testOptions(logs)
	o.Headless = true
	o.Users = 2
	o.SpawnRate = 2
	o.RunTime = 2 * time.Second
	o.Host = ng.url
	o.UserClasses = []UserClass{{Name: "ApiUser"}}
	three := 3
	o.ExitCodeOnError = &three
	o.FinalReportTimeout, o.FinalReportGrace = 0, 0
	var out syncBuf
	o.Stderr = &out
	h := startMaster(t, o, logs)
	w := startPythonWorker(t, writeLocustfile(t, 0.2, map[string]string{"ApiUser": "/fail"}), h.m.Addr().(*net.TCPAddr).Port)
	code, err := h.wait()
	if err != nil {
		t.Fatal(err)
	}
	w.exited(t)
	if code != 3 {
		t.Errorf("exit code %d; want 3 (--exit-code-on-error)", code)
	}
	snap := h.m.Snapshot()
	if snap.Total.NumFailures == 0 || snap.Total.NumFailures != snap.Total.NumRequests {
		t.Errorf("%d failures of %d requests", snap.Total.NumFailures, snap.Total.NumRequests)
	}
	if !strings.Contains(out.String(), "Error report") || !logs.has("Shutting down (exit code 3)") {
		t.Errorf("stderr:\n%s\nlogs:\n%s", out.String(), logs)
	}
}

// TestPythonWorkerKilled kills one of two workers mid-run: it goes missing
// after about 4 s without heartbeats, and once deleted its users run on the
// survivor.
func TestPythonWorkerKilled(t *testing.T) {
	requirePeers(t)
	ng := startNginx(t)
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = webAPIClasses
	o.Host = ng.url
	o.DeadTicks = 2 // deleted ~2 s after missing instead of 60
	o.FinalReportTimeout, o.FinalReportGrace = 0, 0
	h := startMaster(t, o, logs)
	port := h.m.Addr().(*net.TCPAddr).Port
	lf := writeLocustfile(t, 0.5, map[string]string{"WebUser": "/", "ApiUser": "/api"})
	w1 := startPythonWorker(t, lf, port)
	w2 := startPythonWorker(t, lf, port)
	eventually(t, waitLong, "two ready workers", func() bool { return h.m.Status().WorkerCount == 2 })
	if err := h.m.Start(6, 100, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, "6 users running", func() bool {
		s := h.m.Status()
		return s.State == protocol.StateRunning && s.UserCount == 6
	})
	// Worker ids carry no pid: kill w1 and see which id goes missing.
	_ = w1.Signal(syscall.SIGKILL)
	<-w1.Done()
	var gone string
	eventually(t, waitLong, "a worker missing", func() bool {
		for _, w := range h.m.Status().Workers {
			if w.State == protocol.StateMissing {
				gone = w.ID
				return true
			}
		}
		return false
	})
	if !logs.has(fmt.Sprintf("Worker %s failed to send heartbeat, setting state to missing.", gone)) {
		t.Errorf("missing not logged:\n%s", logs)
	}
	eventually(t, waitLong, "survivor runs all 6 users", func() bool {
		st := h.m.Status()
		return len(st.Workers) == 1 && st.Workers[0].ID != gone && st.Workers[0].UserCount == 6
	})
	h.m.Quit()
	if code, err := h.wait(); err != nil || code != 0 {
		t.Errorf("Run = %d, %v", code, err)
	}
	w2.exited(t)
	if logs.has("sent no final stats report") {
		t.Errorf("survivor missed its final report:\n%s", logs)
	}
}
