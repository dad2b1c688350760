package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master"
)

// locustJSONKeys are Locust HEAD's StatsEntryDict keys (locust/stats.py),
// the keys of every element of --json's array.
var locustJSONKeys = []string{"name", "method", "last_request_timestamp", "start_time", "num_requests", "num_none_requests", "num_failures",
	"total_response_time", "max_response_time", "min_response_time", "total_content_length", "response_times", "num_reqs_per_sec", "num_fail_per_sec"}

// TestThresholdsStandalone runs short standalone tests against the
// built-in target's /delay/50 (50 ms per response): a threshold that must
// fail fails with exit code 99, one that must pass passes, abort_on_fail
// ends a long run early, and --json/--json-file carry Locust HEAD's shape
// plus the verdict.
func TestThresholdsStandalone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load tests of a few seconds")
	}
	srv := startTarget(t)
	const users = "users:\n  - name: Web\n    wait: constant(0.05)\n    tasks: [{path: /delay/50}]\n"
	tests := []struct {
		name      string
		scenario  string
		args      []string
		code      int
		passed    bool
		maxTime   time.Duration
		logWants  string
		csvResult string
	}{
		{
			name: "must pass", scenario: users + "thresholds:\n  - fail_ratio<=0\n  - p50{/delay/50}>=45ms\n",
			args: []string{"-t", "2s", "--threshold", "p99<2s", "--threshold", "rps>1"},
			code: 0, passed: true, maxTime: 30 * time.Second, csvResult: "pass",
		},
		{
			name: "must fail", scenario: users,
			args: []string{"-t", "2s", "--threshold", "p99{GET /delay/50}<20ms"},
			code: master.ExitCodeThresholds, passed: false, maxTime: 30 * time.Second, csvResult: "fail",
		},
		{
			name: "abort_on_fail", scenario: users + "thresholds:\n  - threshold: p99<20ms\n    abort_on_fail: true\n    delay: 1s\n",
			args: []string{"-t", "5m"},
			code: master.ExitCodeThresholds, passed: false, maxTime: 40 * time.Second, csvResult: "fail",
			logWants: "has abort_on_fail: stopping the test",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeScenario(t, tt.scenario)
			args := append([]string{"-f", path, "--headless", "-u", "2", "-r", "2", "-H", srv.URL(), "--only-summary",
				"--csv", filepath.Join(dir, "run"), "--json", "--json-file", filepath.Join(dir, "out"), "--html", filepath.Join(dir, "report.html"),
				"--expect-workers-max-wait", "20"}, tt.args...)
			var stdout bytes.Buffer
			var stderr syncBuffer
			begin := time.Now()
			code := run(args, &stdout, &stderr)
			took := time.Since(begin)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if took > tt.maxTime {
				t.Errorf("the run took %v, more than %v", took, tt.maxTime)
			}
			if tt.logWants != "" && !strings.Contains(stderr.String(), tt.logWants) {
				t.Errorf("stderr lacks %q:\n%s", tt.logWants, stderr.String())
			}
			if !strings.Contains(stderr.String(), "Thresholds ") || !strings.Contains(stderr.String(), "Measured") {
				t.Errorf("no verdict table:\n%s", stderr.String())
			}
			file, err := os.ReadFile(filepath.Join(dir, "out.json")) // Locust adds .json
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(stdout.String(), "\n"); got != string(file) {
				t.Errorf("--json and --json-file differ:\n%s\n---\n%s", got, file)
			}
			checkLocustJSON(t, file, true, tt.passed)
			html, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: "<h2>Thresholds: passed</h2>", false: "<h2>Thresholds: FAILED</h2>"}[tt.passed]; !bytes.Contains(html, []byte(want)) {
				t.Errorf("HTML report lacks %s", want)
			}
			csv, err := os.ReadFile(filepath.Join(dir, "run_thresholds.csv"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
			for _, l := range lines[1:] {
				if tt.csvResult == "pass" && !strings.Contains(l, ",pass,") {
					t.Errorf("CSV row not passed: %s", l)
				}
			}
			if tt.csvResult == "fail" && !strings.Contains(string(csv), ",fail,") {
				t.Errorf("CSV without a failed row:\n%s", csv)
			}
		})
	}
}

