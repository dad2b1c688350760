package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/web/webtest"
)

// fakeClock is a settable clock for the statistics and the server.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Unix(1796011000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	clock  *fakeClock
	runner *webtest.Runner
	srv    *web.Server
	h      http.Handler
}

func newEnv(t *testing.T, opts web.Options, fo webtest.Options) *env {
	t.Helper()
	c := newClock()
	fo.Now = c.Now
	if fo.Host == "" {
		fo.Host = "http://127.0.0.1:26080"
	}
	r := webtest.New(fo)
	opts.Now = c.Now
	if opts.StatsCacheTTL == 0 {
		opts.StatsCacheTTL = -1
	}
	s := web.New(opts, r)
	return &env{clock: c, runner: r, srv: s, h: s.Handler()}
}

// run simulates n seconds of traffic.
func (e *env) run(n int) {
	for i := 0; i < n; i++ {
		e.clock.Add(time.Second)
		e.runner.Step(time.Second)
	}
}

type reply struct {
	code   int
	header http.Header
	body   []byte
}

func (e *env) do(t *testing.T, method, target string, form url.Values, hdr ...string) reply {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, target, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return reply{code: res.StatusCode, header: res.Header, body: b}
}

func (e *env) get(t *testing.T, target string) reply { return e.do(t, http.MethodGet, target, nil) }

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(r.body))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// wantHeaders checks the headers every Locust JSON route sends.
func wantJSONHeaders(t *testing.T, r reply) {
	t.Helper()
	if got := r.header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q; want application/json", got)
	}
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin = %q; want *", got)
	}
	if got := r.header.Get("Content-Length"); got != fmt.Sprint(len(r.body)) {
		t.Errorf("Content-Length = %q; want %d", got, len(r.body))
	}
	if !bytes.HasSuffix(r.body, []byte("\n")) {
		t.Errorf("JSON body has no trailing newline")
	}
	checkSortedJSON(t, r.body)
}

// Verbatim bodies of Locust 2.12.1's POST /swarm and GET /stop (locust/web.py,
// swarm and stop in WebUI.__init__).
const (
	swarmStartBody = `{
  "host": "http://127.0.0.1:26080",
  "message": "Swarming started",
  "run_time": 300,
  "success": true
}
`
	swarmEditBody = `{
  "host": "http://127.0.0.1:26080",
  "message": "Swarming started",
  "success": true
}
`
	swarmBadRunTimeBody = `{
  "host": "http://127.0.0.1:26080",
  "message": "Valid run_time formats are : 20, 20s, 3m, 2h, 1h20m, 3h30m10s, etc.",
  "success": false
}
`
	stopBody = `{
  "message": "Test stopped",
  "success": true
}
`
)

func TestSwarmStartEditInvalid(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{})
	r := e.do(t, "POST", "/swarm", url.Values{"user_count": {"10"}, "spawn_rate": {"5"}, "host": {"http://127.0.0.1:26080"}, "run_time": {"5m"}})
	wantJSONHeaders(t, r)
	if r.code != 200 || string(r.body) != swarmStartBody {
		t.Errorf("POST /swarm (start) = %d\n%s\nwant 200\n%s", r.code, r.body, swarmStartBody)
	}
	if got := r.header.Get("Content-Length"); got != "110" {
		t.Errorf("Content-Length = %s; want 110 as Locust", got)
	}
	e.run(3)
	r = e.do(t, "POST", "/swarm", url.Values{"user_count": {"20"}, "spawn_rate": {"10"}})
	if string(r.body) != swarmEditBody {
		t.Errorf("POST /swarm (edit) =\n%s\nwant\n%s", r.body, swarmEditBody)
	}
	r = e.do(t, "POST", "/swarm", url.Values{"user_count": {"20"}, "spawn_rate": {"10"}, "run_time": {"bogus"}})
	if r.code != 200 || string(r.body) != swarmBadRunTimeBody {
		t.Errorf("POST /swarm (bad run_time) = %d\n%s\nwant 200\n%s", r.code, r.body, swarmBadRunTimeBody)
	}
	starts := e.runner.Starts()
	if len(starts) != 2 {
		t.Fatalf("runner got %d starts; want 2 (the invalid one must not start)", len(starts))
	}
	if s := starts[0]; s.Users != 10 || s.SpawnRate != 5 || s.Host == nil || *s.Host != "http://127.0.0.1:26080" || s.RunTime != 5*time.Minute {
		t.Errorf("first start = %+v", s)
	}
	if s := starts[1]; s.Users != 20 || s.SpawnRate != 10 || s.Host != nil || s.RunTime != 0 {
		t.Errorf("edit = %+v", s)
	}
}

