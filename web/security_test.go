package web_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/web/webtest"
)

// TestCrossSiteRequestsRefused checks the browser cross-site protection of
// the state-changing routes (issue 20 item 17): a request a browser sends
// on behalf of another site is refused with 403 and changes nothing, while
// requests without browser headers (curl, Locust's scripts) and the
// dashboard's own same-origin requests pass. httptest requests go to host
// example.com.
func TestCrossSiteRequestsRefused(t *testing.T) {
	form := url.Values{"user_count": {"5"}, "spawn_rate": {"1"}}
	tests := []struct {
		name         string
		method, path string
		hdr          []string
		refused      bool
	}{
		{"swarm from curl", "POST", "/swarm", nil, false},
		{"swarm same origin (fetch metadata)", "POST", "/swarm", []string{"Sec-Fetch-Site", "same-origin", "Origin", "http://example.com"}, false},
		{"swarm same origin (Origin only)", "POST", "/swarm", []string{"Origin", "http://example.com"}, false},
		{"swarm typed by the user", "POST", "/swarm", []string{"Sec-Fetch-Site", "none"}, false},
		{"swarm cross-site", "POST", "/swarm", []string{"Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"}, true},
		{"swarm same-site other port", "POST", "/swarm", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://example.com:8080"}, true},
		{"swarm other Origin, no fetch metadata", "POST", "/swarm", []string{"Origin", "http://evil.example"}, true},
		{"swarm other port, no fetch metadata", "POST", "/swarm", []string{"Origin", "http://example.com:8080"}, true},
		{"swarm null Origin", "POST", "/swarm", []string{"Origin", "null"}, true},
		{"stop from curl", "GET", "/stop", nil, false},
		{"stop same origin", "GET", "/stop", []string{"Sec-Fetch-Site", "same-origin"}, false},
		{"stop from an img on another site", "GET", "/stop", []string{"Sec-Fetch-Site", "cross-site"}, true},
		{"stop with a foreign Referer", "GET", "/stop", []string{"Referer", "http://evil.example/page"}, true},
		{"stop with our Referer", "GET", "/stop", []string{"Referer", "http://example.com/"}, false},
		{"head stop cross-site", "HEAD", "/stop", []string{"Sec-Fetch-Site", "cross-site"}, true},
		{"reset from curl", "GET", "/stats/reset", nil, false},
		{"reset cross-site", "GET", "/stats/reset", []string{"Sec-Fetch-Site", "cross-site"}, true},
		{"reset foreign Origin", "GET", "/stats/reset", []string{"Origin", "https://evil.example"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, web.Options{}, webtest.Options{})
			var f url.Values
			if tt.method == "POST" {
				f = form
			}
			r := e.do(t, tt.method, tt.path, f, tt.hdr...)
			changes := len(e.runner.Starts()) + e.runner.Stops() + e.runner.Resets()
			if tt.refused {
				if r.code != http.StatusForbidden || changes != 0 {
					t.Errorf("%s %s %q = %d with %d state changes; want 403 and none", tt.method, tt.path, tt.hdr, r.code, changes)
				}
				if tt.method != "HEAD" && !strings.Contains(string(r.body), "cross-site request refused") {
					t.Errorf("%s %s %q body = %q; want the reason", tt.method, tt.path, tt.hdr, r.body)
				}
				return
			}
			if r.code != http.StatusOK || changes != 1 {
				t.Errorf("%s %s %q = %d with %d state changes; want 200 and one", tt.method, tt.path, tt.hdr, r.code, changes)
			}
		})
	}
	// Read-only routes stay open to other sites, as Locust's CORS says.
	e := newEnv(t, web.Options{}, webtest.Options{})
	if r := e.do(t, "GET", "/stats/requests", nil, "Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"); r.code != http.StatusOK {
		t.Errorf("cross-site GET /stats/requests = %d; want 200", r.code)
	}
	if r := e.do(t, "OPTIONS", "/swarm", nil, "Origin", "http://evil.example", "Access-Control-Request-Method", "POST"); r.code != http.StatusOK {
		t.Errorf("preflight OPTIONS /swarm = %d; want 200", r.code)
	}
}

var inlineScript = regexp.MustCompile(`(?s)<(script|style)( [^>]*)?>(.*?)</(?:script|style)>`)

// TestSecurityHeaders checks X-Frame-Options, X-Content-Type-Options and
// the Content-Security-Policy (issue 20 item 17): every response has the
// first two and a CSP; the dashboard's and the report's CSP allow exactly
// their own inline scripts and styles, by hash, and nothing inline else.
func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, web.Options{}, webtest.Options{})
	for _, path := range []string{"/", "/stats/report", "/stats/requests", "/stats/requests/csv", "/nope", "/assets/app.js"} {
		r := e.get(t, path)
		if got := r.header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("GET %s X-Frame-Options = %q; want DENY", path, got)
		}
		if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s X-Content-Type-Options = %q; want nosniff", path, got)
		}
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("GET %s Content-Security-Policy = %q; want default-src and frame-ancestors 'none'", path, csp)
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s Content-Security-Policy = %q; want no unsafe-* source", path, csp)
		}
		if path != "/" && path != "/stats/report" {
			continue
		}
		directives := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			directives[name] = value
		}
		inline := 0
		for _, m := range inlineScript.FindAllSubmatch(r.body, -1) {
			if strings.Contains(string(m[2]), "src=") {
				continue
			}
			inline++
			sum := sha256.Sum256(m[3])
			src := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
			dir := string(m[1]) + "-src"
			if !strings.Contains(directives[dir], src) {
				t.Errorf("GET %s: %s = %q does not allow the inline <%s%s> (%s)", path, dir, directives[dir], m[1], m[2], src)
			}
		}
		if inline == 0 {
			t.Errorf("GET %s: no inline element found; the test's pattern is out of date", path)
		}
		if strings.Contains(string(r.body), " style=") || regexp.MustCompile(` on[a-z]+=`).Match(r.body) {
			t.Errorf("GET %s has an inline style or event attribute, which the CSP blocks", path)
		}
	}
}
