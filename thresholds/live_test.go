package thresholds

import (
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/stats"
)

func TestLive(t *testing.T) {
	ts := mustParse(t,
		"p99<50ms", // whole run, no abort: evaluated live too
		"fail_ratio<=1% abort_on_fail delay=1h",
		"avg<50ms window=3s", // fails in the slow seconds, ok once they left the window
		"rps{/missing}>1",    // no request of this name: waiting
	)
	e, err := New(ts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range e.Live() {
		if r.LiveState() != LiveWaiting || r.Note != notEvaluated {
			t.Fatalf("before Observe: %+v", r)
		}
	}
	r := newRun()
	type want struct {
		state string
		note  string // substring
	}
	steps := []struct {
		rt    time.Duration
		fails int
		want  [4]want
	}{
		{10 * time.Millisecond, 0, [4]want{{LiveOK, ""}, {LiveOK, ""}, {LiveOK, "window of 3s not yet full"}, {LiveWaiting, "no request of this name"}}},
		{200 * time.Millisecond, 0, [4]want{{LiveFailing, ""}, {LiveOK, ""}, {LiveFailing, "window of 3s not yet full"}, {LiveWaiting, ""}}},
		{10 * time.Millisecond, 5, [4]want{{LiveFailing, ""}, {LiveFailing, ""}, {LiveFailing, "window of 3s not yet full"}, {LiveWaiting, ""}}},
		// The first full window: seconds 2-4, (200+10+10)/3 ms.
		{10 * time.Millisecond, 0, [4]want{{LiveFailing, ""}, {LiveFailing, ""}, {LiveFailing, ""}, {LiveWaiting, ""}}},
		// Seconds 3-5: the slow second left the window; 5 failures of 500 requests.
		{10 * time.Millisecond, 0, [4]want{{LiveFailing, ""}, {LiveOK, ""}, {LiveOK, ""}, {LiveWaiting, ""}}},
	}
	for i, s := range steps {
		snap := r.second("GET", "/a", 100, s.rt, s.fails)
		if _, abort := e.Observe(snap, r.elapsed()); abort {
			t.Fatalf("step %d: abort before the delay", i)
		}
		live := e.Live()
		for j, w := range s.want {
			got := live[j]
			if got.LiveState() != w.state || !strings.Contains(got.Note, w.note) {
				t.Errorf("step %d, %s: state %s (%s, note %q); want %s, note with %q", i, ts[j], got.LiveState(), got.MeasuredString(), got.Note, w.state, w.note)
			}
			if w.note == "" && strings.Contains(got.Note, "not yet full") {
				t.Errorf("step %d, %s: note %q after the first window", i, ts[j], got.Note)
			}
		}
	}
	// Live is the current state; Final keeps the windowed threshold's worst window.
	v := e.Final(r.st.Snapshot())
	if v.Results[2].Passed {
		t.Errorf("final avg window=3s passed: %+v; want its worst window (73.33 ms)", v.Results[2])
	}
	// A copy: the caller cannot change the evaluator's state.
	l := e.Live()
	l[0].Passed = true
	if e.Live()[0].Passed {
		t.Error("Live returned the evaluator's own slice")
	}
}

func TestWriteLive(t *testing.T) {
	ts := mustParse(t, "p99<500ms", "fail_ratio<=1%", "p99.9{GET /slow}<1s window=10s")
	rs := []Result{
		{Threshold: ts[0], Measured: 12.4, HasValue: true, Passed: true},
		{Threshold: ts[1], Measured: 0.032, HasValue: true},
		{Threshold: ts[2], Note: "no request of this name"},
	}
	var b strings.Builder
	if err := WriteLive(&b, rs); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"Thresholds (live)                           Current   State\n" +
		"p99<500ms                                  12.40 ms   ok\n" +
		"fail_ratio<=0.01                              3.20%   FAILING\n" +
		"p99.9{GET /slow}<1000ms window=10s              n/a   waiting (no request of this name)\n" +
		"\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteLive(&b, nil); err != nil || b.Len() != 0 {
		t.Errorf("no thresholds: %q, %v", b.String(), err)
	}
}

// TestDroppedByName: a dropped threshold with a name reads the per-name
// drops (every method, or one), also for a name without requests.
func TestDroppedByName(t *testing.T) {
	rec := stats.NewRecorder(nil)
	rec.Record("GET", "/a", time.Millisecond, 1, "")
	rec.Record("GET", "/c", time.Millisecond, 1, "") // requests, no drop
	rec.AddDroppedFor("GET", "/a", 4)
	rec.AddDroppedFor("POST", "/a", 3)
	rec.AddDroppedFor("TASK", "think", 2)
	s := stats.New(nil)
	s.Merge(rec.Report(nil, 1))
	snap := s.Snapshot()
	ts := mustParse(t, "dropped{/a}<=6", "dropped{GET /a}<=6", "dropped{think}<1", "dropped{/c}<=0", "dropped<=9", "dropped{/typo}<=0")
	e, err := New(ts, Options{Dropped: func(s *stats.Snapshot) int64 { return s.Total.Dropped }})
	if err != nil {
		t.Fatal(err)
	}
	v := e.Final(snap)
	for i, want := range []struct {
		measured float64
		passed   bool
	}{{7, false}, {4, true}, {2, false}, {0, true}, {9, true}} {
		r := v.Results[i]
		if !r.HasValue || r.Measured != want.measured || r.Passed != want.passed {
			t.Errorf("%s: %+v; want measured %v, passed %v", ts[i], r, want.measured, want.passed)
		}
	}
	// A name with neither requests nor drops is a typo: no value, failed.
	if r := v.Results[5]; r.HasValue || r.Passed || r.Note != "no request or dropped iteration of this name" {
		t.Errorf("%s: %+v; want no value, failed", ts[5], r)
	}
}
