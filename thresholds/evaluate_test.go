package thresholds

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/stats"
)

// run feeds a master Stats from a worker Recorder on a fake clock, one
// second at a time.
type run struct {
	t0  time.Time
	now time.Time
	rec *stats.Recorder
	st  *stats.Stats
}

func newRun() *run {
	r := &run{t0: time.Unix(1_700_000_000, 0)}
	r.now = r.t0
	clock := func() time.Time { return r.now }
	r.rec = stats.NewRecorder(clock)
	r.st = stats.New(clock)
	return r
}

// second records n requests of name taking rt, fails of them failed, then
// advances the clock a second and merges.
func (r *run) second(method, name string, n int, rt time.Duration, fails int) *stats.Snapshot {
	for i := 0; i < n; i++ {
		f := ""
		if i < fails {
			f = "boom"
		}
		r.rec.Record(method, name, rt, 10, f)
	}
	r.now = r.now.Add(time.Second)
	r.st.Merge(r.rec.Report(nil, 1))
	return r.st.Snapshot()
}

func (r *run) elapsed() time.Duration { return r.now.Sub(r.t0) }

func mustParse(t *testing.T, exprs ...string) []Threshold {
	t.Helper()
	var out []Threshold
	for _, e := range exprs {
		th, err := Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		th.Source = "test"
		out = append(out, th)
	}
	return out
}

func TestFinalWholeRun(t *testing.T) {
	r := newRun()
	for i := 0; i < 5; i++ {
		r.second("GET", "/fast", 100, 10*time.Millisecond, 0)
		r.second("GET", "/slow", 10, 300*time.Millisecond, 1)
	}
	snap := r.second("POST", "/slow", 10, 100*time.Millisecond, 0)
	for _, tc := range []struct {
		expr     string
		pass     bool
		measured float64 // approximate (exact percentiles: within 0.4 %)
	}{
		{"p99{/fast}<20ms", true, 10},
		{"p50<20ms", true, 10},
		{"p99<250ms", false, 300},
		{"p99{GET /slow}<=300", true, 300},
		{"p50{/slow}<200", false, 300}, // 50 GET at 300, 10 POST at 100
		{"avg{POST /slow}<101", true, 100},
		{"avg{/slow}<250", false, (50*300 + 10*100) / 60.0},
		{"fail_ratio<=1%", true, 5.0 / 560},
		{"fail_ratio{/slow}<5%", false, 5.0 / 60},
		{"fail_ratio{POST /slow}<=0", true, 0},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := New(mustParse(t, tc.expr), Options{})
			if err != nil {
				t.Fatal(err)
			}
			v := e.Final(snap)
			res := v.Results[0]
			if !res.HasValue || res.Passed != tc.pass || !within(res.Measured, tc.measured, 0.005) {
				t.Fatalf("%s: %+v, want passed=%v measured≈%v", tc.expr, res, tc.pass, tc.measured)
			}
			if v.Passed() != tc.pass {
				t.Fatalf("Verdict.Passed = %v", v.Passed())
			}
		})
	}
}

func within(got, want, rel float64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return d <= rel*want+1e-9
}

