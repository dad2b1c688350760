package worker_test

import (
	"fmt"
	"github.com/cicada-load/cicada/worker"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLocustMasterHeadless runs a real Locust 2.12.1 master (headless, 200
// users at 100/s for 20 s) with two cicada workers against a private nginx:
// each worker runs 100 users, nothing fails, and the master's request count
// equals nginx's access log.
func TestLocustMasterHeadless(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 20 s Locust test")
	}
	t.Parallel()
	ng := worker.StartNginx(t)
	dir := t.TempDir()
	port := worker.FreePort(t)
	out := filepath.Join(dir, "OUT")
	m := startLocust(t, dir, "--headless", "--expect-workers", "2", "-u", "200", "-r", "100", "-t", "20s",
		"-H", ng.URL(), "--csv", out, "--master-bind-port", strconv.Itoa(port))
	w1 := startCicadaWorker(t, port)
	w2 := startCicadaWorker(t, port)

	worker.PollUntil(t, 40*time.Second, "100 users on each worker", func() bool {
		return w1.users() == 100 && w2.users() == 100
	})
	if err := m.wait(t, 60*time.Second); err != nil {
		t.Fatalf("locust master exited with %v; log:\n%s", err, m.log())
	}
	for i, w := range []*cicadaWorker{w1, w2} {
		if err := w.result(t, 15*time.Second); err != nil {
			t.Errorf("worker %d Run after the master's quit = %v; want nil", i+1, err)
		}
	}
	reqs, fails := aggregated(t, out+"_stats.csv")
	t.Logf("master: %d requests, %d failures; nginx: %d lines", reqs, fails, ng.Requests(t))
	if fails != 0 {
		t.Errorf("Aggregated failures = %d; want 0", fails)
	}
	if got := ng.Requests(t); got != reqs || reqs < 1000 {
		// What tells the causes apart: nginx's statuses (499: a request
		// the worker abandoned), the workers' quit timing against Locust's
		// 0.5 s wait for final reports, users that outlived the report.
		_, byStatus, _ := ng.Nginx.Requests()
		t.Errorf("master counted %d requests, nginx logged %d; want equal (and > 1000)\nnginx by status: %v\nworker 1 log:\n%s\nworker 2 log:\n%s\nmaster log:\n%s",
			reqs, got, byStatus, w1.log, w2.log, m.log())
	}
	if p := m.problems(); len(p) > 0 {
		t.Errorf("master log has warnings or errors:\n%s", strings.Join(p, "\n"))
	}
}

// TestLocustMasterMissingWorker drops one cicada worker abruptly (no quit):
// the master marks it missing.
func TestLocustMasterMissingWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Locust master")
	}
	t.Parallel()
	ng := worker.StartNginx(t)
	dir := t.TempDir()
	port := worker.FreePort(t)
	m := startLocust(t, dir, "--headless", "--expect-workers", "2", "-u", "4", "-r", "4", "-t", "60s",
		"-H", ng.URL(), "--master-bind-port", strconv.Itoa(port))
	w1 := startCicadaWorker(t, port)
	w2 := startCicadaWorker(t, port)
	worker.PollUntil(t, 40*time.Second, "2 users on each worker", func() bool { return w1.users() == 2 && w2.users() == 2 })

	w1.cancel()
	want := fmt.Sprintf("Worker %s failed to send heartbeat, setting state to missing.", w1.w.NodeID())
	worker.PollUntil(t, 20*time.Second, "the master to mark the worker missing", func() bool {
		return strings.Contains(m.log(), want)
	})
	m.kill(syscall.SIGTERM)
	if err := w2.result(t, 20*time.Second); err != nil {
		t.Errorf("surviving worker Run after the master's quit = %v; want nil", err)
	}
	if p := m.problems(); len(p) > 0 {
		t.Errorf("master log has warnings or errors:\n%s", strings.Join(p, "\n"))
	}
}

// TestLocustMasterWebAndRestart drives a real Locust master through its web
// API (start, raise, lower, stop, start again), then kills it with SIGKILL
// and starts a new one on the same ports: the running cicada workers
// register with the new master without being restarted, and run its test.
func TestLocustMasterWebAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Locust masters")
	}
	t.Parallel()
	ng := worker.StartNginx(t)
	dir := t.TempDir()
	port, webPort := worker.FreePort(t), worker.FreePort(t)
	args := []string{"--web-host", "127.0.0.1", "--web-port", strconv.Itoa(webPort), "-H", ng.URL(),
		"--master-bind-port", strconv.Itoa(port)}
	m := startLocust(t, dir, args...)
	api := &webAPI{base: fmt.Sprintf("http://127.0.0.1:%d", webPort), c: http.Client{Timeout: 10 * time.Second}}
	w1 := startCicadaWorker(t, port)
	w2 := startCicadaWorker(t, port)
	ids := []string{w1.w.NodeID(), w2.w.NodeID()}

	waitWorkers := func(state string) {
		t.Helper()
		worker.PollUntil(t, 40*time.Second, "both workers "+state+" in /stats/requests", func() bool {
			ws, err := api.workers()
			return err == nil && ws[ids[0]] == state && ws[ids[1]] == state
		})
	}
	waitUsers := func(each int64) {
		t.Helper()
		worker.PollUntil(t, 40*time.Second, fmt.Sprintf("%d users on each worker", each), func() bool {
			return w1.users() == each && w2.users() == each
		})
	}

	waitWorkers("ready")
	api.swarm(t, 10, 10)
	waitUsers(5)
	waitWorkers("running")
	api.swarm(t, 20, 20) // raise
	waitUsers(10)
	api.swarm(t, 4, 10) // lower
	waitUsers(2)
	api.stop(t)
	waitUsers(0)
	waitWorkers("ready")
	api.swarm(t, 6, 6) // start again
	waitUsers(3)
	api.stop(t)
	waitUsers(0)
	waitWorkers("ready")
	if p := m.problems(); len(p) > 0 {
		t.Errorf("master log has warnings or errors:\n%s", strings.Join(p, "\n"))
	}

	// Kill the master; a new one on the same ports gets the workers back.
	m.kill(syscall.SIGKILL)
	m2 := startLocust(t, dir, args...)
	waitWorkers("ready")
	api.swarm(t, 8, 8)
	waitUsers(4)
	waitWorkers("running")
	api.stop(t)
	waitUsers(0)
	m2.kill(syscall.SIGTERM)
	for i, w := range []*cicadaWorker{w1, w2} {
		if err := w.result(t, 20*time.Second); err != nil {
			t.Errorf("worker %d Run after the master's quit = %v; want nil", i+1, err)
		}
	}
	if ng.Requests(t) == 0 {
		t.Error("no requests reached nginx")
	}
	if p := m2.problems(); len(p) > 0 {
		t.Errorf("restarted master log has warnings or errors:\n%s", strings.Join(p, "\n"))
	}
}