// checkLocustJSON checks --json's document: an array of Locust HEAD's
// StatsEntryDict objects (keys and JSON types of test_json_schema), then,
// with thresholds, the verdict element.
func checkLocustJSON(t *testing.T, doc []byte, withVerdict, passed bool) {
	t.Helper()
	var elems []map[string]json.RawMessage
	if err := json.Unmarshal(doc, &elems); err != nil {
		t.Fatalf("not a JSON array of objects: %v\n%s", err, doc)
	}
	if withVerdict {
		if len(elems) < 2 {
			t.Fatalf("%d elements", len(elems))
		}
		last := elems[len(elems)-1]
		elems = elems[:len(elems)-1]
		var v struct {
			Passed     *bool `json:"passed"`
			Aborted    *bool `json:"aborted"`
			Thresholds []struct {
				Threshold string   `json:"threshold"`
				Measured  *float64 `json:"measured"`
				Passed    bool     `json:"passed"`
			} `json:"thresholds"`
		}
		if string(last["name"]) != `"cicada thresholds"` || json.Unmarshal(last["cicada_thresholds"], &v) != nil ||
			v.Passed == nil || *v.Passed != passed || len(v.Thresholds) == 0 {
			t.Errorf("verdict element %s", doc)
		}
	}
	if len(elems) == 0 {
		t.Fatal("no stats entries")
	}
	for _, e := range elems {
		var keys []string
		for k := range e {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := slices.Clone(locustJSONKeys)
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Errorf("entry keys %v, want Locust's %v", keys, want)
		}
		for _, k := range []string{"last_request_timestamp", "start_time", "total_response_time", "max_response_time", "min_response_time"} {
			if !bytes.ContainsAny(e[k], ".e") {
				t.Errorf("%s = %s: not a float", k, e[k])
			}
		}
		for _, k := range []string{"num_requests", "num_none_requests", "num_failures", "total_content_length"} {
			if bytes.ContainsAny(e[k], ".e\"") {
				t.Errorf("%s = %s: not an int", k, e[k])
			}
		}
		for _, k := range []string{"response_times", "num_reqs_per_sec", "num_fail_per_sec"} {
			if !bytes.HasPrefix(e[k], []byte("{")) {
				t.Errorf("%s = %s: not a dict", k, e[k])
			}
		}
	}
}

// Without thresholds --json is Locust HEAD's array alone.
func TestJSONWithoutThresholds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 1 s load test")
	}
	srv := startTarget(t)
	path := writeScenario(t, "users:\n  - name: Web\n    wait: constant(0.05)\n    tasks: [{path: /}]\n")
	var stdout bytes.Buffer
	var stderr syncBuffer
	code := run([]string{"-f", path, "--headless", "-u", "1", "-r", "1", "-t", "1s", "-H", srv.URL(), "--json", "--only-summary",
		"--expect-workers-max-wait", "20"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr.String())
	}
	checkLocustJSON(t, stdout.Bytes(), false, true)
	if strings.Contains(stderr.String(), "Thresholds ") {
		t.Errorf("a verdict table without thresholds:\n%s", stderr.String())
	}
}

func TestThresholdOptionsRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--headless", "-t", "1s", "--threshold", "p99<"}, 1, `--threshold: thresholds: bad threshold expression "p99<": no limit`},
		{[]string{"--headless", "-t", "1s", "--threshold", "dropped<=0"}, 1, "counts no dropped iterations"},
		{[]string{"--worker", "--json"}, 2, "--json, --json-file and --threshold are for the master"},
		{[]string{"--worker", "--threshold", "p99<5"}, 2, "--json, --json-file and --threshold are for the master"},
	} {
		var out, errb bytes.Buffer
		if code := run(tt.args, &out, &errb); code != tt.code || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%q: exit code %d, stderr %q; want %d and %q", tt.args, code, errb.String(), tt.code, tt.want)
		}
	}
}

// TestGeneratorLimitedExitCode: a standalone run whose own open-files
// limit (256, set with prlimit) is below its 300 users warns about it and
// exits 98, the load generator being the limit, although the scenario's
// threshold on the target's latency passes.
func TestGeneratorLimitedExitCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 2 s load test")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		testpeer.Missing(t, "prlimit (util-linux): %v", err)
		return
	}
	srv := startTarget(t)
	path := writeScenario(t, "users:\n  - name: Web\n    wait: constant(0.5)\n    tasks: [{path: /}]\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := testpeer.SelfCommand(ctx, "TestHelperProcess", []string{"CICADA_TEST_HELPER=1", "HOME=" + t.TempDir()},
		"--", "-f", path, "--headless", "-u", "300", "-r", "300", "-t", "2s", "-H", srv.URL(), "--only-summary",
		"--threshold", "p50<10s", "--expect-workers-max-wait", "20")
	cmd.Args = append([]string{prlimit, "--nofile=256:256", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = prlimit
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("cicada did not exit within 60 s; stderr:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	out := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != master.ExitCodeGeneratorLimited {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, master.ExitCodeGeneratorLimited, out)
	}
	for _, want := range []string{"[open-files]", "The load generator itself was the limit", "Thresholds: all 1 passed"} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
}
