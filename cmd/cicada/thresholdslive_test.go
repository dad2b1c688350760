package main

import (
	"bytes"
	"regexp"
	"testing"
)

// TestThresholdsLiveStandalone: a standalone headless run prints every
// threshold's live state under its periodic table (Locust's tables are
// unchanged above it), and the final verdict after the summary.
func TestThresholdsLiveStandalone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3 s load test")
	}
	srv := startTarget(t)
	path := writeScenario(t, "users:\n  - name: Web\n    wait: constant(0.05)\n    tasks: [{path: /delay/50}]\n")
	var stdout bytes.Buffer
	var stderr syncBuffer
	code := run([]string{"-f", path, "--headless", "-u", "2", "-r", "2", "-t", "3s", "-H", srv.URL(),
		"--threshold", "p99<2s", "--threshold", "p99{GET /delay/50}<20ms", "--threshold", "rps{/none}>1"}, &stdout, &stderr)
	out := stderr.String()
	if code != 99 {
		t.Fatalf("exit code %d, want 99; stderr:\n%s", code, out)
	}
	live := regexp.MustCompile(`(?m)^ +Aggregated .*\n\nThresholds \(live\) +Current   State\n` +
		`p99<2000ms +[0-9.]+ ms   ok\n` +
		`p99\{GET /delay/50\}<20ms +[0-9.]+ ms   FAILING\n` +
		`rps\{/none\}>1 +n/a   waiting \(no request of this name\)\n`)
	if !live.MatchString(out) {
		t.Errorf("no live thresholds under a periodic table:\n%s", out)
	}
}