func TestSwarmErrors(t *testing.T) {
	tests := []struct {
		name     string
		form     url.Values
		startErr error
		wantMsg  string
		wantHost any
	}{
		{"missing user_count", url.Values{"spawn_rate": {"1"}}, nil, "Missing user_count or spawn_rate from /swarm request", "http://127.0.0.1:26080"},
		{"missing spawn_rate", url.Values{"user_count": {"1"}}, nil, "Missing user_count or spawn_rate from /swarm request", "http://127.0.0.1:26080"},
		{"bad user_count", url.Values{"user_count": {"ten"}, "spawn_rate": {"1"}}, nil, `Invalid user_count "ten": must be a non-negative integer`, "http://127.0.0.1:26080"},
		{"negative user_count", url.Values{"user_count": {"-1"}, "spawn_rate": {"1"}}, nil, `Invalid user_count "-1": must be a non-negative integer`, "http://127.0.0.1:26080"},
		{"zero spawn_rate", url.Values{"user_count": {"1"}, "spawn_rate": {"0"}}, nil, `Invalid spawn_rate "0": must be a positive number`, "http://127.0.0.1:26080"},
		{"nan spawn_rate", url.Values{"user_count": {"1"}, "spawn_rate": {"nan"}}, nil, `Invalid spawn_rate "nan": must be a positive number`, "http://127.0.0.1:26080"},
		{"runner error", url.Values{"user_count": {"1"}, "spawn_rate": {"1"}, "host": {""}}, errors.New("master: no workers"), "master: no workers", nil},
		{"bad run_time before users", url.Values{"run_time": {"x"}, "host": {"http://h<script>"}}, nil, "Valid run_time formats are : 20, 20s, 3m, 2h, 1h20m, 3h30m10s, etc.", "http://hscript"},
		// Locust 2.12.1 runs these for 1 h and 10 s, ignoring the rest.
		{"spaced run_time", url.Values{"user_count": {"1"}, "spawn_rate": {"1"}, "run_time": {"1h 20m"}}, nil, "Valid run_time formats are : 20, 20s, 3m, 2h, 1h20m, 3h30m10s, etc.", "http://127.0.0.1:26080"},
		{"run_time with junk", url.Values{"user_count": {"1"}, "spawn_rate": {"1"}, "run_time": {"10s junk"}}, nil, "Valid run_time formats are : 20, 20s, 3m, 2h, 1h20m, 3h30m10s, etc.", "http://127.0.0.1:26080"},
		{"run_time leading blank", url.Values{"user_count": {"1"}, "spawn_rate": {"1"}, "run_time": {" 30s"}}, nil, "Valid run_time formats are : 20, 20s, 3m, 2h, 1h20m, 3h30m10s, etc.", "http://127.0.0.1:26080"},
		// Locust answers these with a 500 (OverflowError).
		{"run_time overflow", url.Values{"user_count": {"1"}, "spawn_rate": {"1"}, "run_time": {"5124096h"}}, nil, `Invalid run_time: timespan: time span too long: "5124096h" is above the maximum of 876000h (100 years)`, "http://127.0.0.1:26080"},
		{"run_time above maximum", url.Values{"user_count": {"1"}, "spawn_rate": {"1"}, "run_time": {"876000h1s"}}, nil, `Invalid run_time: timespan: time span too long: "876000h1s" is above the maximum of 876000h (100 years)`, "http://127.0.0.1:26080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, web.Options{}, webtest.Options{StartErr: tt.startErr})
			r := e.do(t, "POST", "/swarm", tt.form)
			wantJSONHeaders(t, r)
			m := r.json(t)
			if r.code != 200 || m["success"] != false || m["message"] != tt.wantMsg || m["host"] != tt.wantHost {
				t.Errorf("POST /swarm %v = %d %v; want 200, success false, message %q, host %v", tt.form, r.code, m, tt.wantMsg, tt.wantHost)
			}
		})
	}
}

func TestSwarmOptionsAndHost(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{})
	r := e.do(t, "POST", "/swarm", url.Values{
		"user_count": {" 3 "}, "spawn_rate": {"0.5"}, "host": {"http://x<y>z"},
		"user_classes": {"B", "A"}, "my_option": {"42"},
	})
	m := r.json(t)
	if m["host"] != "http://xyz" || m["success"] != true {
		t.Errorf("POST /swarm = %v", m)
	}
	if uc, _ := m["user_classes"].([]any); len(uc) != 2 || uc[0] != "A" || uc[1] != "B" {
		t.Errorf("user_classes = %v; want [A B]", m["user_classes"])
	}
	s := e.runner.Starts()[0]
	if s.Users != 3 || s.SpawnRate != 0.5 || *s.Host != "http://xyz" || fmt.Sprint(s.Options) != "map[my_option:[42]]" || fmt.Sprint(s.UserClasses) != "[B A]" {
		t.Errorf("start request = %+v", s)
	}
	if got := e.runner.Status().Host; got != "http://xyz" {
		t.Errorf("host after start = %q", got)
	}
}

