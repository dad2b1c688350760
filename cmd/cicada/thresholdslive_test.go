package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/thresholds"
	"github.com/cicada-load/cicada/web"
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
		"--threshold", "p99<60s", "--threshold", "p99{GET /delay/50}<20ms", "--threshold", "rps{/none}>1"}, &stdout, &stderr)
	out := stderr.String()
	if code != 99 {
		t.Fatalf("exit code %d, want 99; stderr:\n%s", code, out)
	}
	live := regexp.MustCompile(`(?m)^ +Aggregated .*\n\nThresholds \(live\) +Current   State\n` +
		`p99<60000ms +[0-9.]+ ms   ok\n` +
		`p99\{GET /delay/50\}<20ms +[0-9.]+ ms   FAILING\n` +
		`rps\{/none\}>1 +n/a   waiting \(no request of this name\)\n`)
	if !live.MatchString(out) {
		t.Errorf("no live thresholds under a periodic table:\n%s", out)
	}
}

// TestThresholdsLiveRoute: the web API's GET /thresholds/live through the
// master's runner: every declared threshold, not evaluated before a test.
func TestThresholdsLiveRoute(t *testing.T) {
	th, err := thresholds.Parse("p99{GET /x}<1s")
	if err != nil {
		t.Fatal(err)
	}
	m, err := master.New(master.Options{BindHost: "127.0.0.1", BindPort: -1, Host: "http://127.0.0.1:1",
		UserClasses: []master.UserClass{{Name: "A"}}, Thresholds: []thresholds.Threshold{th}})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the master", 30*time.Second, func(ctx context.Context) { _, _ = m.Run(ctx) })
	h := web.New(web.Options{}, &masterRunner{m: m}).Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/thresholds/live", nil))
	var body struct {
		Failing    int
		Thresholds []struct{ Threshold, State, Note string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET /thresholds/live: %d %v %q", rec.Code, err, rec.Body.String())
	}
	if len(body.Thresholds) != 1 || body.Thresholds[0].Threshold != "p99{GET /x}<1000ms" || body.Thresholds[0].State != "waiting" ||
		body.Thresholds[0].Note != "not evaluated yet" || body.Failing != 0 {
		t.Errorf("GET /thresholds/live = %s", rec.Body.String())
	}
}
