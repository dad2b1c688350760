package thresholds

import (
	"fmt"
	"io"
	"strings"

	"github.com/cicada-load/cicada/stats"
)

// Live state (issue 13's leftovers): what each threshold measures now,
// for the console's periodic output and the dashboard.
//
// Contract. Live returns, for every threshold in declaration order, its
// result at the latest Observe: a whole-run threshold on the statistics
// of that moment (also those without abort_on_fail, which Observe does
// not act on), a windowed one on its latest full window, or, before the
// test has run a whole window, on the run so far (its Note says so). It
// is the current state, not the verdict: a windowed threshold that failed
// in an earlier window and passes now is "ok" live and still fails at
// the end (Final takes the worst window). Before the first Observe every
// result has no value and the Note "not evaluated yet". A result without
// a value (no requests yet) is "waiting", never failing: Final fails it
// only when the run ends without one.

// Live states, as LiveState returns them.
const (
	LiveOK      = "ok"
	LiveFailing = "FAILING"
	LiveWaiting = "waiting"
)

// notEvaluated is the Note of a threshold before the first Observe.
const notEvaluated = "not evaluated yet"

func initialLive(ts []Threshold) []Result {
	out := make([]Result, len(ts))
	for i, t := range ts {
		out[i] = Result{Threshold: t, Note: notEvaluated}
	}
	return out
}

// Live returns a copy of every threshold's latest result (see the
// contract above).
func (e *Evaluator) Live() []Result { return append([]Result(nil), e.live...) }

// partial measures a windowed threshold whose first window is not over
// yet on the run so far.
func (e *Evaluator) partial(t *Threshold, cur *point) Result {
	r := e.measure(t, cur, nil, 0)
	r.Note = join(r.Note, fmt.Sprintf("window of %v not yet full: the run so far", t.Window))
	return r
}

// droppedFor sums the per-name drops t selects: its name, every method
// or its method; found tells whether any was counted. A name may have
// drops and no request.
func droppedFor(t *Threshold, snap *stats.Snapshot) (n int64, found bool) {
	for _, d := range snap.DroppedBy {
		if d.Name == t.Name && (t.Method == "" || d.Method == t.Method) {
			n += d.Count
			found = true
		}
	}
	return n, found
}

// LiveState is the result's live state: LiveOK, LiveFailing (with a
// value beyond the limit) or LiveWaiting (no value yet).
func (r Result) LiveState() string {
	switch {
	case !r.HasValue:
		return LiveWaiting
	case r.Passed:
		return LiveOK
	}
	return LiveFailing
}

// WriteLive writes the live states as the lines the console prints under
// its periodic table, nothing for no thresholds:
//
//	Thresholds (live)                  Current   State
//	p99<500ms                         12.40 ms   ok
//	fail_ratio<=1%                       3.20%   FAILING
//	p99.9{GET /slow}<1s window=10s         n/a   waiting (no request of this name)
//
// A note follows the state in parentheses. Long thresholds are not cut
// (the console's table does not cut names either); the first column is
// as wide as the longest, at most 80.
func WriteLive(w io.Writer, rs []Result) error {
	if len(rs) == 0 {
		return nil
	}
	width := len("Thresholds (live)")
	for _, r := range rs {
		width = max(width, len(r.Threshold.String()))
	}
	width = min(width, 80)
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s %16s   %s\n", width, "Thresholds (live)", "Current", "State")
	for _, r := range rs {
		fmt.Fprintf(&b, "%-*s %16s   %s", width, r.Threshold.String(), r.MeasuredString(), r.LiveState())
		if r.Note != "" {
			fmt.Fprintf(&b, " (%s)", r.Note)
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("thresholds: live: %w", err)
	}
	return nil
}