func TestStopAndReset(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{})
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"5"}, "spawn_rate": {"5"}})
	e.run(5)
	r := e.get(t, "/stop")
	wantJSONHeaders(t, r)
	if string(r.body) != stopBody || r.header.Get("Content-Length") != "51" {
		t.Errorf("GET /stop =\n%s\nwant\n%s", r.body, stopBody)
	}
	if e.runner.Stops() != 1 || e.runner.Status().State != protocol.StateStopped {
		t.Errorf("runner after /stop: stops %d, state %s", e.runner.Stops(), e.runner.Status().State)
	}
	r = e.get(t, "/stats/reset")
	if r.code != 200 || string(r.body) != "ok" || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("GET /stats/reset = %d %q %q", r.code, r.body, r.header.Get("Content-Type"))
	}
	if e.runner.Resets() != 1 {
		t.Errorf("resets = %d; want 1", e.runner.Resets())
	}
	snap := e.runner.Snapshot()
	if snap.Total.NumRequests != 0 || len(snap.Entries) == 0 {
		t.Errorf("after reset: total %d requests, %d entries; want 0 and kept entries", snap.Total.NumRequests, len(snap.Entries))
	}
}

// jsonShape maps every path of a JSON document ("stats[].name") to its
// type: object, array, string, int, float, bool or null. Array elements
// share one path.
func jsonShape(t *testing.T, body []byte) map[string]string {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("bad JSON: %v", err)
	}
	shape := map[string]string{}
	var walk func(p string, v any)
	walk = func(p string, v any) {
		var typ string
		switch x := v.(type) {
		case map[string]any:
			typ = "object"
			for k, c := range x {
				walk(p+"."+k, c)
			}
		case []any:
			typ = "array"
			for _, c := range x {
				walk(p+"[]", c)
			}
		case string:
			typ = "string"
		case bool:
			typ = "bool"
		case nil:
			typ = "null"
		case json.Number:
			typ = "int"
			if strings.ContainsAny(string(x), ".eE") {
				typ = "float"
			}
		}
		if old, ok := shape[p]; ok && old != typ {
			// Keep the non-null type; a mix of int and float stays "float".
			switch {
			case typ == "null":
				return
			case old == "null":
			case old == "float" || typ == "float":
				typ = "float"
			}
		}
		shape[p] = typ
	}
	walk("", v)
	return shape
}

// compatible reports whether our type can stand for Locust's: equal, or
// null where Locust documents "int or null".
func compatible(ours, locust string) bool {
	return ours == locust || ours == "null" || locust == "null"
}

func TestRequestsShapeMatchesLocust(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{Workers: 1})
	ready := e.get(t, "/stats/requests")
	wantJSONHeaders(t, ready)
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"4"}, "spawn_rate": {"4"}})
	e.run(15)
	e.runner.Stats().AddException("boom", "tb", "local")
	running := e.get(t, "/stats/requests")
	wantJSONHeaders(t, running)

	tests := []struct {
		example string
		ours    reply
	}{
		{"locust-2.12.1-requests-ready.json", ready},
		{"locust-2.12.1-requests-running.json", running},
		{"locust-2.12.1-requests-master.json", running},
		{"locust-head-requests-master.json", running},
	}
	for _, tt := range tests {
		t.Run(tt.example, func(t *testing.T) {
			ex, err := os.ReadFile(filepath.Join("testdata", tt.example))
			if err != nil {
				t.Fatal(err)
			}
			want := jsonShape(t, ex)
			got := jsonShape(t, tt.ours.body)
			var paths []string
			for p := range want {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, p := range paths {
				if p == ".workers[].cpu_usage" && got[p] == "float" {
					continue
				}
				if g, ok := got[p]; !ok || !compatible(g, want[p]) {
					t.Errorf("%s: ours %q, Locust %q", p, got[p], want[p])
				}
			}
		})
	}

	m := running.json(t)
	st := m["stats"].([]any)
	total := st[len(st)-1].(map[string]any)
	if total["name"] != "Aggregated" || total["method"] != "" {
		t.Errorf("last stats row = %v; want Aggregated with method \"\"", total)
	}
	if m["total_rps"] != total["current_rps"] || m["current_rps"] != total["current_rps"] {
		t.Errorf("total_rps %v, current_rps %v; want both = Aggregated current_rps %v (2.12.1 meaning)", m["total_rps"], m["current_rps"], total["current_rps"])
	}
	if m["total_fail_per_sec"] != total["total_fail_per_sec"] {
		t.Errorf("total_fail_per_sec %v; want Aggregated total_fail_per_sec %v", m["total_fail_per_sec"], total["total_fail_per_sec"])
	}
	if m["state"] != "running" || m["user_count"] != json.Number("4") || m["worker_count"] != json.Number("1") {
		t.Errorf("state %v, user_count %v, worker_count %v", m["state"], m["user_count"], m["worker_count"])
	}
	rm := ready.json(t)
	rs := rm["stats"].([]any)
	if len(rs) != 1 || rs[0].(map[string]any)["method"] != nil {
		t.Errorf("ready stats = %v; want only Aggregated with method null", rs)
	}
}

