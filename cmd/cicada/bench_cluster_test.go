package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/target"
)

// startBenchTarget runs the built-in target in the test process.
func startBenchTarget(t *testing.T) string {
	s, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "target", 90*time.Second, func(ctx context.Context) {
		if err := s.Run(ctx); err != nil {
			t.Errorf("target Run = %v", err)
		}
	})
	return s.Addr().String()
}

// startCicada runs cicada (the test binary's TestHelperProcess) as a child
// with its output in a log file; it is stopped at the test's end.
func startCicadaChild(t *testing.T, name string, env []string, args ...string) *testpeer.Process {
	cmd := testpeer.SelfCommand(context.Background(), "TestHelperProcess", append([]string{"CICADA_TEST_HELPER=1", "HOME=" + t.TempDir()}, env...),
		append([]string{"--"}, args...)...)
	cmd.Dir = t.TempDir()
	p, err := testpeer.StartProcess(cmd, filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(syscall.SIGTERM, 10*time.Second) })
	return p
}

func benchWorker(t *testing.T, name string, port int, env ...string) *testpeer.Process {
	return startCicadaChild(t, name, env, "--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(port), "--node-id", name)
}

func readCSV(t *testing.T, path string) [][]string {
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

// A bench controller and two worker processes on 127.0.0.1 against the
// built-in target, with a cluster secret: one cps trial at 100
// connections/s for 400 ms is 20 arrivals on each worker, 40 merged; a
// concurrent trial of 31 connections holds 31 (16 + 15) and all answer
// the second round. The workers quit with the controller.
func TestBenchClusterTwoWorkers(t *testing.T) {
	addr := startBenchTarget(t)
	port := testpeer.FreePort(t)
	secret := "CICADA_CLUSTER_SECRET=bench-secret"
	w1, w2 := benchWorker(t, "bw1", port, secret), benchWorker(t, "bw2", port, secret)
	dir := t.TempDir()
	for _, c := range []struct {
		test, load string
		args       []string
		attempted  string
		achieved   float64
		second     string
	}{
		// A busy machine is not this test's subject: pacing and achieved
		// rate get slack; the counts are exact.
		{"cps", "100", []string{"--trial-time", "400ms", "--lag-tolerance", "2s", "--min-achieved", "0.5"}, "40", 50, "0"},
		{"concurrent", "31", nil, "31", 31, "31"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		args := append([]string{"--", "bench", c.test, "-H", "http://" + addr, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(port),
			"--expect-workers", "2", "--expect-workers-max-wait", "40s", "--start", c.load, "--max", c.load, "--pause", "0", "--cpu-busy", "1",
			"--csv", filepath.Join(dir, c.test)}, c.args...)
		cmd := testpeer.SelfCommand(ctx, "TestHelperProcess", []string{"CICADA_TEST_HELPER=1", "HOME=" + t.TempDir(), secret}, args...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s\nworker 1:\n%s", c.test, err, out, w1.Log())
		}
		for _, want := range []string{"cicada dev, kernel sockets, 2 workers", "trials run on worker 1 (bw", "trials run on worker 2 (bw",
			"  worker 1               bw", ", kernel sockets\n  worker 2               bw", "the search's maximum " + c.load} {
			if !strings.Contains(string(out), want) {
				t.Fatalf("%s: output lacks %q:\n%s", c.test, want, out)
			}
		}
		rows := readCSV(t, filepath.Join(dir, c.test+"_bench.csv"))
		ach, _ := strconv.ParseFloat(rows[1][4], 64)
		if len(rows) != 3 || rows[1][5] != c.attempted || rows[1][6] != "0" || ach < c.achieved || rows[1][7] != c.second || rows[1][8] != "0" || rows[1][15] != "pass" {
			t.Fatalf("%s: csv %q", c.test, rows)
		}
		if p95, _ := strconv.ParseFloat(rows[1][12], 64); !(p95 > 0) {
			t.Fatalf("%s: no latency %q", c.test, rows[1])
		}
		if c.test == "cps" { // the workers quit with the first controller: start them again
			for _, w := range []*testpeer.Process{w1, w2} {
				if exited, _ := w.Wait(20 * time.Second); !exited {
					t.Fatalf("worker still running after the controller's quit:\n%s", w.Log())
				}
			}
			w1, w2 = benchWorker(t, "bw1b", port, secret), benchWorker(t, "bw2b", port, secret)
		}
	}
}

// A worker killed (SIGKILL) during the search: the trial it was in is
// INVALID naming it, the search stops with exit status 3 and no maximum
// is reported as found.
func TestBenchClusterWorkerKilled(t *testing.T) {
	addr := startBenchTarget(t)
	port := testpeer.FreePort(t)
	benchWorker(t, "keep", port)
	victim := benchWorker(t, "victim", port)
	ctrl := startCicadaChild(t, "controller", nil, "bench", "tps", "-H", "http://"+addr, "--master", "--master-bind-host", "127.0.0.1",
		"--master-bind-port", strconv.Itoa(port), "--expect-workers", "2", "--expect-workers-max-wait", "40s", "--start", "20", "--max", "40",
		"--trial-time", "20s", "--pause", "0", "--cpu-busy", "1", "--lag-tolerance", "2s")
	if err := testpeer.Poll(40*time.Second, 20*time.Millisecond, func() bool { return strings.Contains(victim.Log(), "bench trial") }); err != nil {
		t.Fatalf("no trial on the victim: %v\n%s\n%s", err, victim.Log(), ctrl.Log())
	}
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if exited, _ := ctrl.Wait(30 * time.Second); !exited {
		t.Fatalf("controller still running:\n%s", ctrl.Log())
	}
	if code := ctrl.Cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("exit %d; want 3\n%s", code, ctrl.Log())
	}
	log := ctrl.Log()
	for _, want := range []string{"(victim) lost during the trial: disconnected", "Result: INVALID: the generator was the limit (worker "} {
		if !strings.Contains(log, want) {
			t.Fatalf("output lacks %q:\n%s", want, log)
		}
	}
	if time.Since(start) > 20*time.Second { // the 20 s trial did not run out
		t.Fatalf("the controller took %v after the kill", time.Since(start))
	}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), "1 ") && strings.Contains(sc.Text(), " pass") {
			t.Fatalf("the lost trial passed: %s", sc.Text())
		}
	}
}

