package master

import (
	"io"

	"github.com/cicada-load/cicada/thresholds"
)

// The thresholds' live state (thresholds.Evaluator.Live): published by
// the watcher after each observation, printed under the periodic console
// table and served to the dashboard (LiveThresholds, the web API's
// GET /thresholds/live).

// publishLive stores the evaluator's live results. Precondition: w.mu
// held (the evaluator is not safe for concurrent use).
func (w *thresholdWatch) publishLive() {
	live := w.eval.Live()
	w.live.Store(&live)
}

// liveResults returns the latest live results (nil without thresholds).
// Shared: callers must not modify them.
func (w *thresholdWatch) liveResults() []thresholds.Result {
	if p := w.live.Load(); p != nil {
		return *p
	}
	return nil
}

// LiveThresholds returns every threshold's current state, in declaration
// order (nil without thresholds): whole-run thresholds on the statistics
// of the latest evaluation (every Options.ThresholdInterval while a test
// spawns or runs), windowed ones on their latest window; see
// thresholds.Evaluator.Live. Safe for concurrent use; the result is the
// caller's.
func (m *Master) LiveThresholds() []thresholds.Result {
	return append([]thresholds.Result(nil), m.thr.liveResults()...)
}

// writeLiveThresholds prints the live states under the periodic table.
func writeLiveThresholds(w io.Writer, rs []thresholds.Result) {
	_ = thresholds.WriteLive(w, rs)
}