func TestRequestsTruncatesAt500(t *testing.T) {
	names := make([]string, 620)
	for i := range names {
		names[i] = fmt.Sprintf("/item/%04d", i)
	}
	e := newEnv(t, web.Options{}, webtest.Options{Names: names, RequestsPerUserSecond: 700})
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"1"}, "spawn_rate": {"1"}})
	e.run(2)
	m := e.get(t, "/stats/requests").json(t)
	st := m["stats"].([]any)
	if len(st) != 501 {
		t.Fatalf("stats has %d rows; want 500 + Aggregated", len(st))
	}
	if last := st[500].(map[string]any); last["name"] != "Aggregated" {
		t.Errorf("row 501 = %v; want Aggregated", last["name"])
	}
	if st[499].(map[string]any)["name"] != "/item/0499" {
		t.Errorf("row 500 = %v; want /item/0499", st[499].(map[string]any)["name"])
	}
}

func TestRequestsCache(t *testing.T) {
	e := newEnv(t, web.Options{StatsCacheTTL: 2 * time.Second}, webtest.Options{})
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"2"}, "spawn_rate": {"2"}})
	a := e.get(t, "/stats/requests").body
	e.run(1)
	if b := e.get(t, "/stats/requests").body; !bytes.Equal(a, b) {
		t.Errorf("body changed within the cache lifetime")
	}
	e.run(2)
	if c := e.get(t, "/stats/requests").body; bytes.Equal(a, c) {
		t.Errorf("body unchanged after the cache lifetime")
	}
	d := e.get(t, "/stats/requests").body
	e.get(t, "/stop")
	if f := e.get(t, "/stats/requests").body; bytes.Equal(d, f) {
		t.Errorf("/stop did not invalidate the cache")
	}
}

func TestErrorsAreRaw(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{Names: []string{"/a&b<c>", "/missing"}})
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"3"}, "spawn_rate": {"3"}})
	e.run(4)
	m := e.get(t, "/stats/requests").json(t)
	errs := m["errors"].([]any)
	if len(errs) == 0 {
		t.Fatal("no errors")
	}
	er := errs[0].(map[string]any)
	if er["error"] != "HTTPError('404 Client Error: Not Found for url: /missing')" {
		t.Errorf("error = %q; want the raw text (HEAD), not HTML-escaped (2.12.1)", er["error"])
	}
	for _, k := range []string{"first_seen", "last_seen", "method", "name", "occurrences"} {
		if _, ok := er[k]; !ok {
			t.Errorf("error object lacks %q", k)
		}
	}
	row := m["stats"].([]any)[0].(map[string]any)
	if row["name"] != "/a&b<c>" || row["safe_name"] != "/a&amp;b&lt;c&gt;" {
		t.Errorf("name %q safe_name %q", row["name"], row["safe_name"])
	}
}

func TestExceptionsAndCSV(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{})
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"3"}, "spawn_rate": {"3"}})
	e.run(5)
	st := e.runner.Stats()
	tb := "  File \"x.py\", line 1, in boom\n    raise ValueError(\"<boom>\")\n"
	st.AddException("<boom>", tb, "w1")
	st.AddException("<boom>", tb, "w2")
	r := e.get(t, "/exceptions")
	wantJSONHeaders(t, r)
	want := `{
  "exceptions": [
    {
      "count": 2,
      "msg": "<boom>",
      "nodes": "w1, w2",
      "traceback": "  File \"x.py\", line 1, in boom\n    raise ValueError(\"<boom>\")\n"
    }
  ]
}
`
	if string(r.body) != want {
		t.Errorf("GET /exceptions =\n%s\nwant\n%s", r.body, want)
	}

	snap := e.runner.Snapshot()
	csvs := []struct {
		path, prefix string
		write        func(io.Writer, *stats.Snapshot) error
	}{
		{"/stats/requests/csv", "requests", stats.WriteStatsCSV},
		{"/stats/failures/csv", "failures", stats.WriteFailuresCSV},
		{"/exceptions/csv", "exceptions", stats.WriteExceptionsCSV},
		{"/stats/phases/csv", "phases", stats.WritePhasesCSV},
	}
	for _, c := range csvs {
		r := e.get(t, c.path)
		var want bytes.Buffer
		if err := c.write(&want, snap); err != nil {
			t.Fatal(err)
		}
		if r.code != 200 || !bytes.Equal(r.body, want.Bytes()) {
			t.Errorf("GET %s = %d\n%s\nwant\n%s", c.path, r.code, r.body, want.Bytes())
		}
		if ct := r.header.Get("Content-Type"); ct != "text/csv" {
			t.Errorf("GET %s Content-Type %q; want text/csv", c.path, ct)
		}
		cd := r.header.Get("Content-Disposition")
		if !regexp.MustCompile(`^attachment;filename=` + c.prefix + `_1796011005\.0\.csv$`).MatchString(cd) {
			t.Errorf("GET %s Content-Disposition %q", c.path, cd)
		}
		if r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET %s: no CORS header", c.path)
		}
	}
}