func TestFinalNoData(t *testing.T) {
	r := newRun()
	snap := r.second("GET", "/a", 3, time.Millisecond, 0)
	e, err := New(mustParse(t, "p99{/missing}<5", "fail_ratio{/missing}<1", "rps>=0"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := e.Final(snap)
	for i, want := range []bool{false, false, true} {
		if v.Results[i].Passed != want {
			t.Errorf("%s: %+v, want passed=%v", v.Results[i].Threshold, v.Results[i], want)
		}
	}
	if v.Results[0].Note != "no request of this name" {
		t.Errorf("note %q", v.Results[0].Note)
	}
}

func TestDroppedNeedsASource(t *testing.T) {
	if _, err := New(mustParse(t, "dropped<=0"), Options{}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("New without Dropped: %v, want ErrUnsupported", err)
	}
	if _, err := New(mustParse(t, "dropped{/a}<=0"), Options{}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("per-name dropped without Dropped (no rate): %v, want ErrUnsupported", err)
	}
	var dropped int64
	e, err := New(mustParse(t, "dropped<10", "dropped<=5 window=2s abort_on_fail"), Options{Dropped: func(*stats.Snapshot) int64 { return dropped }})
	if err != nil {
		t.Fatal(err)
	}
	r := newRun()
	var aborted bool
	for i, d := range []int64{0, 1, 2, 3, 9, 12} {
		dropped = d
		snap := r.second("GET", "/", 1, time.Millisecond, 0)
		if _, ok := e.Observe(snap, r.elapsed()); ok {
			aborted = true
			if i != 4 { // window 2 s: 9 − 2 = 7 > 5 first at the fifth second
				t.Fatalf("aborted at second %d", i+1)
			}
		}
	}
	if !aborted {
		t.Fatal("no abort")
	}
	v := e.Final(r.st.Snapshot())
	if v.Results[0].Passed || v.Results[0].Measured != 12 {
		t.Errorf("whole run: %+v", v.Results[0])
	}
	if v.Results[1].Passed || v.Results[1].Measured != 9 || v.Aborted != 1 { // 12 − 3
		t.Errorf("window: %+v, aborted %d", v.Results[1], v.Aborted)
	}
}

// A stall: p99 over a 5 s window shows it and aborts after the delay,
// while the whole run's p99 is diluted.
func TestWindowAbortAfterDelay(t *testing.T) {
	e, err := New(mustParse(t, "p99<100ms window=5s abort_on_fail delay=12s", "p99<100ms"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRun()
	abortAt := -1
	for s := 1; s <= 30 && abortAt < 0; s++ {
		rt := 10 * time.Millisecond
		if s >= 3 && s <= 4 { // stalled seconds before the delay: no abort
			rt = 500 * time.Millisecond
		}
		if s >= 20 {
			rt = 400 * time.Millisecond
		}
		snap := r.second("GET", "/", 100, rt, 0)
		if res, ok := e.Observe(snap, r.elapsed()); ok {
			abortAt = s
			if res.Measured < 390 || res.Threshold.Window != 5*time.Second {
				t.Fatalf("abort result %+v", res)
			}
		}
	}
	if abortAt != 20 {
		t.Fatalf("aborted at second %d, want 20 (the stall at 3-4 s falls within the 12 s delay)", abortAt)
	}
	v := e.Final(r.st.Snapshot())
	if w := v.Results[0]; w.Passed || w.Measured < 490 || !strings.Contains(w.Note, "worst of") {
		t.Errorf("window verdict %+v: want the worst window (500 ms)", w)
	}
	if whole := v.Results[1]; whole.Passed {
		t.Errorf("whole run %+v", whole)
	}
	if v.Aborted != 0 {
		t.Errorf("Aborted = %d", v.Aborted)
	}
}

func TestWindowRate(t *testing.T) {
	e, err := New(mustParse(t, "rps>=50 window=3s", "rps>=50"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRun()
	for s := 1; s <= 12; s++ {
		n := 100
		if s >= 6 && s <= 8 {
			n = 10 // three slow seconds
		}
		e.Observe(r.second("GET", "/", n, time.Millisecond, 0), r.elapsed())
	}
	v := e.Final(r.st.Snapshot())
	if w := v.Results[0]; w.Passed || !within(w.Measured, 10, 0.01) {
		t.Errorf("window: %+v, want the 3 s at 10/s", w)
	}
	if whole := v.Results[1]; !whole.Passed {
		t.Errorf("whole run: %+v", whole)
	}
}

func TestWindowLongerThanRun(t *testing.T) {
	e, err := New(mustParse(t, "avg<5 window=1m"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRun()
	for s := 0; s < 3; s++ {
		e.Observe(r.second("GET", "/", 10, 2*time.Millisecond, 0), r.elapsed())
	}
	res := e.Final(r.st.Snapshot()).Results[0]
	if !res.Passed || !strings.Contains(res.Note, "whole run") {
		t.Fatalf("%+v", res)
	}
}

func TestWindowAfterReset(t *testing.T) {
	e, err := New(mustParse(t, "fail_ratio<10% window=2s"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRun()
	for s := 0; s < 4; s++ {
		e.Observe(r.second("GET", "/", 10, time.Millisecond, 5), r.elapsed())
	}
	r.st.Reset()
	for s := 0; s < 4; s++ {
		if _, ok := e.Observe(r.second("GET", "/", 10, time.Millisecond, 0), r.elapsed()); ok {
			t.Fatal("no abort_on_fail, but Observe asked to abort")
		}
	}
	// The failing windows before the reset count; those after it pass.
	if res := e.Final(r.st.Snapshot()).Results[0]; res.Passed {
		t.Fatalf("%+v", res)
	}
}

func TestReports(t *testing.T) {
	r := newRun()
	snap := r.second("GET", "/", 10, 20*time.Millisecond, 1)
	e, err := New(mustParse(t, "p99<50ms", "fail_ratio<1%", "avg{/none}<1"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := e.Final(snap)
	var b strings.Builder
	if err := WriteTable(&b, v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p99<50ms", "20.00 ms", "pass", "fail_ratio<0.01", "10.00%", "FAIL", "n/a", "(no request of this name)", "Thresholds: 2 of 3 failed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteCSV(&b, v); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || lines[0] != strings.Join(CSVHeader, ",") || !strings.HasPrefix(lines[2], "fail_ratio<0.01,fail_ratio,,,0,false,0.01,0.1,fail,") {
		t.Errorf("CSV:\n%s", b.String())
	}
	j := v.JSON()
	if j.Passed || j.Aborted || len(j.Thresholds) != 3 || j.Thresholds[2].Measured != nil || *j.Thresholds[0].Measured != 20 {
		t.Errorf("JSON %+v", j)
	}
}

// A Python worker's report carries no exact histogram: a whole-run
// percentile of one entry falls back to Locust's buckets; windows have no
// value (the final verdict then measures the whole run, and says so); a
// name merged over methods has none (and fails at the end).
func TestWithoutExactHistograms(t *testing.T) {
	r := newRun()
	e, err := New(mustParse(t, "p99{GET /}<250", "p99{GET /}<100 window=2s", "p99{/}<250"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 4; s++ {
		for i := 0; i < 10; i++ {
			r.rec.Record("GET", "/", 210*time.Millisecond, 1, "")
			r.rec.Record("POST", "/", 20*time.Millisecond, 1, "")
		}
		r.now = r.now.Add(time.Second)
		rep := r.rec.Report(nil, 1)
		for i := range rep.Stats {
			rep.Stats[i].Exact = nil
		}
		rep.Total.Exact = nil
		r.st.Merge(rep)
		if _, ok := e.Observe(r.st.Snapshot(), r.elapsed()); ok {
			t.Fatal("abort without abort_on_fail")
		}
	}
	v := e.Final(r.st.Snapshot())
	if res := v.Results[0]; !res.HasValue || res.Measured != 210 || !res.Passed || !strings.Contains(res.Note, "bucketed") {
		t.Errorf("whole run: %+v", res)
	}
	if res := v.Results[1]; res.Passed || res.Measured != 210 || !strings.Contains(res.Note, "no window of 2s had a value: measured over the whole run") {
		t.Errorf("window: %+v", res)
	}
	if res := v.Results[2]; res.HasValue || res.Passed || !strings.Contains(res.Note, "no exact histogram") {
		t.Errorf("merged: %+v", res)
	}
}
