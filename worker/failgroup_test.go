package worker_test

import (
	"context"
	"encoding/csv"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// dynamicLocustfile requests a new URL each time under one name, as the Go
// class of TestFailuresGroupByNameAsLocust does.
const dynamicLocustfile = `from locust import HttpUser, task, constant
import itertools

counter = itertools.count()

class DynamicUser(HttpUser):
    wait_time = constant(0.05)

    @task
    def item(self):
        self.client.get("/status/404?id=%d" % next(counter), name="/item/[id]")
`

// TestFailuresGroupByNameAsLocust runs, side by side, Python Locust
// standalone and a cicada master with a cicada worker, both running a class
// that requests a new URL every time (/status/404?id=N) under the name
// /item/[id]. A failure's text names the request name, not the URL
// (Locust's HttpSession does that for name=), so each failures CSV has
// exactly one row, and the two rows are byte for byte the same: the dynamic
// URLs do not make a row each (issue #19 item 9). (Debian's Locust reports
// an empty version, which its own master refuses from a Python worker, so
// the two run apart.)
//
// Each side runs until it has sent failingRequests requests (distinct
// URLs), then is stopped: the cicada master with Quit, Locust with SIGTERM
// once its failures CSV counts them. A run time cannot be the end: Locust
// 2.12.1's -t is gevent.spawn_later(run_time) with the event loop's clock
// as last updated during its imports, so on a busy machine "-t 3s" ran for
// 0.1 s and wrote no failure at all; the run times below only bound a
// stuck run.
func TestFailuresGroupByNameAsLocust(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Locust for a few seconds")
	}
	t.Parallel()
	srv, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the target", 0, func(ctx context.Context) { _ = srv.Run(ctx) })
	host := "http://" + srv.Addr().String()

	dir := t.TempDir()
	lout := filepath.Join(dir, "LOCUST")
	lp := testpeer.StartLocust(t, testpeer.LocustConfig{Dir: dir, Locustfile: dynamicLocustfile, Args: []string{
		"--headless", "-u", "2", "-r", "100", "-t", "50s", "-H", host, "--csv", lout,
	}})

	var n atomic.Int64
	sc := worker.Scenario{Classes: []worker.UserClass{{
		Name: "DynamicUser",
		Wait: worker.Constant(50 * time.Millisecond),
		Tasks: []worker.Task{{Name: "item", Fn: func(ctx context.Context, u *worker.User) error {
			return u.DoDiscard(ctx, &httpc.Request{Path: "/status/404?id=" + strconv.FormatInt(n.Add(1), 10), Name: "/item/[id]"}, nil)
		}}},
	}}}
	cout := filepath.Join(dir, "CICADA")
	m, err := master.New(master.Options{
		BindHost: "127.0.0.1", BindPort: -1, Headless: true, Users: 2, SpawnRate: 100, RunTime: 50 * time.Second,
		Host: host, UserClasses: []master.UserClass{{Name: "DynamicUser"}}, CSVPrefix: cout,
		StatsFormat: stats.Format{Standalone: true}, // as cicada standalone: texts as Locust standalone's
	})
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Options{MasterPort: m.Addr().(*net.TCPAddr).Port, DisableDiagnosis: true}, sc)
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the cicada worker", 20*time.Second, func(ctx context.Context) { _ = w.Run(ctx) })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Quit (its final reports awaited) once the worker sent enough; after
	// the deadline too, for the check below to say so.
	testpeer.Go(t, "quitting the cicada master", 0, func(ctx context.Context) {
		_ = testpeer.Poll(45*time.Second, 0, func() bool { return n.Load() >= failingRequests || ctx.Err() != nil })
		m.Quit()
	})
	if _, err := m.Run(ctx); err != nil {
		t.Fatalf("cicada master: %v", err)
	}
	// Locust's CSV writer rewrites its files every second (truncate
	// flushes them): stop Locust once they count enough failures.
	if err := testpeer.Poll(45*time.Second, 50*time.Millisecond, func() bool {
		return locustFailures(lout+"_failures.csv") >= failingRequests || !lp.Alive()
	}); err != nil {
		t.Errorf("Locust's failures CSV never counted %d failures: %v", failingRequests, err)
	}
	if err := lp.Stop(syscall.SIGTERM, 30*time.Second); err != nil && !isExit(err) {
		t.Fatalf("stopping Locust: %v; log:\n%s", err, lp.Log())
	}
	if n.Load() < failingRequests {
		t.Fatalf("the cicada worker sent %d requests; want at least %d", n.Load(), failingRequests)
	}
	const want = "HTTPError('404 Client Error: Not Found for url: /item/[id]')"
	for _, side := range []string{lout, cout} {
		rows := readCSV(t, side+"_failures.csv")
		if len(rows) != 2 || rows[1][0] != "GET" || rows[1][1] != "/item/[id]" || rows[1][2] != want {
			t.Errorf("%s_failures.csv has %d rows, the first %q; want one row GET, /item/[id], %s", filepath.Base(side), len(rows)-1, rows[:min(len(rows), 3)], want)
		}
	}
}

// failingRequests is how many requests (each its own URL) each side sends
// before it is stopped.
const failingRequests = 10

// locustFailures returns the total of the Occurrences column of a Locust
// failures CSV, or 0 while it cannot be read (being rewritten).
func locustFailures(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return 0
	}
	total := 0
	for _, r := range rows[min(1, len(rows)):] {
		if n, err := strconv.Atoi(r[len(r)-1]); err == nil {
			total += n
		}
	}
	return total
}

// isExit reports whether err is a process's exit status (Locust exits 1
// after a test with failures).
func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

func readCSV(t *testing.T, path string) [][]string {
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
	return rows
}
