package web

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// HistoryPoint is one sample of the chart history (Locust keeps the same
// values every 5 s: Locust 2.12.1 locust/stats.py, stats_history and
// HISTORY_STATS_INTERVAL_SEC). Percentiles are NaN when Locust's current
// percentile is None.
type HistoryPoint struct {
	Time              time.Time
	UserCount         int
	CurrentRPS        float64
	CurrentFailPerSec float64
	// P50 and P95 are the current (about 10 s window) response-time
	// percentiles in ms, PERCENTILES_TO_CHART of Locust.
	P50, P95 float64
	// AvgResponseTime is the cumulative average response time in ms.
	AvgResponseTime float64
	// Workers is the number of connected workers (master only).
	Workers int
	// Conn sums the connection counters of the workers that report them
	// (cicada workers); nil when none does.
	Conn *HistoryConn
}

// HistoryConn is the connection part of a HistoryPoint.
type HistoryConn struct {
	// Open and Established are summed over workers.
	Open, Established int64
	// NewPerSec is the summed connect rate (ConnStats.ConnectsPerSec).
	NewPerSec float64
	// ErrorsPerSec is the rate of connection errors since the previous
	// sample, keyed "<kind> (<side>)" for failed requests on open
	// connections and "connect <kind> (<side>)" for failed connects, side
	// being "generator" (the load generator's own fault) or "target".
	// Kinds without new errors are left out.
	ErrorsPerSec map[string]float64
	// ByWorker holds each worker's open and established connections, for
	// the charts' per-worker hover; at most MaxHistoryWorkers workers (the
	// first by id).
	ByWorker map[string][2]int64
}

// MaxHistoryWorkers bounds HistoryConn.ByWorker, so that the history of a
// test with hundreds of workers stays small.
const MaxHistoryWorkers = 32

// connErrorTotals returns the workers' cumulative connection errors keyed
// as HistoryConn.ErrorsPerSec.
func connErrorTotals(workers []WorkerInfo) map[string]int64 {
	out := make(map[string]int64)
	for i := range workers {
		c := workers[i].Conn
		if c == nil {
			continue
		}
		side := func(kind string) string {
			if c.GeneratorSide != nil && c.GeneratorSide(kind) {
				return "generator"
			}
			return "target"
		}
		for k, n := range c.ConnectErrors {
			out["connect "+k+" ("+side(k)+")"] += n
		}
		for k, n := range c.Errors {
			out[k+" ("+side(k)+")"] += n
		}
	}
	return out
}

// historyConn builds the connection part of a point from the workers'
// counters; prev and prevTime are the error totals of the previous
// sample. It returns nil when no worker reports connections.
func historyConn(workers []WorkerInfo, prev map[string]int64, prevTime, now time.Time) (*HistoryConn, map[string]int64) {
	var hc *HistoryConn
	for i := range workers {
		w := &workers[i]
		if w.Conn == nil {
			continue
		}
		if hc == nil {
			hc = &HistoryConn{ByWorker: make(map[string][2]int64)}
		}
		hc.Open += w.Conn.Open
		hc.Established += w.Conn.Established
		hc.NewPerSec += w.Conn.ConnectsPerSec
		if len(hc.ByWorker) < MaxHistoryWorkers {
			hc.ByWorker[w.ID] = [2]int64{w.Conn.Open, w.Conn.Established}
		}
	}
	if hc == nil {
		return nil, nil
	}
	totals := connErrorTotals(workers)
	if dt := now.Sub(prevTime).Seconds(); prev != nil && dt > 0 {
		for k, n := range totals {
			if d := n - prev[k]; d > 0 {
				if hc.ErrorsPerSec == nil {
					hc.ErrorsPerSec = make(map[string]float64)
				}
				hc.ErrorsPerSec[k] = float64(d) / dt
			}
		}
	}
	return hc, totals
}

