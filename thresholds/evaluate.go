package thresholds

import (
	"fmt"
	"math"
	"time"

	"github.com/cicada-load/cicada/stats"
)

// Options configure an Evaluator. The zero value works for every metric
// but Dropped.
type Options struct {
	// Dropped returns the arrival-rate iterations dropped so far in the
	// whole run (all workers) as of a snapshot. Nil: New refuses Dropped
	// thresholds with ErrUnsupported rather than report a count it cannot
	// see. A Dropped threshold with a name reads the snapshot's per-name
	// drops instead (stats.Snapshot.DroppedBy: the first request of the
	// task each dropped iteration would have run), still only when Dropped
	// is set (an arrival-rate test).
	Dropped func(*stats.Snapshot) int64
}

// Result is one threshold's verdict.
type Result struct {
	Threshold Threshold
	// Measured is the value compared with the limit, in the metric's unit;
	// meaningful when HasValue.
	Measured float64
	HasValue bool
	Passed   bool
	// Note explains a missing value or how it was measured ("" usually).
	Note string
}

// Verdict is the outcome of every threshold.
type Verdict struct {
	Results []Result
	// Aborted is the index in Results of the threshold whose
	// abort_on_fail stopped the run, -1 if none did.
	Aborted int
}

// Passed reports whether every threshold passed (true without any).
func (v Verdict) Passed() bool {
	for _, r := range v.Results {
		if !r.Passed {
			return false
		}
	}
	return true
}

// Evaluator evaluates thresholds against the master's merged statistics.
// Observe is called periodically while the test runs (a master calls it
// every second), Final once at the end. Not safe for concurrent use.
type Evaluator struct {
	opts    Options
	ts      []Threshold
	st      []tstate
	aborted int
	live    []Result // the latest Observe's result of each threshold (live.go)
}

// tstate is one threshold's evaluation state.
type tstate struct {
	points  []point // windowed: the points of the last window and the one before it
	windows int     // full windows evaluated
	worst   Result  // windowed: the worst full window (valid when windows > 0)
	empty   int     // windowed: full windows without a value
}

// point is a threshold's cumulative figures at one instant.
type point struct {
	t                 time.Time
	reqs, fails, tmd  int64
	totalRT, totalRPS float64
	dropped           int64
	droppedNamed      bool   // a named Dropped threshold: its name has drops
	exact             []byte // merged encoded exact histogram; valid when exactOK
	exactOK           bool
	entries           int               // entries matched
	one               *stats.EntryStats // the matched entry when entries == 1
}

// New checks the thresholds and returns their evaluator. Errors wrap
// ErrSyntax (a malformed threshold) or ErrUnsupported and name the
// threshold's Source.
func New(ts []Threshold, o Options) (*Evaluator, error) {
	for _, t := range ts {
		if err := t.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Source, err)
		}
		if t.Metric == Dropped && o.Dropped == nil {
			return nil, fmt.Errorf("%s: %s: %w: this run counts no dropped iterations (only arrival-rate load does)", t.Source, t, ErrUnsupported)
		}
	}
	e := &Evaluator{opts: o, ts: append([]Threshold(nil), ts...), st: make([]tstate, len(ts)), aborted: -1}
	e.live = initialLive(e.ts)
	return e, nil
}

// Thresholds returns the thresholds evaluated.
func (e *Evaluator) Thresholds() []Threshold { return append([]Threshold(nil), e.ts...) }

// Observe evaluates every threshold on snap, taken elapsed after the test
// started. It returns the first threshold with abort_on_fail that fails
// now, elapsed ≥ its delay, and ok true: the caller should stop the run.
// A threshold without a value yet (no requests) never aborts. Every
// threshold's result of this observation is kept for Live.
func (e *Evaluator) Observe(snap *stats.Snapshot, elapsed time.Duration) (abort Result, ok bool) {
	for i := range e.ts {
		t := &e.ts[i]
		cur := e.point(t, snap)
		var r Result
		if t.Window > 0 {
			var full bool
			r, full = e.slide(i, cur, elapsed)
			if !full {
				e.live[i] = e.partial(t, &cur)
				continue
			}
		} else {
			r = e.measure(t, &cur, nil, 0)
		}
		e.live[i] = r
		if t.AbortOnFail && !ok && e.aborted < 0 && elapsed >= t.Delay && r.HasValue && !r.Passed {
			abort, ok = r, true
			e.aborted = i
		}
	}
	return abort, ok
}

// slide adds cur to threshold i's window and evaluates the window when
// the test has run for a whole one (full).
func (e *Evaluator) slide(i int, cur point, elapsed time.Duration) (Result, bool) {
	s := &e.st[i]
	t := &e.ts[i]
	if n := len(s.points); n > 0 && cur.reqs < s.points[n-1].reqs {
		s.points = s.points[:0] // the statistics were reset: a new history
	}
	cur.one = nil // not kept
	s.points = append(s.points, cur)
	if elapsed < t.Window {
		return Result{}, false
	}
	// The base is the latest point at least a window old; older ones go.
	from := cur.t.Add(-t.Window)
	b := -1
	for j, p := range s.points {
		if !p.t.After(from) {
			b = j
		}
	}
	if b < 0 {
		return Result{}, false // the history starts within the window (after a reset)
	}
	s.points = append(s.points[:0], s.points[b:]...)
	base := &s.points[0]
	last := &s.points[len(s.points)-1]
	r := e.measure(t, last, base, last.t.Sub(base.t))
	s.windows++
	switch {
	case !r.HasValue:
		s.empty++
	case s.worst.Threshold.Metric == 0 || worse(t, r, s.worst):
		s.worst = r
	}
	return r, true
}

