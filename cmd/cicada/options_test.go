package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// TestWorkerProcesses runs `cicada --worker --processes 2` (a child
// process) against a headless cicada master that expects 2 workers: the
// test only starts when both child workers are connected, requests are
// counted, and the parent exits 0 once the master quits its children.
func TestWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 2 s test")
	}
	srv := startTarget(t)
	port := freePort(t)
	scen := writeScenario(t, "users:\n  - name: U\n    wait: constant(0.05)\n    tasks: [{path: /}]\n")
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := testpeer.SelfCommand(ctx, "TestHelperProcess", []string{"CICADA_TEST_HELPER=1", "HOME=" + t.TempDir()},
		"--", "--worker", "--processes", "2", "--master-port", strconv.Itoa(port), "-f", scen, "--node-id", "pw")
	cmd.Dir = t.TempDir()
	var werr bytes.Buffer
	cmd.Stderr = &werr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(t.TempDir(), "OUT")
	// The master writes its tables and its log to stderr from two
	// goroutines: a synchronised buffer, as os.Stderr is.
	var out bytes.Buffer
	var errb syncBuffer
	code := run([]string{"--master", "--headless", "--expect-workers", "2", "--expect-workers-max-wait", "30",
		"--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(port),
		"-u", "4", "-r", "4", "-t", "2s", "-f", scen, "-H", "http://" + srv.Addr().String(), "--csv", prefix}, &out, &errb)
	if code != 0 {
		t.Fatalf("master exit %d; stderr:\n%s\nworkers:\n%s", code, errb.String(), werr.String())
	}
	err := cmd.Wait()
	if ctx.Err() != nil || err != nil {
		t.Fatalf("worker parent: %v (ctx %v); stderr:\n%s", err, ctx.Err(), werr.String())
	}
	for _, id := range []string{"pw_0", "pw_1"} {
		if !strings.Contains(errb.String(), id) {
			t.Errorf("the master's log does not name worker %s:\n%s", id, errb.String())
		}
	}
	data, err := os.ReadFile(prefix + "_stats.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(rows) < 2 || rows[len(rows)-1][1] != "Aggregated" || rows[0][2] != "Request Count" {
		t.Fatalf("stats CSV %q: %v", data, err)
	}
	if n, _ := strconv.Atoi(rows[len(rows)-1][2]); n == 0 {
		t.Errorf("no requests counted: %q", data)
	}
}

// TestProcessesRefused: values --processes cannot mean are usage errors.
func TestProcessesRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--worker", "--processes", "-2"},
		{"--master", "--processes", "2"},
	} {
		_, err := config.NewParser(&bytes.Buffer{}, func(string) string { return "" }, t.TempDir(), t.TempDir()).Parse(args)
		if err == nil || !strings.Contains(err.Error(), "--processes") {
			t.Errorf("%v: err %v; want a usage error naming --processes", args, err)
		}
	}
}

// TestEqualWeights: every class and task weight becomes 1 and a
// sequential class picks at random, as Locust's assign_equal_weights.
func TestEqualWeights(t *testing.T) {
	scen := writeScenario(t, `users:
  - name: A
    weight: 5
    sequential: true
    tasks:
      - {path: /a, weight: 3}
      - {path: /b, weight: 7}
  - name: B
    fixed_count: 2
    tasks:
      - {path: /c, weight: 9}
`)
	for _, equal := range []bool{false, true} {
		a := &app{cfg: &config.Config{Locustfile: scen, EqualWeights: equal}, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
		if _, err := a.setupLogging(); err != nil {
			t.Fatal(err)
		}
		a.cfg.LogLevel = "INFO"
		if err := a.loadScenario(); err != nil {
			t.Fatal(err)
		}
		a.applyEqualWeights()
		var got []int
		for _, c := range a.file.Scenario.Classes {
			got = append(got, c.Weight, c.FixedCount)
			for _, task := range c.Tasks {
				got = append(got, task.Weight)
			}
		}
		want := []int{5, 0, 3, 7, 0, 2, 9}
		if equal {
			want = []int{1, 0, 1, 1, 1, 2, 1}
		}
		if !slicesEqual(got, want) || a.file.Scenario.Classes[0].Sequential == equal {
			t.Errorf("equal %v: weights %v, sequential %v; want %v, %v", equal, got, a.file.Scenario.Classes[0].Sequential, want, !equal)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