func TestFullHistoryCSV(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{})
	r := e.get(t, "/stats/requests_full_history/csv")
	if r.code != 404 || string(r.body) != "Error: Server was not started with option to generate full history." {
		t.Errorf("without --csv-full-history: %d %q", r.code, r.body)
	}
	f := filepath.Join(t.TempDir(), "x_stats_history.csv")
	if err := os.WriteFile(f, []byte("Timestamp,User Count\r\n1,2\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e = newEnv(t, web.Options{FullHistoryCSV: f}, webtest.Options{})
	r = e.get(t, "/stats/requests_full_history/csv")
	if r.code != 200 || string(r.body) != "Timestamp,User Count\r\n1,2\r\n" || r.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment; filename=requests_full_history_") || r.header.Get("ETag") == "" {
		t.Errorf("with file: %d %q %v", r.code, r.body, r.header)
	}
	r = e.do(t, "GET", "/stats/requests_full_history/csv", nil, "If-None-Match", r.header.Get("ETag"))
	if r.code != http.StatusNotModified {
		t.Errorf("conditional GET = %d; want 304", r.code)
	}
}

func TestTasksLogsWorkerCount(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{Workers: 3})
	r := e.get(t, "/tasks")
	wantJSONHeaders(t, r)
	m := r.json(t)
	pc := m["per_class"].(map[string]any)["WebsiteUser"].(map[string]any)
	if pc["ratio"] != json.Number("0.0") {
		t.Errorf("class ratio without users = %v; want 0.0", pc["ratio"])
	}
	tasks := pc["tasks"].(map[string]any)
	// Locust: weight * parent / sum(weights): index 5/10, nested Browse 2/10
	// with page 3/4 of that.
	for path, want := range map[string]string{"index": "0.5", "data": "0.2", "missing": "0.1", "Browse": "0.2"} {
		if got := tasks[path].(map[string]any)["ratio"]; got != json.Number(want) {
			t.Errorf("per_class ratio of %s = %v; want %s", path, got, want)
		}
	}
	page := tasks["Browse"].(map[string]any)["tasks"].(map[string]any)["page"].(map[string]any)["ratio"]
	if page != json.Number("0.15000000000000002") { // Python: 3 * 0.2 / 4
		t.Errorf("nested ratio = %v; want 0.15000000000000002", page)
	}
	tot := m["total"].(map[string]any)["WebsiteUser"].(map[string]any)["tasks"].(map[string]any)["index"].(map[string]any)["ratio"]
	if tot != json.Number("0.0") {
		t.Errorf("total ratio of index without users = %v; want 0.0", tot)
	}
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"3"}, "spawn_rate": {"3"}})
	e.run(2)
	m = e.get(t, "/tasks").json(t)
	if got := m["total"].(map[string]any)["WebsiteUser"].(map[string]any)["tasks"].(map[string]any)["index"].(map[string]any)["ratio"]; got != json.Number("0.5") {
		t.Errorf("total ratio of index with users = %v; want 0.5", got)
	}

	r = e.get(t, "/logs")
	wantJSONHeaders(t, r)
	lm := r.json(t)
	if len(lm["master"].([]any)) == 0 || len(lm["workers"].(map[string]any)) != 3 {
		t.Errorf("GET /logs = %s", r.body)
	}
	r = e.get(t, "/worker-count")
	wantJSONHeaders(t, r)
	if string(r.body) != "{\n  \"worker_count\": 3\n}\n" {
		t.Errorf("GET /worker-count = %q", r.body)
	}
	solo := newEnv(t, web.Options{}, webtest.Options{})
	if r := solo.get(t, "/worker-count"); string(r.body) != "{\n  \"worker_count\": 0\n}\n" {
		t.Errorf("standalone GET /worker-count = %q", r.body)
	}
	if r := solo.get(t, "/stats/requests"); bytes.Contains(r.body, []byte(`"workers"`)) {
		t.Errorf("standalone /stats/requests has workers")
	}
}