// History is a bounded series of HistoryPoints. When it holds max points it
// drops every second point and doubles its stride (it then keeps one sample
// in 2, 4, ... ticks), so a long test keeps its whole span. A History is safe
// for concurrent use.
type History struct {
	mu struct {
		sync.Mutex
		points    []HistoryPoint
		stride    int // keep one tick in stride
		tick      int
		startTime time.Time        // Status.StartTime of the test being sampled
		version   uint64           // incremented on Clear
		classes   map[string]int64 // last non-empty Status.UserClassesCount
		errTotals map[string]int64 // connection errors at the last sample (connErrorTotals)
		errTime   time.Time        // when errTotals was taken
	}
	max int
}

// NewHistory returns an empty History that keeps at most max points (at
// least 2).
func NewHistory(max int) *History {
	if max < 2 {
		max = 2
	}
	h := &History{max: max}
	h.mu.stride = 1
	return h
}

// Points returns a copy of the points, oldest first.
func (h *History) Points() []HistoryPoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HistoryPoint(nil), h.mu.points...)
}

// pointsVersion returns a copy of the points and the version, which
// changes whenever earlier points are removed (Clear or compaction).
func (h *History) pointsVersion() ([]HistoryPoint, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HistoryPoint(nil), h.mu.points...), h.mu.version
}

// LastUserClassesCount returns the last non-empty Status.UserClassesCount
// seen by Sample (nil if none): the user counts of the moment the test
// stopped, which the report's final task ratios use, as Locust's do.
func (h *History) LastUserClassesCount() map[string]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.mu.classes)
}

// Clear empties the history, as Locust does when a new test starts or
// statistics are reset.
func (h *History) Clear() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clearLocked()
}

// clearLocked empties the history. Precondition: h.mu is held.
func (h *History) clearLocked() {
	h.mu.points = h.mu.points[:0]
	h.mu.stride = 1
	h.mu.tick = 0
	h.mu.version++
}

// Add appends p, compacting when full. It does not apply the stride.
func (h *History) Add(p HistoryPoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addLocked(p)
}

// addLocked appends p. Precondition: h.mu is held.
func (h *History) addLocked(p HistoryPoint) {
	if len(h.mu.points) >= h.max {
		kept := h.mu.points[:0]
		for i := 0; i < len(h.mu.points); i += 2 {
			kept = append(kept, h.mu.points[i])
		}
		h.mu.points = kept
		h.mu.stride *= 2
		h.mu.version++
	}
	h.mu.points = append(h.mu.points, p)
}

// Sample records one tick: while the runner is neither ready nor stopped
// (Locust HEAD's rule) it appends a point every stride ticks. A new
// Status.StartTime means a new test and clears the history first.
func (h *History) Sample(st Status, src StatsSource, now time.Time) {
	var p HistoryPoint
	active := st.State != protocol.StateReady && st.State != protocol.StateStopped && st.State != protocol.StateMissing
	if active {
		p = historyPoint(st, src, now)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !st.StartTime.IsZero() && !st.StartTime.Equal(h.mu.startTime) {
		h.mu.startTime = st.StartTime
		h.clearLocked()
	}
	var sum int64
	for _, n := range st.UserClassesCount {
		sum += n
	}
	if sum > 0 {
		h.mu.classes = maps.Clone(st.UserClassesCount)
	}
	if !active {
		h.mu.errTotals = nil
		return
	}
	p.Conn, h.mu.errTotals = historyConn(st.Workers, h.mu.errTotals, h.mu.errTime, now)
	h.mu.errTime = now
	h.mu.tick++
	if (h.mu.tick-1)%h.mu.stride != 0 {
		return
	}
	h.addLocked(p)
}

// Run samples runner every interval until ctx is done.
func (h *History) Run(ctx context.Context, runner Runner, interval time.Duration, now func() time.Time) {
	t := time.NewTicker(interval)
	defer t.Stop()
	h.Sample(runner.Status(), runner, now())
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.Sample(runner.Status(), runner, now())
		}
	}
}

// writeOptFloat writes v, or null for Locust's None (NaN here).
func writeOptFloat(w *jsonWriter, v float64) {
	if math.IsNaN(v) {
		w.null()
		return
	}
	w.float(v)
}

