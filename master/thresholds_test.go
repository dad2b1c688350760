package master

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"

	"github.com/cicada-load/cicada/thresholds"
)

func TestResultExitCodeVerdicts(t *testing.T) {
	pass := &thresholds.Verdict{Results: []thresholds.Result{{Passed: true}}, Aborted: -1}
	fail := &thresholds.Verdict{Results: []thresholds.Result{{Passed: true}, {Passed: false}}, Aborted: -1}
	for _, tt := range []struct {
		name string
		r    Result
		want int
	}{
		{"thresholds passed", Result{Thresholds: pass, ExitCodeOnError: 1}, 0},
		{"thresholds failed", Result{Thresholds: fail, ExitCodeOnError: 1}, ExitCodeThresholds},
		{"thresholds passed decide over failures", Result{Thresholds: pass, Failures: true, ExitCodeOnError: 1}, 0},
		{"thresholds failed over failures", Result{Thresholds: fail, Failures: true, ExitCodeOnError: 3}, ExitCodeThresholds},
		{"generator limited", Result{GeneratorLimited: true, ExitCodeOnError: 1}, ExitCodeGeneratorLimited},
		{"generator limited over thresholds", Result{GeneratorLimited: true, Thresholds: fail, Failures: true, ExitCodeOnError: 1}, ExitCodeGeneratorLimited},
		{"gave up over everything", Result{GaveUp: true, GeneratorLimited: true, Thresholds: fail}, 1},
		{"internal error with thresholds passed", Result{Thresholds: pass, InternalError: true, ExitCodeOnError: 1}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.ExitCode(); got != tt.want {
				t.Errorf("ExitCode() = %d; want %d", got, tt.want)
			}
		})
	}
}

func TestGeneratorLimited(t *testing.T) {
	for _, tt := range []struct {
		kinds []string
		want  bool
	}{
		{nil, false},
		{[]string{"time-wait"}, false},
		{[]string{"time-wait", "ports"}, true},
		{[]string{"errors: local ports exhausted"}, true},
	} {
		cv := &connView{}
		for _, k := range tt.kinds {
			cv.warnings = append(cv.warnings, WorkerWarning{Kind: k})
		}
		if got := generatorLimited(cv); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.kinds, got, tt.want)
		}
	}
	if generatorLimited(nil) {
		t.Error("nil view limited")
	}
}

func TestThresholdsRefused(t *testing.T) {
	o := testOptions(&logBuf{})
	th, err := thresholds.Parse("dropped<=0")
	if err != nil {
		t.Fatal(err)
	}
	o.Thresholds = []thresholds.Threshold{th}
	if _, err := New(o); !errors.Is(err, ErrOptions) || !errors.Is(err, thresholds.ErrUnsupported) {
		t.Fatalf("New with a dropped threshold and no count: %v", err)
	}
}

// A headless run whose final report breaks one threshold of two: exit
// code 99, the verdict on stderr, in the CSV file and in the Result.
func TestThresholdsHeadless(t *testing.T) {
	for _, tt := range []struct {
		name  string
		exprs []string
		want  int
	}{
		{"broken", []string{"fail_ratio<10%", "p99{/x}<1s"}, ExitCodeThresholds},
		{"kept", []string{"fail_ratio<=50%", "p99{/x}<1s"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logBuf{}
			o := testOptions(logs)
			o.Headless = true
			o.RunTime = 100 * time.Millisecond
			o.UserClasses = []UserClass{{Name: "A"}}
			o.ThresholdInterval = 20 * time.Millisecond
			prefix := filepath.Join(t.TempDir(), "out", "run")
			o.CSVPrefix = prefix
			var stderr syncBuf
			o.Stderr = &stderr
			for _, e := range tt.exprs {
				th, err := thresholds.Parse(e)
				if err != nil {
					t.Fatal(err)
				}
				o.Thresholds = append(o.Thresholds, th)
			}
			h := startMaster(t, o, logs)
			finalWorker(t, h, "w_1", report(5, 2, map[string]int64{"A": 0}), 0, true)
			code, err := h.wait()
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Errorf("exit code %d; want %d\n%s", code, tt.want, stderr.String())
			}
			if v := h.m.Thresholds(); v == nil || v.Passed() != (tt.want == 0) || len(v.Results) != 2 {
				t.Errorf("Thresholds() after the run = %+v", v)
			}
			out := stderr.String()
			if !strings.Contains(out, "28.57%") || !strings.Contains(out, "Thresholds: ") {
				t.Errorf("no verdict table on stderr:\n%s", out)
			}
			csv, err := os.ReadFile(prefix + "_thresholds.csv")
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(csv), "\n"); n != 3 || !strings.Contains(string(csv), "p99{/x}<1000ms,p99,,/x,0,false,1000,3,pass,") {
				t.Errorf("thresholds CSV (%d lines):\n%s", n, csv)
			}
		})
	}
}

// abort_on_fail ends a headless run long before its run time.
func TestThresholdsAbort(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.Headless = true
	o.RunTime = time.Minute
	o.UserClasses = []UserClass{{Name: "A"}}
	o.ThresholdInterval = 20 * time.Millisecond
	th, err := thresholds.Parse("fail_ratio<10% abort_on_fail")
	if err != nil {
		t.Fatal(err)
	}
	o.Thresholds = []thresholds.Threshold{th}
	begin := time.Now()
	h := startMaster(t, o, logs)
	w := h.worker("w_1")
	w.ready(ready(""))
	var state atomic.Value
	state.Store(protocol.StateReady)
	stop := w.beatEvery(20*time.Millisecond, func() string { return state.Load().(string) })
	defer stop()
	w.expect("spawn")
	w.send("spawning", nil)
	state.Store(protocol.StateRunning)
	w.send("stats", report(5, 5, map[string]int64{"A": 1}))
	w.expect("quit")
	stop()
	w.send("quit", nil)
	code, err := h.wait()
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitCodeThresholds {
		t.Errorf("exit code %d; want %d", code, ExitCodeThresholds)
	}
	if d := time.Since(begin); d > 30*time.Second {
		t.Errorf("the run took %v: no abort", d)
	}
	if !strings.Contains(logs.String(), "Threshold fail_ratio<0.1 abort_on_fail failed (measured 50.00%)") {
		t.Errorf("no abort line in the log:\n%s", logs)
	}
}