func TestRoutingAndCORS(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{})
	tests := []struct {
		method, path string
		code         int
		allow        string
	}{
		{"GET", "/", 200, ""},
		{"GET", "/nope", 404, ""},
		{"GET", "/swarm", 405, "OPTIONS, POST"},
		{"POST", "/stop", 405, "GET, HEAD, OPTIONS"},
		{"HEAD", "/stats/requests", 200, ""},
		{"HEAD", "/exceptions", 200, ""},
		{"OPTIONS", "/swarm", 200, "OPTIONS, POST"},
		{"GET", "/assets/app.js", 200, ""},
		{"GET", "/static/app.css", 200, ""},
		{"GET", "/assets/", 404, ""},
		{"GET", "/assets/missing.js", 404, ""},
	}
	for _, tt := range tests {
		r := e.do(t, tt.method, tt.path, nil)
		if r.code != tt.code {
			t.Errorf("%s %s = %d; want %d", tt.method, tt.path, r.code, tt.code)
		}
		if tt.allow != "" && r.header.Get("Allow") != tt.allow {
			t.Errorf("%s %s Allow = %q; want %q", tt.method, tt.path, r.header.Get("Allow"), tt.allow)
		}
		if r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s %s: no Access-Control-Allow-Origin", tt.method, tt.path)
		}
	}
	r := e.get(t, "/")
	if !bytes.Contains(r.body, []byte(`window.cicadaArgs = {"host":"http://127.0.0.1:26080"`)) || bytes.Contains(r.body, []byte("CICADA_ARGS")) {
		t.Errorf("index page args not injected:\n%s", r.body[:min(len(r.body), 600)])
	}
	pre := e.do(t, "OPTIONS", "/stats/requests", nil, "Origin", "http://x", "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "X-Foo")
	if pre.code != 200 || pre.header.Get("Access-Control-Allow-Headers") != "X-Foo" || pre.header.Get("Access-Control-Allow-Methods") == "" {
		t.Errorf("preflight = %d %v", pre.code, pre.header)
	}
}

func TestBasicAuth(t *testing.T) {
	e := newEnv(t, web.Options{Auth: "admin:s3cr:et"}, webtest.Options{})
	if err := e.srv.Run(context.Background()); !errors.Is(err, web.ErrBadAuth) {
		t.Errorf("Run with a two-colon credential = %v; want ErrBadAuth", err)
	}
	e = newEnv(t, web.Options{Auth: "admin:secret"}, webtest.Options{})
	basic := func(u, p string) string {
		req := httptest.NewRequest("GET", "/", nil)
		req.SetBasicAuth(u, p)
		return req.Header.Get("Authorization")
	}
	tests := []struct {
		name, method, path, auth string
		code                     int
	}{
		{"no credentials", "GET", "/stats/requests", "", 401},
		{"wrong password", "GET", "/stats/requests", basic("admin", "nope"), 401},
		{"wrong user", "GET", "/stats/requests", basic("root", "secret"), 401},
		{"prefix password", "GET", "/stats/requests", basic("admin", "secre"), 401},
		{"right", "GET", "/stats/requests", basic("admin", "secret"), 200},
		{"swarm without", "POST", "/swarm", "", 401},
		{"metrics without", "GET", "/metrics", "", 401},
		{"index without", "GET", "/", "", 401},
		{"assets are public", "GET", "/assets/app.js", "", 200},
		{"preflight is public", "OPTIONS", "/stats/requests", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.auth != "" {
				hdr = []string{"Authorization", tt.auth}
			}
			r := e.do(t, tt.method, tt.path, nil, hdr...)
			if r.code != tt.code {
				t.Errorf("%s %s = %d; want %d", tt.method, tt.path, r.code, tt.code)
			}
			if tt.code == 401 && (r.header.Get("WWW-Authenticate") != `Basic realm=""` || len(r.body) != 0) {
				t.Errorf("401 headers %v body %q", r.header, r.body)
			}
		})
	}
	if n := len(e.runner.Starts()); n != 0 {
		t.Errorf("unauthenticated /swarm started %d tests", n)
	}
}