// appendHistoryJSON writes points in columnar form, the shape the
// dashboard's charts take directly:
//
//	{"avg_response_time": [...], "current_fail_per_sec": [...],
//	 "current_rps": [...], "response_time_percentile_0.5": [...],
//	 "response_time_percentile_0.95": [...], "time": [unix seconds...],
//	 "user_count": [...], "workers": [...]}
//
// plus "full" and "version" (see Server.handleHistory).
func appendHistoryJSON(w *jsonWriter, points []HistoryPoint, version uint64, full bool) {
	col := func(key string, f func(p *HistoryPoint)) {
		w.key(key)
		w.beginArray()
		for i := range points {
			w.elem()
			f(&points[i])
		}
		w.endArray()
	}
	w.beginObject()
	col("avg_response_time", func(p *HistoryPoint) { w.float(p.AvgResponseTime) })
	appendConnHistoryJSON(w, points)
	col("current_fail_per_sec", func(p *HistoryPoint) { w.float(p.CurrentFailPerSec) })
	col("current_rps", func(p *HistoryPoint) { w.float(p.CurrentRPS) })
	w.kBool("full", full)
	col("response_time_percentile_0.5", func(p *HistoryPoint) { writeOptFloat(w, p.P50) })
	col("response_time_percentile_0.95", func(p *HistoryPoint) { writeOptFloat(w, p.P95) })
	col("time", func(p *HistoryPoint) { w.float(float64(p.Time.UnixMilli()) / 1000) })
	col("user_count", func(p *HistoryPoint) { w.int(int64(p.UserCount)) })
	w.kInt("version", int64(version))
	col("workers", func(p *HistoryPoint) { w.int(int64(p.Workers)) })
	w.endObject()
}

// appendConnHistoryJSON writes the connection columns of points (null
// where a point has no connection data); keyed columns are objects of
// columns, one per key seen in points:
//
//	"conn_open": [...], "conn_established": [...], "conn_new_per_sec": [...],
//	"conn_errors": {"<kind> (<side>)": [per second...]},
//	"conn_open_by_worker": {"<worker id>": [...]},
//	"conn_established_by_worker": {"<worker id>": [...]}
//
// A keyed column holds 0 where a point has connection data but no errors
// of that kind, and null where it has none at all (or lacks that worker).
func appendConnHistoryJSON(w *jsonWriter, points []HistoryPoint) {
	col := func(key string, f func(c *HistoryConn)) {
		w.key(key)
		w.beginArray()
		for i := range points {
			w.elem()
			if c := points[i].Conn; c != nil {
				f(c)
			} else {
				w.null()
			}
		}
		w.endArray()
	}
	keyed := func(key string, keys func(c *HistoryConn) []string, f func(c *HistoryConn, k string)) {
		set := make(map[string]bool)
		for i := range points {
			if c := points[i].Conn; c != nil {
				for _, k := range keys(c) {
					set[k] = true
				}
			}
		}
		w.key(key)
		w.beginObject()
		for _, k := range slices.Sorted(maps.Keys(set)) {
			col(k, func(c *HistoryConn) { f(c, k) })
		}
		w.endObject()
	}
	keyed("conn_errors", func(c *HistoryConn) []string { return slices.Collect(maps.Keys(c.ErrorsPerSec)) }, func(c *HistoryConn, k string) { w.float(c.ErrorsPerSec[k]) })
	col("conn_established", func(c *HistoryConn) { w.int(c.Established) })
	keyed("conn_established_by_worker", func(c *HistoryConn) []string { return slices.Collect(maps.Keys(c.ByWorker)) }, func(c *HistoryConn, k string) {
		if v, ok := c.ByWorker[k]; ok {
			w.int(v[1])
		} else {
			w.null()
		}
	})
	col("conn_new_per_sec", func(c *HistoryConn) { w.float(c.NewPerSec) })
	col("conn_open", func(c *HistoryConn) { w.int(c.Open) })
	keyed("conn_open_by_worker", func(c *HistoryConn) []string { return slices.Collect(maps.Keys(c.ByWorker)) }, func(c *HistoryConn, k string) {
		if v, ok := c.ByWorker[k]; ok {
			w.int(v[0])
		} else {
			w.null()
		}
	})
}
