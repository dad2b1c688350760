package web_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/thresholds"
	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/web/webtest"
)

// verdictRunner is a runner whose master evaluates thresholds.
type verdictRunner struct {
	*webtest.Runner
	v *thresholds.Verdict
}

func (r verdictRunner) Thresholds() *thresholds.Verdict { return r.v }

func TestThresholdsRoute(t *testing.T) {
	th, err := thresholds.Parse("p99<500ms")
	if err != nil {
		t.Fatal(err)
	}
	v := &thresholds.Verdict{Aborted: -1, Results: []thresholds.Result{{Threshold: th, Measured: 12.5, HasValue: true, Passed: true}}}
	for _, tc := range []struct {
		name   string
		runner web.Runner
		want   string
	}{
		{"no thresholds", webtest.New(webtest.Options{}), `{"verdict":null}`},
		{"nil verdict", verdictRunner{webtest.New(webtest.Options{}), nil}, `{"verdict":null}`},
		{"verdict", verdictRunner{webtest.New(webtest.Options{}), v},
			`{"verdict":{"aborted":false,"passed":true,"thresholds":[{"abort_on_fail":false,"limit":500,"measured":12.5,"method":"","metric":"p99","name":"","note":"","passed":true,"threshold":"p99\u003c500ms","window_seconds":0}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := web.New(web.Options{}, tc.runner).Handler()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/thresholds", nil))
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			var got any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			compact, _ := json.Marshal(got)
			if string(compact) != tc.want {
				t.Errorf("body %s\nwant %s", rec.Body.String(), tc.want)
			}
			if !strings.HasSuffix(rec.Body.String(), "}\n") {
				t.Errorf("no trailing newline: %q", rec.Body.String())
			}
		})
	}
}
