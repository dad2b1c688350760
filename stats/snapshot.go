package stats

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/internal/pyrepr"
	"github.com/cicada-load/cicada/protocol"
)

// PercentilesToReport are Locust's PERCENTILES_TO_REPORT, the percentiles of
// the console percentile table and of every CSV file.
var PercentilesToReport = []float64{0.50, 0.66, 0.75, 0.80, 0.90, 0.95, 0.98, 0.99, 0.999, 0.9999, 1.0}

// Snapshot is an immutable view of the master's statistics at one instant,
// safe to share between goroutines. Entries are sorted by (name, method) as
// Locust sorts them; Errors keep insertion order (the console error report's
// order) and Exceptions too.
type Snapshot struct {
	// Time is when the snapshot was taken, by the Stats clock; "current"
	// percentiles are computed for this instant.
	Time       time.Time
	Entries    []EntryStats
	Total      EntryStats
	Errors     []ErrorStats
	Exceptions []ExceptionStats
	// MalformedExact counts exact histograms that failed to decode since
	// the statistics were created (the entries they came with are then not
	// exact-complete).
	MalformedExact int64
	// MalformedPhases counts phase timings that failed to decode since the
	// stats were created (they are ignored).
	MalformedPhases int64
	// DroppedBy are the arrival-rate iterations dropped per request name
	// they are attributed to (droppedby.go), sorted by name then method,
	// nil when none; a name may have no entry.
	DroppedBy []protocol.DroppedName
}

// EntryStats is one entry of a Snapshot (or the Aggregated total) with
// Locust's raw fields and derived figures.
type EntryStats struct {
	Name, Method string
	// MethodNil is true for the Aggregated entry before the first Clear,
	// where Locust's method is None (null in JSON).
	MethodNil          bool
	NumRequests        int64
	NumNoneRequests    int64
	NumFailures        int64
	TotalResponseTime  float64 // ms
	MinResponseTime    *float64
	MaxResponseTime    float64
	TotalContentLength int64
	StartTime          float64
	// LastRequestTimestamp is nil when no request was recorded.
	LastRequestTimestamp *float64

	// CurrentRPS and CurrentFailPerSec are Locust's sliding-window rates
	// (Locust 2.12.1 locust/stats.py, StatsEntry.current_rps and
	// current_fail_per_sec); TotalRPS and TotalFailPerSec the rates over the
	// whole run (total_rps, total_fail_per_sec). All use the Aggregated
	// entry's timestamps.
	CurrentRPS, CurrentFailPerSec float64
	TotalRPS, TotalFailPerSec     float64

	// ExactComplete is true when every merged report with timed samples for
	// this entry carried an exact histogram (always true for cicada
	// workers, false as soon as a Python worker contributed).
	ExactComplete bool

	// Phases are the entry's per-phase timings (DNS, connect, TLS, time
	// to first byte, body; PhaseNames) from cicada workers, nil if none.
	Phases *PhaseStats

	// Dropped counts the arrival-rate iterations that could not start
	// because every user of their worker was busy (issue 13), summed over
	// the workers' reports since Clear or Reset: on Snapshot.Total all of
	// them, on an entry those attributed to its method and name
	// (droppedby.go; Snapshot.DroppedBy also lists names without an
	// entry). Locust has no such figure.
	Dropped int64

	buckets []bucket     // ascending
	current *currentBase // base for the current percentiles, nil if none
	exact   []byte       // encoded
}

// snapScratch holds reusable buffers for Snapshot.
type snapScratch struct {
	buckets []bucket
	exact   []byte
}

// currentBase is the cached histogram the current percentiles diff against.
type currentBase struct {
	buckets     []bucket
	numRequests int64
}

// ErrorStats is one row of the errors table.
type ErrorStats struct {
	// Key is Locust's error key (hex SHA-256), as the worker sent it.
	Key          string
	Method, Name string
	// Error is the text as the worker sent it: the masked repr of the
	// exception, e.g. HTTPError('404 Client Error: ...').
	Error       string
	Occurrences int64
	// FirstSeen and LastSeen are unix times, nil unless the workers sent
	// them (cicada, Locust ≥ 2.44).
	FirstSeen, LastSeen *float64
}

// ExceptionStats is one row of the exceptions table.
type ExceptionStats struct {
	Count     int64
	Msg       string
	Traceback string
	Nodes     []string
}

