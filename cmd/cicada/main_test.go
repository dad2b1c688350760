package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/target"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of loggers.
type syncBuffer = testpeer.SyncBuffer

func startTarget(t *testing.T) *target.Server {
	t.Helper()
	srv, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the target", 0, func(ctx context.Context) { _ = srv.Run(ctx) })
	return srv
}

func writeScenario(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	return testpeer.FreePort(t)
}

func TestVersionAndHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "cicada ") {
		t.Errorf("--version: code %d, out %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "--master-bind-port") {
		t.Errorf("--help: code %d, out %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"target", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "--listen") {
		t.Errorf("target --help: code %d, out %q", code, out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	tests := [][]string{
		{"--no-such-flag"},
		{"--master", "--worker"},
		{"-t", "soon"},
		{"--csv-full-history"},
	}
	for _, args := range tests {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "cicada: error:") {
			t.Errorf("run(%q) = %d, stderr %q; want 2 and an error", args, code, errb.String())
		}
	}
}

func TestBadScenarioNamesFileAndLine(t *testing.T) {
	path := writeScenario(t, "users:\n  - name: A\n    tasks:\n      - path: /\n        methd: GET\n")
	var out, errb bytes.Buffer
	code := run([]string{"-f", path, "--headless", "-t", "1s"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), path+":5") || !strings.Contains(errb.String(), "methd") {
		t.Errorf("code %d, stderr:\n%s", code, errb.String())
	}
}

func TestListUsers(t *testing.T) {
	path := writeScenario(t, "users:\n  - name: Web\n    tasks: [{path: /}]\n  - name: Api\n    tasks: [{path: /}]\n")
	var out, errb bytes.Buffer
	if code := run([]string{"-f", path, "--list"}, &out, &errb); code != 0 || out.String() != "Available Users:\n    Web\n    Api\n" {
		t.Errorf("code %d, out %q", code, out.String())
	}
	if code := run([]string{"-f", path, "--headless", "Nope"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "Unknown User(s)") {
		t.Errorf("unknown class: code %d, stderr %q", code, errb.String())
	}
}

// TestStandaloneHeadless runs a short standalone test against the built-in
// target: exit code 0, every request counted (the CSV total equals what the
// server served), and Locust's tables on stderr.
func TestStandaloneHeadless(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3 s load test")
	}
	srv := startTarget(t)
	path := writeScenario(t, "users:\n  - name: Web\n    wait: constant(0.05)\n    tasks: [{path: /}]\n")
	prefix := filepath.Join(t.TempDir(), "out", "run")
	var out syncBuffer
	var stdout bytes.Buffer
	code := run([]string{"-f", path, "--headless", "-u", "20", "-r", "20", "-t", "3s", "-H", srv.URL(), "--csv", prefix, "--html", prefix + ".html"}, &stdout, &out)
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, out.String())
	}
	for _, want := range []string{"Response time percentiles (approximated)", "Shutting down (exit code 0)", "Aggregated"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	total := csvAggregatedRequests(t, prefix+"_stats.csv")
	if served := srv.Counters().Requests; int64(total) != served || total == 0 {
		t.Errorf("CSV Aggregated requests = %d; target served %d", total, served)
	}
	html, err := os.ReadFile(prefix + ".html")
	if err != nil || !bytes.Contains(html, []byte("<html")) {
		t.Errorf("HTML report: %v, %d bytes", err, len(html))
	}
	// The report is written after users stopped: its final ratio uses the
	// users of the moment the stop began, as Locust's (issue 19 item 4).
	if !bytes.Contains(html, []byte("<li>100.0% Web")) {
		i := bytes.Index(html, []byte("Final ratio"))
		t.Errorf("HTML report's final ratio is not 100.0%% Web: %.300s", html[max(i, 0):])
	}
}

func csvAggregatedRequests(t *testing.T, path string) int {
	t.Helper()
	for _, r := range testpeer.ReadCSV(t, path) {
		if len(r) > 2 && r[1] == "Aggregated" {
			n, err := strconv.Atoi(r[2])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("%s has no Aggregated row", path)
	return 0
}

func TestMasterGivesUpWaitingForWorkers(t *testing.T) {
	var out syncBuffer
	var stdout bytes.Buffer
	code := run([]string{"--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(freePort(t)),
		"--expect-workers", "2", "--expect-workers-max-wait", "1", "-u", "2", "-t", "5s"}, &stdout, &out)
	if code != 1 || !strings.Contains(out.String(), "Gave up waiting for workers to connect") {
		t.Errorf("code %d, stderr:\n%s", code, out.String())
	}
}

// TestAutostartWebUI starts standalone with the web UI and --autostart:
// the test runs, the HTTP API shows it, the run time stops it and
// --autoquit ends the process.
func TestAutostartWebUI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3 s load test")
	}
	srv := startTarget(t)
	path := writeScenario(t, "users:\n  - name: Web\n    wait: constant(0.1)\n    tasks: [{path: /}]\n")
	port := freePort(t)
	var out syncBuffer
	var stdout bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"-f", path, "--autostart", "--autoquit", "1", "-u", "5", "-r", "5", "-t", "5s",
			"-H", srv.URL(), "--web-host", "127.0.0.1", "--web-port", strconv.Itoa(port), "--web-auth", "u:p"}, &stdout, &out)
	}()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/stats/requests"
	running := func() bool {
		req, _ := http.NewRequest("GET", url, nil)
		req.SetBasicAuth("u", "p")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct {
			State     string `json:"state"`
			UserCount int    `json:"user_count"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return body.State == "running" && body.UserCount == 5
	}
	if err := testpeer.Poll(20*time.Second, 100*time.Millisecond, running); err != nil {
		t.Errorf("never saw state running with 5 users; stderr:\n%s", out.String())
	}
	// Standalone charts its in-process worker's connections (issue 19
	// item 3): 5 users hold 5 connections.
	connCharted := func() bool {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+strconv.Itoa(port)+"/stats/history", nil)
		req.SetBasicAuth("u", "p")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct {
			ConnOpen []*int `json:"conn_open"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return slices.ContainsFunc(body.ConnOpen, func(n *int) bool { return n != nil && *n == 5 })
	}
	if err := testpeer.Poll(20*time.Second, 200*time.Millisecond, connCharted); err != nil {
		t.Errorf("/stats/history never charted 5 open connections; stderr:\n%s", out.String())
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("did not quit after --autoquit; stderr:\n%s", out.String())
	}
	for _, want := range []string{"--run-time limit reached, stopping test", "--autoquit time reached, shutting down"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}
