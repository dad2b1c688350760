package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/locustfile"
)

// TestWorkerFetchesScenario: a worker started with -f - runs the scenario
// its cicada master serves (no file of its own): the master exits 0 and
// counts what the target served.
func TestWorkerFetchesScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3 s distributed load test")
	}
	wlog := fetchRun(t, writeScenario(t, "users:\n  - name: Fetched\n    wait: constant(0.05)\n    tasks: [{path: /fetched}]\n"))
	if strings.Contains(wlog, "Python locustfile") {
		t.Errorf("a YAML scenario was read as Python; stderr:\n%s", wlog)
	}
}

// TestWorkerFetchesLocustfile: the same with a master started with -f
// locustfile.py: the worker runs the served Python through the reader (as
// under a Python Locust master >= 2.23).
func TestWorkerFetchesLocustfile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3 s distributed load test")
	}
	lf := filepath.Join(t.TempDir(), "locustfile.py")
	py := "from locust import HttpUser, task, constant\n\nclass Fetched(HttpUser):\n    wait_time = constant(0.05)\n\n" +
		"    @task\n    def fetched(self):\n        self.client.get(\"/fetched\")\n"
	if err := os.WriteFile(lf, []byte(py), 0o600); err != nil {
		t.Fatal(err)
	}
	if wlog := fetchRun(t, lf); !strings.Contains(wlog, "read the master's Python locustfile locustfile.py: 1 user classes") {
		t.Errorf("the worker did not read the served locustfile; stderr:\n%s", wlog)
	}
}

// fetchRun runs a master with -f scen and a worker with -f - for 3 s and
// returns the worker's log.
func fetchRun(t *testing.T, scen string) string {
	t.Helper()
	srv := startTarget(t)
	port := strconv.Itoa(freePort(t))
	prefix := filepath.Join(t.TempDir(), "run")
	var mlog, wlog syncBuffer
	masterDone, workerDone := make(chan int, 1), make(chan int, 1)
	go func() {
		var stdout bytes.Buffer
		masterDone <- run([]string{"--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", port,
			"--expect-workers", "1", "--expect-workers-max-wait", "60", "-f", scen, "-u", "5", "-r", "5", "-t", "3s",
			"-H", srv.URL(), "--csv", prefix}, &stdout, &mlog)
	}()
	go func() {
		var stdout bytes.Buffer
		workerDone <- run([]string{"--worker", "--master-host", "127.0.0.1", "--master-port", port, "-f", "-"}, &stdout, &wlog)
	}()
	for name, ch := range map[string]chan int{"master": masterDone, "worker": workerDone} {
		select {
		case code := <-ch:
			if code != 0 {
				t.Fatalf("%s exit code %d; master stderr:\n%s\nworker stderr:\n%s", name, code, mlog.String(), wlog.String())
			}
		case <-time.After(90 * time.Second):
			t.Fatalf("%s still running after 90 s; master stderr:\n%s\nworker stderr:\n%s", name, mlog.String(), wlog.String())
		}
	}
	total := csvAggregatedRequests(t, prefix+"_stats.csv")
	if served := srv.Counters().Requests; int64(total) != served || total == 0 {
		t.Errorf("CSV Aggregated requests = %d; target served %d", total, served)
	}
	if !strings.Contains(mlog.String(), "Sending scenario file") || !strings.Contains(mlog.String(), "/fetched") {
		t.Errorf("the master did not serve the scenario, or its users did not run it; stderr:\n%s", mlog.String())
	}
	return wlog.String()
}

// TestFetchOnlyForWorkers: -f - on a master or standalone is a usage error.
func TestFetchOnlyForWorkers(t *testing.T) {
	for _, args := range [][]string{{"--master", "-f", "-"}, {"--headless", "-f", "-"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "-f - (the scenario from the master) is for workers") {
			t.Errorf("%v: exit %d, stderr %s", args, code, stderr.String())
		}
	}
}

func TestParseServedScenario(t *testing.T) {
	yamlFile := "users:\n  - name: A\n    tasks: [{path: /}]\n"
	file := func(name, contents string) map[string]any {
		return map[string]any{"locustfiles": []any{map[string]any{"filename": name, "contents": contents}}}
	}
	tests := []struct {
		name    string
		data    map[string]any
		wantErr string
		python  bool
	}{
		{"YAML scenario", file("shop.yaml", yamlFile), "", false},
		{"2.23-2.30 format", map[string]any{"filename": "shop.yaml", "contents": yamlFile}, "", false},
		{"Python master's locustfile", file("locustfile.py", "from locust import HttpUser, task\n\nclass A(HttpUser):\n    @task\n    def t(self):\n        self.client.get('/')\n"), "", false},
		{"Python without a user class", file("locustfile.py", "from locust import HttpUser\n"), "locustfile.py (from the master) defines no HttpUser", true},
		{"Python under another name", file("load", "from locust import HttpUser, task\n\nclass U(HttpUser):\n    pass\n"), "load (from the master):3:1: class U: class without tasks", true},
		{"Python outside the subset", file("locustfile.py", "import gevent\n"), "locustfile.py (from the master):1:1: import gevent", true},
		{"master error", map[string]any{"error": "no such file"}, "the master answered: no such file", false},
		{"two files", map[string]any{"locustfiles": []any{map[string]any{}, map[string]any{}}}, "serves 2 files", false},
		{"a URL", map[string]any{"locustfiles": []any{"https://example.com/l.py"}}, "not a file", false},
		{"no contents", map[string]any{"locustfiles": []any{map[string]any{"filename": "x.yaml"}}}, "no filename or contents", false},
		{"bad YAML", file("x.yaml", "users: [\n"), "x.yaml (from the master)", false},
		{"nothing", map[string]any{}, "serves 0 files", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := (*app)(nil).parseServedScenario(tc.data)
			if tc.wantErr == "" {
				if err != nil || f == nil || len(f.Scenario.Classes) != 1 {
					t.Fatalf("got %v, %v", f, err)
				}
				return
			}
			if !errors.Is(err, ErrScenarioFetch) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want ErrScenarioFetch containing %q", err, tc.wantErr)
			}
			isReader := errors.Is(err, locustfile.ErrNoUsers) || errors.Is(err, locustfile.ErrUnsupported)
			if isReader != tc.python {
				t.Errorf("a locustfile reader error: %v, want %v (%v)", isReader, tc.python, err)
			}
		})
	}
}

func FuzzParseServedScenario(f *testing.F) {
	f.Add("shop.yaml", "users:\n  - name: A\n    tasks: [{path: /}]\n")
	f.Add("locustfile.py", "import locust\n")
	f.Fuzz(func(t *testing.T, name, contents string) {
		file, err := (*app)(nil).parseServedScenario(map[string]any{"locustfiles": []any{map[string]any{"filename": name, "contents": contents}}})
		if (err == nil) == (file == nil) {
			t.Fatalf("file %v and err %v", file, err)
		}
		if err != nil && !errors.Is(err, ErrScenarioFetch) {
			t.Fatalf("error %v does not wrap ErrScenarioFetch", err)
		}
	})
}