// Snapshot returns an immutable view of the statistics.
func (s *Stats) Snapshot() *Snapshot {
	t := s.now()
	nowSec := int64(pyTime(t))
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := &Snapshot{Time: t, MalformedExact: s.mu.malformedExact, MalformedPhases: s.mu.malformedPhases}
	tot := s.mu.total
	snap.Entries = make([]EntryStats, 0, len(s.mu.entries))
	for _, e := range s.mu.entries {
		snap.Entries = append(snap.Entries, e.snapshot(tot, nowSec, &s.mu.snapScratch))
	}
	slices.SortFunc(snap.Entries, func(a, b EntryStats) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Method, b.Method)
	})
	snap.Total = tot.snapshot(tot, nowSec, &s.mu.snapScratch)
	snap.Total.Dropped = s.mu.dropped
	s.snapshotDroppedLocked(snap)
	snap.Errors = make([]ErrorStats, 0, len(s.mu.errOrder))
	for _, e := range s.mu.errOrder {
		snap.Errors = append(snap.Errors, ErrorStats{
			Key: e.key, Method: e.method, Name: e.name, Error: e.text,
			Occurrences: e.occurrences, FirstSeen: copyPtr(e.firstSeen), LastSeen: copyPtr(e.lastSeen),
		})
	}
	snap.Exceptions = make([]ExceptionStats, 0, len(s.mu.excOrder))
	for _, x := range s.mu.excOrder {
		snap.Exceptions = append(snap.Exceptions, ExceptionStats{
			Count: x.count, Msg: x.msg, Traceback: x.tb, Nodes: slices.Clone(x.nodes),
		})
	}
	return snap
}

func copyPtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// snapshot copies e; tot is the Aggregated entry whose timestamps drive
// the rates, now the current unix second, scratch a reusable buffer. The
// exact histogram is copied only when complete (it is unused otherwise).
func (e *mentry) snapshot(tot *mentry, now int64, scratch *snapScratch) EntryStats {
	es := EntryStats{
		Name: e.name, Method: e.method, MethodNil: e.methodNil,
		NumRequests: e.numRequests, NumNoneRequests: e.numNone, NumFailures: e.numFailures,
		TotalResponseTime: e.totalRT, MaxResponseTime: e.maxRT,
		TotalContentLength: e.contentLength, StartTime: e.start,
		ExactComplete: e.exactComplete,
		Phases:        e.phaseSnapshot(),
	}
	sb := e.rt.appendBuckets(scratch.buckets[:0])
	es.buckets = slices.Clone(sb)
	scratch.buckets = sb
	if e.exactComplete {
		scratch.exact = e.exact.appendEncoded(scratch.exact[:0])
		es.exact = slices.Clone(scratch.exact)
	}
	if e.hasMin {
		es.MinResponseTime = copyPtr(&e.minRT)
	}
	if e.hasLast {
		es.LastRequestTimestamp = copyPtr(&e.lastReq)
	}
	// Current rates: Locust's StatsEntry.current_rps / current_fail_per_sec.
	if tot.hasLast {
		last := int64(tot.lastReq)
		from := max(last-12, int64(tot.start))
		to := last - 2
		var reqs, fails int64
		for t := from; t < to; t++ {
			r, f := e.secs.get(t)
			reqs = addSat(reqs, r)
			fails = addSat(fails, f)
		}
		n := float64(max(to-from, 1))
		es.CurrentRPS = float64(reqs) / n
		es.CurrentFailPerSec = float64(fails) / n
	}
	// Total rates: Locust's total_rps / total_fail_per_sec.
	// A last request before the start (only from a broken worker) gives no
	// rate rather than a negative one.
	if tot.hasLast && tot.lastReq != 0 && tot.start != 0 && tot.lastReq > tot.start {
		d := tot.lastReq - tot.start
		es.TotalRPS = float64(e.numRequests) / d
		es.TotalFailPerSec = float64(e.numFailures) / d
	}
	// The cached histogram closest to ten seconds ago (t-10, t-11, t-9, ...
	// t-18, t-2), Locust's get_current_response_time_percentile.
	for i := 0; i <= 8 && es.current == nil; i++ {
		for _, ts := range [2]int64{now - 10 - int64(i), now - 10 + int64(i)} {
			if c := e.findCache(ts); c != nil {
				es.current = c
				break
			}
			if i == 0 {
				break
			}
		}
	}
	return es
}

func (e *mentry) findCache(t int64) *currentBase {
	for i := range e.cache {
		if e.cache[i].sec == t {
			return &currentBase{unpackBuckets(e.cache[i].packed), e.cache[i].numRequests}
		}
	}
	return nil
}

// Timed returns the number of requests with a response time (0 if a
// broken worker reported more None-time requests than requests).
func (e *EntryStats) Timed() int64 { return max(e.NumRequests-e.NumNoneRequests, 0) }

// AvgResponseTime is Locust's avg_response_time: total / timed requests, 0
// without any.
func (e *EntryStats) AvgResponseTime() float64 {
	if e.Timed() == 0 {
		return 0
	}
	return e.TotalResponseTime / float64(e.Timed())
}

// FailRatio is Locust's fail_ratio.
func (e *EntryStats) FailRatio() float64 {
	if e.NumRequests == 0 {
		if e.NumFailures > 0 {
			return 1
		}
		return 0
	}
	return float64(e.NumFailures) / float64(e.NumRequests)
}

// AvgContentLength is Locust's avg_content_length (0 without requests).
func (e *EntryStats) AvgContentLength() float64 {
	if e.NumRequests == 0 {
		return 0
	}
	return float64(e.TotalContentLength) / float64(e.NumRequests)
}

// ResponseTimes returns a copy of Locust's bucketed histogram.
func (e *EntryStats) ResponseTimes() map[int64]int64 {
	m := make(map[int64]int64, len(e.buckets))
	for _, b := range e.buckets {
		m[b.Key] = b.Count
	}
	return m
}

