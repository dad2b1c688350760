package web_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/web/webtest"
)

// FuzzSwarm feeds arbitrary form bodies to POST /swarm: the answer is
// always HTTP 200 with a JSON object carrying success and message.
func FuzzSwarm(f *testing.F) {
	for _, s := range []string{
		"user_count=10&spawn_rate=5&host=http://x&run_time=5m",
		"user_count=1&spawn_rate=1&run_time=bogus",
		"user_count=&spawn_rate=",
		"user_count=1e9&spawn_rate=inf",
		"%zz",
		"user_classes=A&user_classes=B&user_count=1&spawn_rate=1&x=%00",
	} {
		f.Add(s)
	}
	r := webtest.New(webtest.Options{})
	h := web.New(web.Options{StatsCacheTTL: -1}, r).Handler()
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/swarm", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var m map[string]any
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &m) != nil {
			t.Fatalf("POST /swarm %q = %d %s", body, rec.Code, rec.Body.Bytes())
		}
		if _, ok := m["success"].(bool); !ok {
			t.Fatalf("POST /swarm %q: no success field: %s", body, rec.Body.Bytes())
		}
		if _, ok := m["message"].(string); !ok {
			t.Fatalf("POST /swarm %q: no message: %s", body, rec.Body.Bytes())
		}
	})
}
