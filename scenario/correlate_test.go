package scenario

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker"
)

// recorder is a test server: /login answers JSON with a token, a header
// and a cookie; /text answers plain text; anything else echoes. It keeps
// what it got.
type recorder struct {
	mu   sync.Mutex
	seen []string // "URI|Authorization|body"
}

func (rc *recorder) serve(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.seen = append(rc.seen, r.URL.RequestURI()+"|"+r.Header.Get("Authorization")+"|"+string(body))
		rc.mu.Unlock()
		switch r.URL.Path {
		case "/login":
			w.Header().Set("X-Session", "s1")
			w.Header().Set("Content-Type", "application/json")
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "c1", Path: "/"})
			io.WriteString(w, `{"ok":true,"token":"tok-1","user":{"id":42,"big":12345678901234567890},"html":"<input name='csrf' value='xyz'>","list":[1,2,3]}`)
		case "/text":
			io.WriteString(w, "plain text")
		default:
			io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// with returns the recorded requests whose URI starts with prefix.
func (rc *recorder) with(prefix string) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, s := range rc.seen {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func parseT(t testing.TB, yaml string) *File {
	t.Helper()
	f, err := Parse("t.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// counted reports whether every name has at least one request.
func counted(names ...string) func(s *stats.Snapshot) bool {
	return func(s *stats.Snapshot) bool {
		n := map[string]int64{}
		for _, e := range s.Entries {
			n[e.Name] += e.NumRequests
		}
		for _, name := range names {
			if n[name] == 0 {
				return false
			}
		}
		return true
	}
}

// TestCaptures: each capture source into a variable, read back in a path,
// a header and a JSON body; absent values fail the request, naming the
// capture, unless a default is given.
func TestCaptures(t *testing.T) {
	rc := &recorder{}
	srv := rc.serve(t)
	f := parseT(t, `
users:
  - name: U
    sequential: true
    wait: constant(0.02)
    variables:
      n: {counter: {start: 5}}
    on_start:
      - method: POST
        path: /login
        name: login
        capture:
          token: {json: "$.token"}
          uid:   {json: "$.user.id"}
          big:   {json: "$.user.big"}
          last:  {json: "$.list[-1]"}
          sid:   {header: x-session}
          c:     {cookie: session}
          csrf:  {regex: "name='csrf' value='([^']+)'"}
          code:  {status: true}
          opt:   {header: X-Absent, default: dflt}
    tasks:
      - path: /echo/${token}?uid=${uid}&big=${big}&last=${last}&sid=${sid}&c=${c}&csrf=${csrf}&code=${code}&opt=${opt}&n=${n}
        headers: {Authorization: "Bearer ${token}"}
        json: {t: "${token}", q: "a\"${csrf}\n", k: 1}
      - {path: /login, method: POST, name: miss_json, capture: {x: {json: "$.nope"}}}
      - {path: /login, method: POST, name: miss_header, capture: {x: {header: X-Nope}}}
      - {path: /login, method: POST, name: miss_cookie, capture: {x: {cookie: nope}}}
      - {path: /login, method: POST, name: miss_regex, capture: {x: {regex: "zz([0-9]+)"}}}
      - {path: /text, name: not_json, capture: {x: {json: "$.a"}}}
      - {path: /text, name: with_default, capture: {x: {json: "$.a", default: "d"}}}
`)
	c := startCluster(t, f, 1, 1, srv.URL)
	s := c.waitStats("every request", counted("/echo/${token}?uid=${uid}&big=${big}&last=${last}&sid=${sid}&c=${c}&csrf=${csrf}&code=${code}&opt=${opt}&n=${n}",
		"miss_json", "miss_header", "miss_cookie", "miss_regex", "not_json", "with_default"))
	echo := rc.with("/echo/")
	want := `/echo/tok-1?uid=42&big=12345678901234567890&last=3&sid=s1&c=c1&csrf=xyz&code=200&opt=dflt&n=5|Bearer tok-1|{"k":1,"q":"a\"xyz\n","t":"tok-1"}`
	if len(echo) == 0 || echo[0] != want {
		t.Fatalf("templated request = %q\nwant %q", echo, want)
	}
	fails := failures(s)
	for name, msg := range map[string]string{
		"POST miss_json":   "capture x: JSON path $.nope not found",
		"POST miss_header": "capture x: header X-Nope absent",
		"POST miss_cookie": "capture x: cookie nope not set by the response",
		"POST miss_regex":  `capture x: regex "zz([0-9]+)" does not match`,
		"GET not_json":     "capture x: response is not JSON",
	} {
		if !strings.Contains(fails[name], msg) {
			t.Errorf("failure of %s = %q; want it to contain %q", name, fails[name], msg)
		}
	}
	for _, ok := range []string{"POST login", "GET with_default"} {
		if fails[ok] != "" {
			t.Errorf("%s failed: %q", ok, fails[ok])
		}
	}
}

// TestChecks: each check, passing and failing; a failure names the check.
func TestChecks(t *testing.T) {
	rc := &recorder{}
	srv := rc.serve(t)
	f := parseT(t, `
users:
  - name: U
    sequential: true
    wait: constant(0.02)
    on_start:
      - {path: /login, method: POST, capture: {tok: {json: $.token}}}
    tasks:
      - path: /login
        method: POST
        name: all_pass
        checks:
          status: 200
          json: {"$.ok": true, "$.user.id": 42, "$.token": "tok-1", "$.list": [1, 2, 3], "$.user.big": 12345678901234567890}
          json_exists: ["$.token", "$.user"]
          regex: "tok-[0-9]+"
          headers: {x-session: s1, Content-Type: application/json}
          headers_exist: [X-Session]
          body_contains: ["${tok}"]
      - {path: /login, method: POST, name: json_bad, checks: {json: {"$.ok": false}}}
      - {path: /login, method: POST, name: json_var_bad, checks: {json: {"$.token": "x${tok}"}}}
      - {path: /login, method: POST, name: json_absent, checks: {json: {"$.nope": 1}}}
      - {path: /login, method: POST, name: exists_bad, checks: {json_exists: ["$.user.name"]}}
      - {path: /login, method: POST, name: regex_bad, checks: {regex: "^nope"}}
      - {path: /login, method: POST, name: header_bad, checks: {headers: {X-Session: s2}}}
      - {path: /login, method: POST, name: header_absent, checks: {headers: {X-Nope: a}}}
      - {path: /login, method: POST, name: exist_bad, checks: {headers_exist: [X-Nope]}}
      - {path: /login, method: POST, name: body_var_bad, checks: {body_contains: ["${tok}x"]}}
      - {path: /text, name: json_not_json, checks: {json: {"$.a": 1}}}
`)
	c := startCluster(t, f, 1, 1, srv.URL)
	s := c.waitStats("every request", counted("all_pass", "json_bad", "json_var_bad", "json_absent", "exists_bad", "regex_bad",
		"header_bad", "header_absent", "exist_bad", "body_var_bad", "json_not_json"))
	fails := failures(s)
	if fails["POST all_pass"] != "" {
		t.Errorf("all_pass failed: %q", fails["POST all_pass"])
	}
	for name, msg := range map[string]string{
		"POST json_bad":      "check json $.ok: got true, want false",
		"POST json_var_bad":  `check json $.token: got "tok-1", want "xtok-1"`,
		"POST json_absent":   "check json $.nope: absent",
		"POST exists_bad":    "check json_exists $.user.name: absent",
		"POST regex_bad":     `check regex "^nope": no match`,
		"POST header_bad":    `check headers X-Session: got "s1", want "s2"`,
		"POST header_absent": `check headers X-Nope: absent`,
		"POST exist_bad":     "check headers_exist X-Nope: absent",
		"POST body_var_bad":  `check body_contains ${tok}x: response body does not contain "tok-1x"`,
		"GET json_not_json":  "check json $.a: response is not JSON",
	} {
		got := strings.ReplaceAll(fails[name], `\'`, `'`)
		if !strings.Contains(got, msg) || !strings.HasPrefix(got, "CatchResponseError(") {
			t.Errorf("failure of %s = %q; want CatchResponseError with %q", name, fails[name], msg)
		}
	}
}

// TestGenerators: every generator, two users on one worker.
func TestGenerators(t *testing.T) {
	rc := &recorder{}
	srv := rc.serve(t)
	f := parseT(t, `
users:
  - name: U
    wait: constant(0.05)
    variables:
      c: {counter: {start: 5, step: 10}}
      ri: {random_int: [3, 4]}
      rs: {random_string: 12}
      id: {uuid: true}
      ui: {user_index: true}
      wi: {worker_index: true}
      ms: {now: unix_ms}
      k: "fixed ${NOT_SET:-dflt}"
    tasks:
      - path: /gen?c=${c}&ri=${ri}&rs=${rs}&id=${id}&ui=${ui}&wi=${wi}&ms=${ms}&k=${k}
`)
	before := time.Now().UnixMilli()
	c := startCluster(t, f, 1, 2, srv.URL)
	c.waitStats("two users' requests", func(*stats.Snapshot) bool {
		users := map[string]bool{}
		for _, s := range rc.with("/gen") {
			users[strings.SplitN(s, "&", 2)[0]] = true
		}
		return len(users) >= 2
	})
	re := regexp.MustCompile(`^/gen\?c=(\d+)&ri=([34])&rs=([A-Za-z0-9]{12})&id=([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})&ui=(\d+)&wi=0&ms=(\d+)&k=fixed%20dflt\|`)
	counters, indexes := map[string]bool{}, map[string]bool{}
	for _, s := range rc.with("/gen") {
		m := re.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("request %q does not match %v", s, re)
		}
		counters[m[1]], indexes[m[5]] = true, true
		ms, _ := strconv.ParseInt(m[6], 10, 64)
		if ms < before || ms > time.Now().UnixMilli() {
			t.Errorf("now = %d, not within the test", ms)
		}
	}
	if !counters["5"] || !counters["15"] || len(counters) != 2 {
		t.Errorf("counters = %v; want 5 and 15", counters)
	}
	if !indexes["0"] || !indexes["1"] || len(indexes) != 2 {
		t.Errorf("user indexes = %v; want 0 and 1", indexes)
	}
}

// TestGeneratorsEachRequest: a variable with each: request is drawn again
// before every request (Python's random.randint in a task), one without it
// once per user; random_choice picks from its list.
func TestGeneratorsEachRequest(t *testing.T) {
	rc := &recorder{}
	srv := rc.serve(t)
	f := parseT(t, `
users:
  - name: U
    wait: constant(0.01)
    variables:
      per_user: {random_int: [1, 1000000]}
      per_req: {random_int: [1, 1000000], each: request}
      pick: {random_choice: [red, green, blue], each: request}
    tasks:
      - path: /each?u=${per_user}&r=${per_req}&c=${pick}
`)
	c := startCluster(t, f, 1, 1, srv.URL)
	c.waitStats("twenty requests", func(s *stats.Snapshot) bool { return len(rc.with("/each")) >= 20 })
	re := regexp.MustCompile(`^/each\?u=(\d+)&r=(\d+)&c=(red|green|blue)\|`)
	users, reqs, colours := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range rc.with("/each") {
		m := re.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("request %q does not match %v", s, re)
		}
		users[m[1]], reqs[m[2]], colours[m[3]] = true, true, true
	}
	// One user: one per-user value; 20 draws from a million are distinct
	// but for a chance of 2e-4; three colours show up in 20 draws but for
	// a chance of 3*(2/3)^20 = 1e-3.
	if len(users) != 1 || len(reqs) < 19 || len(colours) < 2 {
		t.Errorf("per-user values %d (want 1), per-request values %d of %d (want all but one), colours %v",
			len(users), len(reqs), len(rc.with("/each")), colours)
	}
}

// TestShopLoginToken runs examples/shop.yaml (without its waits) against
// the built-in target: every user logs in, and the requests that need
// the token (401 without it) succeed with the captured one.
func TestShopLoginToken(t *testing.T) {
	srv, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the target", 10*time.Second, func(ctx context.Context) { _ = srv.Run(ctx) })
	t.Setenv("TARGET", srv.URL())
	f, err := Load("../examples/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Scenario.Classes {
		c := &f.Scenario.Classes[i]
		c.Wait, c.WaitSpec = worker.Constant(10*time.Millisecond), nil
	}
	c := startCluster(t, f, 1, 6, "")
	s := c.waitStats("the token's requests", counted("/auth/login", "/auth/account", "/auth/cart/items", "/auth/checkout", "/auth/admin/health"))
	if s.Total.NumFailures != 0 {
		t.Errorf("failures with the captured token: %s", describe(s))
	}

	// Without the token, the target refuses.
	resp, err := http.Get(srv.URL() + "/auth/account")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /auth/account without a token = %d; want 401", resp.StatusCode)
	}
}