// Median is Locust's median_response_time: the bucket holding the
// (timed−1)/2-th sample walking up from the smallest, clamped to the exact
// minimum and maximum; 0 without samples.
func (e *EntryStats) Median() float64 {
	v, _ := e.median()
	return v
}

// MedianRepr is Median as Locust's CSV files print it: a bucket key below
// 100 is a Python int ("3"), a larger bucket key a float ("150.0", since a
// 2.12.1 worker or standalone Locust files float samples under float keys),
// a clamped value the exact minimum or maximum (Python float repr; a zero
// maximum is the int 0).
func (e *EntryStats) MedianRepr() string {
	v, isFloat := e.median()
	if !isFloat {
		return strconv.FormatInt(int64(v), 10)
	}
	return pyrepr.Float(v)
}

func (e *EntryStats) median() (float64, bool) {
	if len(e.buckets) == 0 {
		return 0, false
	}
	pos := float64(e.Timed()-1) / 2
	k := e.buckets[len(e.buckets)-1].Key
	for _, b := range e.buckets {
		if pos < float64(b.Count) {
			k = b.Key
			break
		}
		pos -= float64(b.Count)
	}
	m, isFloat := float64(k), k >= 100
	if m > e.MaxResponseTime {
		return e.MaxResponseTime, e.MaxResponseTime != 0
	} else if e.MinResponseTime != nil && m < *e.MinResponseTime {
		return *e.MinResponseTime, true
	}
	return m, isFloat
}

// Percentile is Locust 2.12.1's get_response_time_percentile(p), p in 0..1:
// with n = NumRequests (None-time requests included, as 2.12.1 does), the
// first bucket walking down from the largest after which at most int(n·p)
// requests remain; 0 if none. Not clamped to the maximum.
func (e *EntryStats) Percentile(p float64) int64 {
	return percentile(e.buckets, e.NumRequests, p, nil)
}

// CurrentPercentile is Locust's get_current_response_time_percentile(p):
// the percentile of the requests since the cached histogram closest to ten
// seconds before the snapshot (2 to 18 seconds old); ok is false where
// Locust returns None.
func (e *EntryStats) CurrentPercentile(p float64) (v int64, ok bool) {
	if e.current == nil {
		return 0, false
	}
	return percentile(e.buckets, e.NumRequests-e.current.numRequests, p, e.current.buckets), true
}

// percentile walks buckets minus base (both ascending) from the top.
func percentile(buckets []bucket, n int64, p float64, base []bucket) int64 {
	k := pyTrunc(float64(n) * p)
	var processed int64
	j := len(base) - 1
	for i := len(buckets) - 1; i >= 0; i-- {
		b := buckets[i]
		for j >= 0 && base[j].Key > b.Key {
			j--
		}
		c := b.Count
		if j >= 0 && base[j].Key == b.Key {
			c -= base[j].Count
		}
		if c == 0 {
			continue
		}
		processed = addSat(processed, c)
		if n-processed <= k {
			return b.Key
		}
	}
	return 0
}

// ExactPercentile returns the nearest-rank percentile p (0..1) of the timed
// samples from the exact histogram, in milliseconds, within
// ExactRelativeError and ExactAbsoluteError of the true sample. ok is false
// when the entry is not ExactComplete or has no timed samples.
func (e *EntryStats) ExactPercentile(p float64) (ms float64, ok bool) {
	if !e.ExactComplete {
		return 0, false
	}
	v, err := parseExact(e.exact)
	if err != nil {
		return 0, false
	}
	us, ok := v.percentile(p)
	return us / 1000, ok
}

// Exact returns the entry's exact histogram in its wire encoding (see
// DecodeExact); it is meaningful only when ExactComplete.
func (e *EntryStats) Exact() []byte { return slices.Clone(e.exact) }

// ExactComplete reports whether every entry and the total are exact-complete,
// which is when a cicada master shows exact percentiles.
func (s *Snapshot) ExactComplete() bool {
	if !s.Total.ExactComplete {
		return false
	}
	for i := range s.Entries {
		if !s.Entries[i].ExactComplete {
			return false
		}
	}
	return true
}

// ErrorsByKey returns the errors sorted by key, the order of Locust's
// failures CSV (the web UI lists them in insertion order, as Errors).
func (s *Snapshot) ErrorsByKey() []ErrorStats {
	out := slices.Clone(s.Errors)
	slices.SortFunc(out, func(a, b ErrorStats) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// ReadablePercentile is Locust's label for a percentile: "50%", "99.9%".
func ReadablePercentile(p float64) string {
	x := p * 100
	if x == math.Trunc(x) && !math.IsInf(x, 0) {
		return strconv.FormatInt(int64(x), 10) + "%"
	}
	// round(100*p, 6): correctly rounded to 6 decimals, then repr.
	r, _ := strconv.ParseFloat(strconv.FormatFloat(100*p, 'f', 6, 64), 64)
	return pyrepr.Float(r) + "%"
}
