package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/thresholds"
	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/web/webtest"
)

// browserTools returns node's path, failing under CI=true (and skipping
// otherwise) when node, Chromium or playwright-core is missing. CI needs:
// apt-get install -y chromium nodejs npm; (cd web/ui && npm ci).
func browserTools(t *testing.T) string {
	t.Helper()
	node := needTool(t, "node", "apt-get install nodejs npm")
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	missing := ""
	if _, err := os.Stat(chromium); err != nil {
		missing = "chromium (apt-get install chromium)"
	} else if _, err := os.Stat(filepath.Join("ui", "node_modules", "playwright-core", "package.json")); err != nil {
		missing = "playwright-core (cd web/ui && npm ci)"
	}
	if missing != "" {
		testpeer.Missing(t, "browser test needs %s", missing)
	}
	return node
}

// artifactsDir is where screenshots go (git-ignored).
func artifactsDir(t *testing.T, sub string) string {
	dir := os.Getenv("CICADA_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	dir, _ = filepath.Abs(filepath.Join(dir, sub))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runE2E runs ui/e2e.mjs and returns its E2E_RESULT object.
func runE2E(t *testing.T, node, base, artifacts, mode string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "e2e.mjs", base, artifacts, mode)
	cmd.Dir = "ui"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var res map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if j, ok := strings.CutPrefix(sc.Text(), "E2E_RESULT "); ok {
			if jerr := json.Unmarshal([]byte(j), &res); jerr != nil {
				t.Fatalf("bad E2E_RESULT: %v", jerr)
			}
		}
	}
	if err != nil || res == nil || res["ok"] != true {
		t.Fatalf("node e2e.mjs %s: %v\nscreenshots in %s\n%s", mode, err, artifacts, out.String())
	}
	return res
}

func TestBrowser(t *testing.T) {
	node := browserTools(t)
	r := webtest.New(webtest.Options{Workers: 3, Host: "http://127.0.0.1:26080"})
	runFake(t, r)
	srv := web.New(web.Options{HistoryInterval: 300 * time.Millisecond, StatsCacheTTL: 200 * time.Millisecond, Version: "e2e"}, r)
	base := serve(t, srv, "http")
	dir := artifactsDir(t, "browser")
	res := runE2E(t, node, base, dir, "flow")
	t.Logf("e2e flow: %v (screenshots in %s)", res, dir)
	if res["usersAfterEdit"] != float64(20) || res["finalState"] != "stopped" {
		t.Errorf("e2e result %v", res)
	}
	if res["pointsAfterReload"].(float64) < res["pointsBeforeReload"].(float64) {
		t.Errorf("history lost on reload: %v < %v", res["pointsAfterReload"], res["pointsBeforeReload"])
	}
	starts := r.Starts()
	if len(starts) != 2 || starts[0].Users != 10 || starts[1].Users != 20 {
		t.Errorf("runner starts = %+v; want start 10 then edit 20", starts)
	}
	if r.Resets() != 1 || r.Stops() != 1 {
		t.Errorf("runner resets, stops = %d, %d; want 1, 1 from the dashboard's buttons", r.Resets(), r.Stops())
	}
}

// TestBrowserLayout checks the dashboard at 800 and 1280 px (the Name
// column stays readable) and the dark theme (system preference, toggle).
func TestBrowserLayout(t *testing.T) {
	node := browserTools(t)
	names := []string{"/", "/api/v1/customers/{id}/orders/{order}/items?expand=true", "/data.json", "/missing"}
	r := webtest.New(webtest.Options{Names: names, Workers: 2, Host: "http://127.0.0.1:26080"})
	r.Start(context.Background(), web.StartRequest{Users: 10, SpawnRate: 10})
	runFake(t, r)
	srv := web.New(web.Options{HistoryInterval: 300 * time.Millisecond, StatsCacheTTL: 200 * time.Millisecond, Version: "e2e"}, r)
	base := serve(t, srv, "http")
	dir := artifactsDir(t, "layout")
	res := runE2E(t, node, base, dir, "layout")
	t.Logf("e2e layout: %v (screenshots in %s)", res, dir)
	if res["dark"] != true {
		t.Errorf("dark theme not checked: %v", res)
	}
}

// TestBrowserShape runs a load-shape test from the dashboard.
func TestBrowserShape(t *testing.T) {
	node := browserTools(t)
	r := webtest.New(webtest.Options{Shape: true, ShapeUsers: 6, Host: "http://127.0.0.1:26080"})
	runFake(t, r)
	srv := web.New(web.Options{HistoryInterval: 300 * time.Millisecond, StatsCacheTTL: 200 * time.Millisecond, Version: "e2e"}, r)
	base := serve(t, srv, "http")
	dir := artifactsDir(t, "shape")
	res := runE2E(t, node, base, dir, "shape")
	t.Logf("e2e shape: %v (screenshots in %s)", res, dir)
	if starts := r.Starts(); len(starts) != 1 {
		t.Errorf("runner starts = %+v; want one, from the start form", starts)
	}
}

