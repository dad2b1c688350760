package capacity

import "fmt"

// stopped records a search that ended on err before its verdict: Max is
// the highest load that passed so far, FailedAt the lowest failed one, and
// nothing is Found: the report says the search stopped rather than "no
// load passed" after loads that did.
func (r *Result) stopped(err error) {
	r.Stopped = err.Error()
	r.Max, r.FailedAt, r.Found, r.Ceiling = 0, 0, false, false
	for _, t := range r.Trials {
		switch {
		case t.Verdict == Pass && t.Load > r.Max:
			r.Max = t.Load
		case t.Verdict == Fail && (r.FailedAt == 0 || t.Load < r.FailedAt):
			r.FailedAt = t.Load
		}
	}
}

func (r *Result) stoppedSummary(unit string) string {
	if r.Max > 0 {
		return fmt.Sprintf("STOPPED before the search ended (%s); the device sustained %.6g %s, its maximum is at least that, not found", r.Stopped, r.Max, unit)
	}
	return fmt.Sprintf("STOPPED before any load passed (%s); no maximum found", r.Stopped)
}