func TestHistoryRoute(t *testing.T) {
	e := newEnv(t, web.Options{HistorySize: 4}, webtest.Options{})
	h := e.srv.History()
	h.Sample(e.runner.Status(), e.runner, e.clock.Now())
	if n := len(h.Points()); n != 0 {
		t.Fatalf("ready runner sampled %d points; want 0", n)
	}
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"2"}, "spawn_rate": {"2"}})
	for i := 0; i < 3; i++ {
		e.run(2)
		h.Sample(e.runner.Status(), e.runner, e.clock.Now())
	}
	r := e.get(t, "/stats/history")
	wantJSONHeaders(t, r)
	m := r.json(t)
	if m["full"] != true || len(m["time"].([]any)) != 3 || len(m["user_count"].([]any)) != 3 {
		t.Fatalf("GET /stats/history = %s", r.body)
	}
	version := m["version"].(json.Number)
	last := m["time"].([]any)[2].(json.Number)
	e.run(2)
	h.Sample(e.runner.Status(), e.runner, e.clock.Now())
	m = e.get(t, "/stats/history?since="+string(last)+"&version="+string(version)).json(t)
	if m["full"] != false || len(m["time"].([]any)) != 1 {
		t.Errorf("incremental history = %v; want one new point", m)
	}
	// The fifth point overflows HistorySize 4: every second point goes.
	e.run(2)
	h.Sample(e.runner.Status(), e.runner, e.clock.Now())
	if n := len(h.Points()); n != 3 {
		t.Errorf("after compaction %d points; want 3", n)
	}
	m = e.get(t, "/stats/history?since="+string(last)+"&version="+string(version)).json(t)
	if m["full"] != true {
		t.Errorf("history after compaction not full: %v", m)
	}
	// Reset keeps the chart history, as Locust's dashboard keeps its
	// charts (issue 19: clearing it left an empty chart with a 2027-2029
	// time axis).
	e.get(t, "/stats/reset")
	if n := len(h.Points()); n != 3 {
		t.Errorf("after /stats/reset %d points; want the 3 kept", n)
	}
}

func TestHistoryClearsOnNewTest(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{})
	h := e.srv.History()
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"2"}, "spawn_rate": {"2"}})
	for i := 0; i < 3; i++ {
		e.run(1)
		h.Sample(e.runner.Status(), e.runner, e.clock.Now())
	}
	e.get(t, "/stop")
	h.Sample(e.runner.Status(), e.runner, e.clock.Now())
	if n := len(h.Points()); n != 3 {
		t.Fatalf("%d points after stop; want 3 (stopped runners are not sampled)", n)
	}
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"2"}, "spawn_rate": {"2"}})
	e.run(1)
	h.Sample(e.runner.Status(), e.runner, e.clock.Now())
	if n := len(h.Points()); n != 1 {
		t.Errorf("%d points after a new test; want 1", n)
	}
}

func TestReport(t *testing.T) {
	e := newEnv(t, web.Options{Version: "1.2.3"}, webtest.Options{Names: []string{"/a", "/<b>", "/missing"}})
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"3"}, "spawn_rate": {"3"}})
	for i := 0; i < 5; i++ {
		e.run(2)
		e.srv.History().Sample(e.runner.Status(), e.runner, e.clock.Now())
	}
	e.runner.Stats().AddException("kaboom", "trace <here>", "local")
	e.get(t, "/stop")
	r := e.get(t, "/stats/report")
	if r.code != 200 || r.header.Get("Content-Type") != "text/html; charset=utf-8" || r.header.Get("Content-Disposition") != "" {
		t.Fatalf("GET /stats/report = %d %v", r.code, r.header)
	}
	body := string(r.body)
	for _, want := range []string{
		"<title>Test Report for fake.yaml</title>", "Request Statistics", "Response Time Statistics",
		"Failures Statistics", "Exceptions Statistics", "Charts", "Final ratio", `href="?download=1"`,
		"/&lt;b&gt;", "trace &lt;here&gt;", `id="report-history"`, "Aggregated", "50%ile (ms)", "100%ile (ms)",
		"Generated by cicada 1.2.3", "http://127.0.0.1:26080",
		"100.0% WebsiteUser", // final ratio with the users of the moment the test stopped
	} {
		if !strings.Contains(body, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Self-contained: no external script, style or image.
	if m := regexp.MustCompile(`(?i)<(script|link|img)[^>]+(src|href)=`).FindString(body); m != "" {
		t.Errorf("report references an external resource: %s", m)
	}
	r = e.get(t, "/stats/report?download=1")
	if cd := r.header.Get("Content-Disposition"); !regexp.MustCompile(`^attachment;filename=report_\d+\.html$`).MatchString(cd) || strings.Contains(string(r.body), "?download=1") {
		t.Errorf("download: Content-Disposition %q, link present %v", cd, strings.Contains(string(r.body), "?download=1"))
	}
	// The same writer serves --html.
	var buf bytes.Buffer
	if err := web.WriteReport(&buf, web.ReportData{Status: e.runner.Status(), Snapshot: e.runner.Snapshot()}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `id="report-history"`) || !strings.Contains(buf.String(), "Request Statistics") {
		t.Errorf("report without history should omit the charts")
	}
}

func TestSwarmShape(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{Shape: true, ShapeUsers: 4})
	if page := string(e.get(t, "/").body); !strings.Contains(page, `"is_shape":true`) {
		t.Errorf("dashboard args lack is_shape: %s", page)
	}
	steps := []struct {
		name    string
		form    url.Values
		ok      bool
		msg     string
		starts  int
		advance int // seconds of fake run after the request
	}{
		{"run_time refused", url.Values{"run_time": {"10s"}}, false, "cannot be combined with a run time", 0, 0},
		{"start without users", url.Values{"host": {"http://127.0.0.1:26080"}}, true, "Swarming started using shape class", 1, 2},
		{"edit refused", url.Values{"user_count": {"50"}, "spawn_rate": {"5"}}, false, "a running test cannot be edited", 1, 0},
	}
	for _, st := range steps {
		m := e.do(t, "POST", "/swarm", st.form).json(t)
		if m["success"] != st.ok || !strings.Contains(fmt.Sprint(m["message"]), st.msg) {
			t.Errorf("%s: POST /swarm = %v; want success %v, message containing %q", st.name, m, st.ok, st.msg)
		}
		if n := len(e.runner.Starts()); n != st.starts {
			t.Errorf("%s: %d starts; want %d", st.name, n, st.starts)
		}
		e.run(st.advance)
	}
	if u := e.runner.Status().UserCount; u != 4 {
		t.Errorf("users = %d; want the shape's 4", u)
	}
}