// TestBrowserClassPicker: with ClassPicker the start form lists the user
// classes as ticked checkboxes and the start request carries them.
func TestBrowserClassPicker(t *testing.T) {
	node := browserTools(t)
	r := webtest.New(webtest.Options{Host: "http://127.0.0.1:26080"})
	runFake(t, r)
	srv := web.New(web.Options{ClassPicker: true, HistoryInterval: 300 * time.Millisecond, StatsCacheTTL: 200 * time.Millisecond, Version: "e2e"}, r)
	base := serve(t, srv, "http")
	dir := artifactsDir(t, "picker")
	res := runE2E(t, node, base, dir, "picker")
	t.Logf("e2e picker: %v (screenshots in %s)", res, dir)
	starts := r.Starts()
	if len(starts) != 1 || len(starts[0].UserClasses) != 1 || starts[0].UserClasses[0] != "WebsiteUser" {
		t.Errorf("runner starts = %+v; want one with user_classes [WebsiteUser] from the ticked box", starts)
	}
}

// TestBrowserPhases: the Phases tab appears when the stats carry cicada's
// per-phase timings and lists them per request name and phase.
func TestBrowserPhases(t *testing.T) {
	node := browserTools(t)
	r := webtest.New(webtest.Options{Phases: true, Host: "http://127.0.0.1:26080"})
	runFake(t, r)
	srv := web.New(web.Options{HistoryInterval: 300 * time.Millisecond, StatsCacheTTL: 200 * time.Millisecond, Version: "e2e"}, r)
	base := serve(t, srv, "http")
	dir := artifactsDir(t, "phases")
	res := runE2E(t, node, base, dir, "phases")
	t.Logf("e2e phases: %v (screenshots in %s)", res, dir)
}

// TestBrowserRenderPerf measures the dashboard with 1,000 request names
// and 200 workers: the /stats/requests size and the table render time per
// refresh in Chromium.
func TestBrowserRenderPerf(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	node := browserTools(t)
	r := bigRunner()
	runFake(t, r)
	srv := web.New(web.Options{StatsCacheTTL: -1}, r)
	base := serve(t, srv, "http")
	res := runE2E(t, node, base, artifactsDir(t, "perf"), "perf")
	t.Logf("1000 names, 200 workers: /stats/requests %v bytes, %v table rows (%v in the DOM); JSON.parse median %.1f ms; table render+layout: cold %.1f ms, warm median %.1f ms (DOM updates %.1f ms, max %.1f); full refresh (fetch+parse+render+history) median %.1f ms (max %.1f)",
		res["bytes"], res["rows"], res["renderedRows"], res["parseMedianMs"], res["coldRenderMs"], res["renderMedianMs"], res["scriptMedianMs"], res["renderMaxMs"], res["refreshMedianMs"], res["refreshMaxMs"])
}

// bigRunner is a fake master with 1,000 request names and 200 workers,
// already running.
func bigRunner() *webtest.Runner {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("/api/v1/resource/%04d/items", i)
	}
	r := webtest.New(webtest.Options{Names: names, Workers: 200, RequestsPerUserSecond: 5, Host: "http://127.0.0.1:26080"})
	r.Start(context.Background(), web.StartRequest{Users: 400, SpawnRate: 400})
	for i := 0; i < 3; i++ {
		r.Step(time.Second)
	}
	return r
}

// thresholdRunner is a fake master that evaluates three thresholds: one
// passes, one fails, one has no value until the test is stopped, then all
// pass.
type thresholdRunner struct {
	*webtest.Runner
	ts []thresholds.Threshold
}

func (r thresholdRunner) LiveThresholds() []thresholds.Result {
	if r.Stops() > 0 {
		return []thresholds.Result{
			{Threshold: r.ts[0], Measured: 10, HasValue: true, Passed: true},
			{Threshold: r.ts[1], Measured: 0, HasValue: true, Passed: true},
			{Threshold: r.ts[2], Measured: 5, HasValue: true, Passed: true},
		}
	}
	return []thresholds.Result{
		{Threshold: r.ts[0], Measured: 12.5, HasValue: true, Passed: true},
		{Threshold: r.ts[1], Measured: 0.25, HasValue: true, Note: "window of 10s not yet full: the run so far"},
		{Threshold: r.ts[2], Note: "no request of this name"},
	}
}

// TestBrowserThresholds: the dashboard's Thresholds box and tab show the
// live states, names as text, and follow a change; the Dropped box lists
// the drops by name in its tooltip.
func TestBrowserThresholds(t *testing.T) {
	node := browserTools(t)
	var ts []thresholds.Threshold
	for _, e := range []string{"p99<500ms", "fail_ratio<1% window=10s abort_on_fail", "rps{GET /<b>x</b>}>1"} {
		th, err := thresholds.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, th)
	}
	r := thresholdRunner{webtest.New(webtest.Options{Host: "http://127.0.0.1:26080", Drops: true}), ts}
	runFake(t, r.Runner)
	srv := web.New(web.Options{HistoryInterval: 300 * time.Millisecond, StatsCacheTTL: 200 * time.Millisecond, Version: "e2e"}, r)
	base := serve(t, srv, "http")
	dir := artifactsDir(t, "thresholds")
	res := runE2E(t, node, base, dir, "thresholds")
	t.Logf("e2e thresholds: %v (screenshots in %s)", res, dir)
	if res["thresholdRows"] != float64(3) {
		t.Errorf("e2e result %v", res)
	}
}