// Cluster options that cannot be honoured are refused before anything
// binds or waits (exit 2).
func TestBenchClusterRefusesOptions(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--expect-workers", "2"}, "--expect-workers needs --master"},
		{[]string{"--cluster-secret-file", "/x"}, "--cluster-secret-file needs --master"},
		{[]string{"--master", "--dataplane", "afpacket"}, "--dataplane with --master: the controller runs no trials; start the workers with --dataplane afpacket"},
		{[]string{"--master", "--expect-workers", "0"}, "--expect-workers 0 must be 1 to 10000"},
		{[]string{"--master", "--master-bind-port", "70000"}, "--master-bind-port 70000 is not a port"},
		{[]string{"--master", "--expect-workers-max-wait", "0s"}, "must be positive"},
		{[]string{"--master", "--cluster-secret-file", "/nonexistent/secret"}, "--cluster-secret-file: open /nonexistent/secret"},
		{[]string{"--master", "--master-bind-host", "256.1.1.1", "--master-bind-port", "1"}, "cluster: bind tcp://256.1.1.1:1"},
		{[]string{"--master", "--step-factor", "1"}, "capacity: invalid search: step factor 1 must be more than 1"},
		{[]string{"--master", "--expect-workers", "3", "--conns", "2", "--test", "tps"}, "--conns 2 over 3 workers: each worker needs at least one keep-alive connection"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errb strings.Builder
			test, args := "cps", c.args
			if i := slices.Index(args, "--test"); i >= 0 {
				test, args = args[i+1], args[:i]
			}
			code := run(append([]string{"bench", test, "-H", "http://127.0.0.1:9"}, args...), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), c.want) {
				t.Fatalf("exit %d; want 2 and %q:\n%s", code, c.want, errb.String())
			}
		})
	}
}

// No worker within --expect-workers-max-wait: exit 1 with the count; a
// Python Locust worker that joins is told to quit (it exits) and named.
func TestBenchClusterWaitRefusesPythonWorker(t *testing.T) {
	port := testpeer.FreePort(t)
	args := []string{"bench", "cps", "-H", "http://127.0.0.1:9", "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(port)}
	var out, errb strings.Builder
	if code := run(append(args, "--expect-workers-max-wait", "300ms"), &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "cicada bench: error: cluster: workers not ready: 0 of 1 expected workers ready after 300ms") {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	lw := testpeer.StartLocust(t, testpeer.LocustConfig{Locustfile: "from locust import HttpUser, task\n\nclass U(HttpUser):\n    @task\n    def t(self):\n        pass\n",
		Args: []string{"--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(port)}})
	errb.Reset()
	code := run(append(args, "--expect-workers-max-wait", "8s"), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "refused: a Python Locust worker") || !strings.Contains(errb.String(), "cannot run cicada bench trials") {
		t.Fatalf("exit %d:\n%s\nlocust:\n%s", code, errb.String(), lw.Log())
	}
	if exited, _ := lw.Wait(20 * time.Second); !exited {
		t.Fatalf("the Python worker did not quit:\n%s", lw.Log())
	}
}
