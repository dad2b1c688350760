package web

import (
	"context"
	"maps"
	"math"
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
		return
	}
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
