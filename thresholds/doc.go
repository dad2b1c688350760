// Package thresholds declares pass/fail criteria for a run and evaluates
// them on a cicada master's merged statistics (package stats), live and
// at the end.
//
// A Threshold compares one metric of the requests it selects with a limit:
// the failure ratio, any percentile of the response times (p99, p99.9), the
// average response time, the request rate, or the arrival-rate iterations
// dropped. It selects every request (Locust's Aggregated row), one request
// name (every method of it, merged), or one method and name (for dropped:
// the drops the workers attributed to that name, stats.Snapshot.DroppedBy;
// a name with neither requests nor drops has no value, as a typo would).
// Thresholds
// come from the command line (Parse: "p99<500ms", "fail_ratio<=1%",
// "avg{GET /api}<200 window=30s abort_on_fail delay=10s") or from a
// scenario file's thresholds: list (package scenario builds the same
// values).
//
// Evaluation. Percentiles come from the exact histograms (stats.ExactSum:
// within stats.ExactRelativeError); when a Python worker contributed to an
// entry its exact histogram is incomplete, and a whole-run percentile of one
// entry falls back to Locust's bucketed one (the Result's Note says so),
// a name merged over several methods reports no value, and so does a
// window (a windowed threshold that never had a value is measured over the
// whole run at the end, with a note). Avg, fail_ratio and rps use Locust's
// figures (avg_response_time, fail_ratio, total_rps).
//
// Windows. A threshold with a Window is evaluated at every Observe over
// the last Window of the run: the Evaluator keeps, per windowed threshold,
// the cumulative figures of each observation (a point, with the merged
// exact histogram for a percentile) back to one window ago, and measures
// the difference between the newest point and the latest one at least a
// window old (the exact histograms subtract bucket by bucket). This keeps
// one point per observation per windowed threshold (a few KB at most for
// a percentile, MaxWindow bounds the window), rather than per-interval
// histograms in package stats for every entry. Windows are evaluated once
// the test has run a whole window; the final verdict of a windowed
// threshold is its worst full window (the whole run when the run was
// shorter than the window). A reset of the statistics starts the history
// again.
//
// Verdicts. Final gives one Result per threshold. A threshold without a
// value at the end (no requests, or no request of its name) fails: a run
// that measured nothing does not pass a CI gate. A window without a value
// (no response within it) is skipped. Live, only thresholds with
// AbortOnFail are evaluated for a whole run, and a threshold without a
// value never aborts. Abort waits for Delay after the test started
// (k6's delayAbortEval).
//
// Live state. Live returns every threshold's result at the latest Observe
// (whole-run thresholds on that snapshot, windowed ones on their latest
// window, or the run so far before the first full window): the current
// state for the console and the dashboard (ok, FAILING, or waiting without
// a value), not the verdict, which Final gives.
//
// Differences from k6: the grammar is cicada's (k6 writes
// "p(99)<500", which Parse accepts too, and selects requests with tags);
// thresholds are evaluated across a whole cluster on the master's merged
// histograms, where k6 evaluates per instance; sliding windows are
// cicada's own. Locust has no thresholds.
package thresholds
