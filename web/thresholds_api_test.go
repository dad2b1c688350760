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

// liveRunner is a runner whose master evaluates thresholds live.
type liveRunner struct {
	*webtest.Runner
	rs []thresholds.Result
}

func (r liveRunner) LiveThresholds() []thresholds.Result { return r.rs }

func TestLiveThresholdsRoute(t *testing.T) {
	var ths []thresholds.Threshold
	for _, e := range []string{"p99<500ms", "fail_ratio<1% window=10s abort_on_fail", "rps{GET /<b>}>1"} {
		th, err := thresholds.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		ths = append(ths, th)
	}
	rs := []thresholds.Result{
		{Threshold: ths[0], Measured: 12.5, HasValue: true, Passed: true},
		{Threshold: ths[1], Measured: 0.25, HasValue: true, Note: "window of 10s not yet full: the run so far"},
		{Threshold: ths[2], Note: "no request of this name"},
	}
	for _, tc := range []struct {
		name   string
		runner web.Runner
		want   string
	}{
		{"no thresholds", webtest.New(webtest.Options{}), `{"failing":0,"thresholds":null}`},
		{"none declared", liveRunner{webtest.New(webtest.Options{}), nil}, `{"failing":0,"thresholds":null}`},
		{"live", liveRunner{webtest.New(webtest.Options{}), rs}, `{"failing":1,"thresholds":[` +
			`{"abort_on_fail":false,"limit":500,"measured":12.5,"measured_text":"12.50 ms","method":"","metric":"p99","name":"","note":"","state":"ok","threshold":"p99\u003c500ms","window_seconds":0},` +
			`{"abort_on_fail":true,"limit":0.01,"measured":0.25,"measured_text":"25.00%","method":"","metric":"fail_ratio","name":"","note":"window of 10s not yet full: the run so far","state":"FAILING","threshold":"fail_ratio\u003c0.01 window=10s abort_on_fail","window_seconds":10},` +
			`{"abort_on_fail":false,"limit":1,"measured":null,"measured_text":"n/a","method":"GET","metric":"rps","name":"/\u003cb\u003e","note":"no request of this name","state":"waiting","threshold":"rps{GET /\u003cb\u003e}\u003e1","window_seconds":0}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := web.New(web.Options{}, tc.runner).Handler()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/thresholds/live", nil))
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			var got any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			compact, _ := json.Marshal(got)
			if string(compact) != tc.want {
				t.Errorf("body %s\nwant %s", compact, tc.want)
			}
			if !strings.HasSuffix(rec.Body.String(), "}\n") {
				t.Errorf("no trailing newline: %q", rec.Body.String())
			}
		})
	}
}