func TestReportFinalRatio(t *testing.T) {
	classes := []web.UserClass{
		{Name: "Api", Tasks: []web.Task{{Name: "get", Weight: 1}}},
		{Name: "Web", Tasks: []web.Task{{Name: "index", Weight: 3}, {Name: "about", Weight: 1}}},
	}
	final := map[string]int64{"Api": 1, "Web": 3}
	zero := map[string]int64{"Api": 0, "Web": 0}
	tests := []struct {
		name          string
		state         string
		current       map[string]int64
		final         map[string]int64
		want, notWant []string
	}{
		// Headless --html: written after users stopped, so only the final
		// counts are non-zero (issue 19 saw 0.0% everywhere).
		{"stopped uses final", protocol.StateStopped, zero, final, []string{"25.0% Api", "75.0% Web", "56.2% index", "18.8% about"}, []string{"0.0% Api"}},
		{"stopping uses final", protocol.StateStopping, map[string]int64{"Api": 1}, final, []string{"25.0% Api", "75.0% Web"}, nil},
		{"running uses current", protocol.StateRunning, map[string]int64{"Api": 1, "Web": 1}, final, []string{"50.0% Api", "50.0% Web"}, nil},
		{"stopped without final", protocol.StateStopped, map[string]int64{"Api": 2, "Web": 2}, nil, []string{"50.0% Api"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			st := web.Status{State: tt.state, UserClasses: classes, UserClassesCount: tt.current, FinalUserClassesCount: tt.final}
			if err := web.WriteReport(&buf, web.ReportData{Status: st}); err != nil {
				t.Fatal(err)
			}
			body := buf.String()
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(body, w) {
					t.Errorf("report has %q", w)
				}
			}
		})
	}
}

func TestHistoryConnections(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{})
	h := e.srv.History()
	e.do(t, "POST", "/swarm", url.Values{"user_count": {"2"}, "spawn_rate": {"2"}})
	e.run(1)
	gen := func(kind string) bool { return kind == "ephemeral_ports" }
	worker := func(open, est int64, refused, ports, reset int64) web.WorkerInfo {
		return web.WorkerInfo{ID: "w1", Conn: &web.ConnStats{Open: open, Established: est, ConnectsPerSec: 1.5,
			ConnectErrors: map[string]int64{"refused": refused, "ephemeral_ports": ports}, Errors: map[string]int64{"reset": reset}, GeneratorSide: gen}}
	}
	samples := [][]web.WorkerInfo{
		{worker(3, 2, 10, 0, 1), {ID: "py", Connections: -1}},
		{worker(4, 4, 16, 4, 1), {ID: "py", Connections: -1}},
		{{ID: "py", Connections: -1}}, // no worker reports connections
	}
	for _, ws := range samples {
		st := e.runner.Status()
		st.Workers = ws
		h.Sample(st, e.runner, e.clock.Now())
		e.clock.Add(2 * time.Second)
	}
	m := e.get(t, "/stats/history").json(t)
	tests := []struct {
		path string
		want string
	}{
		{"conn_open", "[3 4 <nil>]"},
		{"conn_established", "[2 4 <nil>]"},
		{"conn_new_per_sec", "[1.5 1.5 <nil>]"},
		{"conn_errors", "map[connect ephemeral_ports (generator):[0.0 2.0 <nil>] connect refused (target):[0.0 3.0 <nil>]]"},
		{"conn_open_by_worker", "map[w1:[3 4 <nil>]]"},
		{"conn_established_by_worker", "map[w1:[2 4 <nil>]]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(m[tt.path]); got != tt.want {
			t.Errorf("%s = %s; want %s", tt.path, got, tt.want)
		}
	}
}
