package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/thresholds"
)

const thresholdUsers = `
users:
  - name: U
    tasks:
      - path: /
`

func TestThresholds(t *testing.T) {
	f, err := Parse("s.yaml", []byte(`
thresholds:
  - p99<500ms
  - fail_ratio<=1% abort_on_fail delay=30s
  - threshold: avg<200
    name: /items/{id}
    method: get
    window: 30
    abort_on_fail: true
`+thresholdUsers), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []thresholds.Threshold{
		{Metric: thresholds.Percentile, P: 0.99, Op: thresholds.Less, Limit: 500, Source: "s.yaml:3"},
		{Metric: thresholds.FailRatio, Op: thresholds.LessEq, Limit: 0.01, AbortOnFail: true, Delay: 30 * time.Second, Source: "s.yaml:4"},
		{Metric: thresholds.Avg, Op: thresholds.Less, Limit: 200, Name: "/items/{id}", Method: "GET", Window: 30 * time.Second, AbortOnFail: true, Source: "s.yaml:5"},
	}
	if len(f.Thresholds) != len(want) {
		t.Fatalf("%+v", f.Thresholds)
	}
	for i := range want {
		if f.Thresholds[i] != want[i] {
			t.Errorf("threshold %d: %+v, want %+v", i, f.Thresholds[i], want[i])
		}
	}
}

func TestThresholdsErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"thresholds: p99<5", "s.yaml:2:13: thresholds: must be a list"},
		{"thresholds:\n  - p99", "s.yaml:3:5: thresholds[0]: bad threshold \"p99\": no comparison"},
		{"thresholds:\n  - threshold: p99<5\n    window: 0.5", "thresholds[0]: window 500ms outside"},
		{"thresholds:\n  - name: /x", "thresholds[0].threshold: missing"},
		{"thresholds:\n  - threshold: p99{/a}<5\n    name: /b", "the request selector given both"},
		{"thresholds:\n  - threshold: p99<5\n    every: 1s", "thresholds[0].every: unknown"},
		{"thresholds:\n  - threshold: p99<5\n    delay: 5s", "delay without abort_on_fail"},
	} {
		_, err := Parse("s.yaml", []byte("\n"+tc.yaml+thresholdUsers), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// FuzzParseThresholds: a file's thresholds are refused with ErrInvalid or
// accepted valid.
func FuzzParseThresholds(f *testing.F) {
	f.Add([]byte("thresholds: [p99<5, {threshold: avg<3, name: /a, window: 2s, abort_on_fail: true, delay: 1}]"))
	f.Add([]byte("thresholds:\n  - fail_ratio<1% abort_on_fail\n  - threshold: rps>1\n    method: POST\n    name: x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", append(append([]byte(nil), data...), "\n"+thresholdUsers...), nil)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, th := range file.Thresholds {
			if err := th.Check(); err != nil || th.Source == "" {
				t.Fatalf("accepted %+v: %v", th, err)
			}
		}
	})
}
