package thresholds

import (
	"errors"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Threshold
	}{
		{"p99<500ms", Threshold{Metric: Percentile, P: 0.99, Op: Less, Limit: 500}},
		{"p99.9 <= 1s", Threshold{Metric: Percentile, P: 0.999, Op: LessEq, Limit: 1000}},
		{"p(95)<250", Threshold{Metric: Percentile, P: 0.95, Op: Less, Limit: 250}},
		{"p100<2000us", Threshold{Metric: Percentile, P: 1, Op: Less, Limit: 2}},
		{"fail_ratio<=1%", Threshold{Metric: FailRatio, Op: LessEq, Limit: 0.01}},
		{"fail_ratio<0.05", Threshold{Metric: FailRatio, Op: Less, Limit: 0.05}},
		{"avg{/api}<200", Threshold{Metric: Avg, Name: "/api", Op: Less, Limit: 200}},
		{"avg{GET /api/items?id=1}<200ms", Threshold{Metric: Avg, Method: "GET", Name: "/api/items?id=1", Op: Less, Limit: 200}},
		{"avg{LOGIN flow}<200", Threshold{Metric: Avg, Name: "LOGIN flow", Op: Less, Limit: 200}},
		{"rps>=100 window=10s", Threshold{Metric: RPS, Op: GreaterEq, Limit: 100, Window: 10 * time.Second}},
		{"rps>5/s", Threshold{Metric: RPS, Op: Greater, Limit: 5}},
		{"dropped<=0 abort_on_fail", Threshold{Metric: Dropped, Op: LessEq, Limit: 0, AbortOnFail: true}},
		{"p99<1s abort_on_fail delay=30s", Threshold{Metric: Percentile, P: 0.99, Op: Less, Limit: 1000, AbortOnFail: true, Delay: 30 * time.Second}},
		{"  p50 < 3  window=1m  abort_on_fail=false ", Threshold{Metric: Percentile, P: 0.5, Op: Less, Limit: 3, Window: time.Minute}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			again, err := Parse(got.String())
			if err != nil || again != got {
				t.Fatalf("Parse(String() = %q) = %+v, %v; want %+v", got.String(), again, err, got)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{"", "empty"},
		{"p99", "no comparison"},
		{"<5", "no metric"},
		{"p99=5", "no comparison"},
		{"max<5", "unknown metric"},
		{"p0<5", "bad percentile"},
		{"p101<5", "bad percentile"},
		{"p1e2<5", "bad percentile"},
		{"p(99<5", "bad percentile"},
		{"p99<", "no limit"},
		{"p99<abc", "bad limit"},
		{"p99<5h", "bad unit"},
		{"p99<-5", "bad limit"},
		{"fail_ratio<5", "above 1"},
		{"fail_ratio<5ms", "bad unit"},
		{"dropped<5%", "bad unit"},
		{"rps>5ms", "bad unit"},
		{"avg{/api<5", "closing }"},
		{"avg{}<5", "empty selector"},
		{"p99<5 window=0.5s", "window"},
		{"p99<5 window=2h", "window"},
		{"p99<5 window=", "bad window"},
		{"p99<5 delay=5s", "delay without abort_on_fail"},
		{"p99<5 abort_on_fail=maybe", "abort_on_fail"},
		{"p99<5 every=5s", "unknown option"},
		{"p99<<5", "bad limit"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) accepted", tc.in)
			}
			if !errors.Is(err, ErrSyntax) || !contains(err.Error(), tc.msg) {
				t.Fatalf("Parse(%q) = %v, want ErrSyntax mentioning %q", tc.in, err, tc.msg)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// FuzzParse: no panic; an accepted expression passes Check and its String
// parses back to the same threshold.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"p99<500ms", "p(99.9)<=1s", "fail_ratio<1%", "avg{GET /x}<3 window=10s",
		"rps>=1 abort_on_fail delay=1s", "dropped<=0", "p50 > 0.5us", "avg{a}b}<1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): error %v does not wrap ErrSyntax", s, err)
			}
			return
		}
		if err := th.Check(); err != nil {
			t.Fatalf("Parse(%q) = %+v fails Check: %v", s, th, err)
		}
		again, err := Parse(th.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", s, th.String(), err)
		}
		// Limits go through a decimal string and a unit: compare loosely.
		if again.Metric != th.Metric || again.Op != th.Op || again.Name != th.Name || again.Method != th.Method ||
			again.Window != th.Window || again.AbortOnFail != th.AbortOnFail || again.Delay != th.Delay ||
			!near(again.Limit, th.Limit) || !near(again.P, th.P) {
			t.Fatalf("Parse(%q) = %+v; String %q parses to %+v", s, th, th.String(), again)
		}
	})
}

func near(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(1, a, b)
}