// worse reports whether a is worse than b for t: further on the failing
// side of the limit.
func worse(t *Threshold, a, b Result) bool {
	if !b.HasValue {
		return true
	}
	if t.Op == Less || t.Op == LessEq {
		return a.Measured > b.Measured
	}
	return a.Measured < b.Measured
}

// Final returns the verdict on the final statistics: whole-run thresholds
// on snap, windowed ones from the worst full window Observe saw (the whole
// run when it was shorter than the window).
func (e *Evaluator) Final(snap *stats.Snapshot) Verdict {
	v := Verdict{Results: make([]Result, len(e.ts)), Aborted: e.aborted}
	for i := range e.ts {
		t := &e.ts[i]
		s := &e.st[i]
		cur := e.point(t, snap)
		var r Result
		switch {
		case t.Window == 0:
			r = e.measure(t, &cur, nil, 0)
		case s.windows == 0 || s.worst.Threshold.Metric == 0:
			r = e.measure(t, &cur, nil, 0)
			if s.windows == 0 {
				r.Note = join(r.Note, "run shorter than the window: measured over the whole run")
			} else {
				r.Note = join(r.Note, fmt.Sprintf("no window of %v had a value: measured over the whole run", t.Window))
			}
		default:
			r = s.worst
			r.Note = join(r.Note, fmt.Sprintf("worst of %d windows", s.windows))
		}
		if !r.HasValue {
			r.Passed = false
		}
		v.Results[i] = r
	}
	return v
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// point sums the entries t selects in snap.
func (e *Evaluator) point(t *Threshold, snap *stats.Snapshot) point {
	p := point{t: snap.Time, exactOK: true}
	add := func(es *stats.EntryStats) {
		p.entries++
		p.one = es
		p.reqs += es.NumRequests
		p.fails += es.NumFailures
		p.tmd += es.Timed()
		p.totalRT += es.TotalResponseTime
		p.totalRPS += es.TotalRPS
		if !es.ExactComplete {
			p.exactOK = false
		}
	}
	var sel []*stats.EntryStats
	if t.Name == "" {
		sel = append(sel, &snap.Total)
	} else {
		for i := range snap.Entries {
			es := &snap.Entries[i]
			if es.Name == t.Name && (t.Method == "" || es.Method == t.Method) {
				sel = append(sel, es)
			}
		}
	}
	for _, es := range sel {
		add(es)
	}
	if p.entries != 1 {
		p.one = nil
	}
	if t.Metric == Dropped && e.opts.Dropped != nil {
		if t.Name == "" {
			p.dropped = e.opts.Dropped(snap)
		} else {
			p.dropped, p.droppedNamed = droppedFor(t, snap) // live.go
		}
	}
	if t.Metric == Percentile && p.exactOK && p.entries > 0 {
		if len(sel) == 1 {
			p.exact = sel[0].Exact()
		} else {
			var sum stats.ExactSum
			for _, es := range sel {
				if sum.Add(es.Exact()) != nil {
					p.exactOK = false
				}
			}
			p.exact = sum.Encoded()
		}
	}
	return p
}

// measure evaluates t on cur, or on cur − base over span when base is set.
func (e *Evaluator) measure(t *Threshold, cur, base *point, span time.Duration) Result {
	r := Result{Threshold: *t}
	d := *cur
	if base != nil {
		d.reqs -= base.reqs
		d.fails -= base.fails
		d.tmd -= base.tmd
		d.totalRT -= base.totalRT
		d.dropped -= base.dropped
	}
	if cur.entries == 0 && t.Metric != Dropped {
		r.Note = "no request of this name"
		return r
	}
	if cur.entries == 0 && t.Metric == Dropped && t.Name != "" && !cur.droppedNamed {
		r.Note = "no request or dropped iteration of this name" // a typo fails, as for the other metrics
		return r
	}
	switch t.Metric {
	case FailRatio:
		if d.reqs > 0 {
			r.Measured, r.HasValue = float64(d.fails)/float64(d.reqs), true
		} else {
			r.Note = "no requests"
		}
	case Avg:
		if d.tmd > 0 {
			r.Measured, r.HasValue = d.totalRT/float64(d.tmd), true
		} else {
			r.Note = "no timed requests"
		}
	case RPS:
		r.HasValue = true
		if base == nil {
			r.Measured = cur.totalRPS
		} else if span > 0 {
			r.Measured = float64(d.reqs) / span.Seconds()
		}
	case Dropped:
		r.Measured, r.HasValue = float64(d.dropped), true
	case Percentile:
		r = e.percentile(t, cur, base, r)
	}
	if r.HasValue {
		r.Passed = t.Op.holds(r.Measured, t.Limit)
	}
	return r
}

func (e *Evaluator) percentile(t *Threshold, cur, base *point, r Result) Result {
	if !cur.exactOK || (base != nil && !base.exactOK) {
		if base == nil && cur.one != nil {
			// A Python worker contributed: Locust's bucketed percentile.
			if cur.one.NumRequests > 0 {
				r.Measured, r.HasValue = float64(cur.one.Percentile(t.P)), true
			}
			r.Note = "Locust's bucketed percentile (a worker sent no exact histogram)"
			return r
		}
		r.Note = "no exact histogram (a Python worker contributed)"
		return r
	}
	var sum stats.ExactSum
	if err := sum.Add(cur.exact); err != nil {
		r.Note = "exact histogram unreadable"
		return r
	}
	if base != nil && base.exact != nil {
		if err := sum.Sub(base.exact); err != nil {
			r.Note = "window history inconsistent"
			return r
		}
	}
	v, ok := sum.Percentile(t.P)
	if !ok {
		r.Note = "no timed requests"
		return r
	}
	r.Measured, r.HasValue = float64(v)/float64(time.Millisecond), true
	if math.IsNaN(r.Measured) {
		r.HasValue = false
	}
	return r
}
