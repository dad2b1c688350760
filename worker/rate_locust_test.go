package worker_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker"
)

// TestLocustMasterAcceptsDroppedReports: a cicada worker put in rate mode
// under a Python Locust 2.12.1 master (which never sends a rate: SetRate
// is called directly) drops iterations while the target stalls, so its
// stats reports carry the extra top-level key cicada_dropped. The Python
// master merges them without a warning or error, and its request count
// equals what the target served.
func TestLocustMasterAcceptsDroppedReports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 6 s Locust test")
	}
	t.Parallel()
	srv, err := target.New(target.Options{Listen: "127.0.0.1:0", StallAfter: 2 * time.Second, StallFor: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the target", 0, func(ctx context.Context) { _ = srv.Run(ctx) })
	dir := t.TempDir()
	port := worker.FreePort(t)
	out := filepath.Join(dir, "OUT")
	m := startLocust(t, dir, "--headless", "--expect-workers", "1", "-u", "2", "-r", "2", "-t", "6s",
		"-H", srv.URL(), "--csv", out, "--master-bind-port", strconv.Itoa(port))
	w := startCicadaWorker(t, port)
	worker.PollUntil(t, 40*time.Second, "2 users", func() bool { return w.users() == 2 })
	if err := w.w.SetRate(100); err != nil {
		t.Fatal(err)
	}
	if err := m.wait(t, 60*time.Second); err != nil {
		t.Fatalf("locust master exited with %v; log:\n%s", err, m.log())
	}
	rs := w.w.RateStats()
	if rs.Dropped == 0 || rs.Started == 0 {
		t.Fatalf("rate stats %+v: want started and dropped iterations", rs)
	}
	reqs, _ := aggregated(t, out+"_stats.csv")
	t.Logf("worker: %+v; master: %d requests; target: %d", rs, reqs, srv.Counters().Requests)
	if int64(reqs) != srv.Counters().Requests {
		t.Errorf("master counted %d requests, the target served %d", reqs, srv.Counters().Requests)
	}
	if p := m.problems(); len(p) > 0 {
		t.Errorf("master log has warnings or errors:\n%s", strings.Join(p, "\n"))
	}
}
