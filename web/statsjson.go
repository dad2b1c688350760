package web

import (
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cicada-load/cicada/internal/pyrepr"
	"github.com/cicada-load/cicada/stats"
)

// StatsSource is the statistics half of Runner.
type StatsSource interface {
	// Snapshot returns an immutable view of the master's statistics
	// (stats.Stats.Snapshot). It is called on every /stats/requests
	// rebuild, CSV download, report and /metrics scrape.
	Snapshot() *stats.Snapshot
}

// maxRows is Locust's cap on the entries and errors of /stats/requests
// (locust/web.py 2.12.1: "a large number of rows will cause the app to
// render extremely slowly"); the Aggregated row is always kept.
const maxRows = 500

// chartPercentiles are Locust HEAD's PERCENTILES_TO_CHART, the current
// percentiles of the charts; statsPercentiles its PERCENTILES_TO_STATISTICS.
var (
	chartPercentiles = []struct {
		p     float64
		old   string // 2.12.1 top-level key
		label string // HEAD key suffix
	}{{0.5, "current_response_time_percentile_50", "0.5"}, {0.95, "current_response_time_percentile_95", "0.95"}}
)

// properRound is Locust's proper_round(val): round(val + 10**(-len(str(val))-1)),
// i.e. half-up rounding to an integral float, as min/max_response_time are
// shown in /stats/requests.
func properRound(v float64) float64 {
	n := len(pyrepr.Float(v))
	return math.RoundToEven(v + math.Pow(10, float64(-n-1)))
}

// rateNum is a current rate as Locust serialises it: the int 0 while the
// Aggregated entry has no request yet, a float afterwards.
func rateNum(v float64, total *stats.EntryStats) pyNum {
	if total.LastRequestTimestamp == nil {
		return pyInt(0)
	}
	return pyFloat(v)
}

// appendEntryJSON writes one /stats/requests entry: the union of the
// 2.12.1 fields (safe_name, ninetieth_response_time,
// ninety_ninth_response_time) and the HEAD fields
// (response_time_percentile_0.95/0.99, total_rps, total_fail_per_sec).
func appendEntryJSON(w *jsonWriter, e, total *stats.EntryStats) {
	w.elem()
	w.beginObject()
	if e.NumRequests == 0 {
		w.kNum("avg_content_length", pyInt(0))
	} else {
		w.kFloat("avg_content_length", e.AvgContentLength())
	}
	w.kFloat("avg_response_time", e.AvgResponseTime())
	if e.Phases != nil { // cicada's per-phase timings (phases.go)
		w.key("cicada_phases")
		w.buf = append(w.buf, phaseJSON(e.Phases)...)
	}
	w.kNum("current_fail_per_sec", rateNum(e.CurrentFailPerSec, total))
	w.kNum("current_rps", rateNum(e.CurrentRPS, total))
	w.kFloat("max_response_time", properRound(e.MaxResponseTime))
	w.key("median_response_time")
	writeRepr(w, e.MedianRepr())
	w.key("method")
	if e.MethodNil {
		w.null()
	} else {
		w.str(e.Method)
	}
	if e.MinResponseTime == nil {
		w.kInt("min_response_time", 0)
	} else {
		w.kFloat("min_response_time", properRound(*e.MinResponseTime))
	}
	w.kStr("name", e.Name)
	w.kInt("ninetieth_response_time", e.Percentile(0.9))
	w.kInt("ninety_ninth_response_time", e.Percentile(0.99))
	w.kInt("num_failures", e.NumFailures)
	w.kInt("num_requests", e.NumRequests)
	w.kInt("response_time_percentile_0.95", e.Percentile(0.95))
	w.kInt("response_time_percentile_0.99", e.Percentile(0.99))
	w.kStr("safe_name", safeName(e.Name))
	w.kFloat("total_fail_per_sec", e.TotalFailPerSec)
	w.kFloat("total_rps", e.TotalRPS)
	w.endObject()
}

// writeRepr writes a number already in Python repr form (stats'
// MedianRepr), or null if it is not finite.
func writeRepr(w *jsonWriter, s string) {
	switch s {
	case "nan", "inf", "-inf", "":
		w.null()
	default:
		w.buf = append(w.buf, s...)
	}
}

// safeName is 2.12.1's safe_name: html.escape(name, quote=False), which
// escapes &, < and > only.
func safeName(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// appendRequestsJSON writes the /stats/requests body for st and snap: the
// union of Locust 2.12.1's and HEAD's top-level fields (see doc.go for the
// choices where they conflict).
func appendRequestsJSON(w *jsonWriter, st *Status, snap *stats.Snapshot) {
	total := &snap.Total
	w.beginObject()
	w.kNum("current_fail_per_sec", rateNum(total.CurrentFailPerSec, total))
	cur := make([]struct {
		v  int64
		ok bool
	}, len(chartPercentiles))
	for i, cp := range chartPercentiles {
		cur[i].v, cur[i].ok = total.CurrentPercentile(cp.p)
	}
	for i, cp := range chartPercentiles {
		w.key(cp.old)
		if cur[i].ok {
			w.int(cur[i].v)
		} else {
			w.null()
		}
	}
	w.key("current_response_time_percentiles")
	w.beginObject()
	for i, cp := range chartPercentiles {
		w.key("response_time_percentile_" + cp.label)
		if cur[i].ok {
			w.int(cur[i].v)
		} else {
			w.null()
		}
	}
	w.endObject()
	w.kNum("current_rps", rateNum(total.CurrentRPS, total))
	if total.Dropped > 0 {
		// cicada's arrival-rate drops (issue 13); absent in closed-model runs.
		w.kInt("dropped_iterations", total.Dropped)
		appendDroppedByJSON(w, snap) // statsdrops.go
	}

	w.key("errors")
	w.beginArray()
	for i := range snap.Errors {
		if i == maxRows {
			break
		}
		e := &snap.Errors[i]
		w.elem()
		w.beginObject()
		w.kStr("error", e.Error)
		w.key("first_seen")
		writeOptPtr(w, e.FirstSeen)
		w.key("last_seen")
		writeOptPtr(w, e.LastSeen)
		w.kStr("method", e.Method)
		w.kStr("name", e.Name)
		w.kInt("occurrences", e.Occurrences)
		w.endObject()
	}
	w.endArray()

	w.kFloat("fail_ratio", total.FailRatio())
	w.kStr("state", st.State)
	w.key("stats")
	w.beginArray()
	for i := range snap.Entries {
		if i == maxRows {
			break
		}
		appendEntryJSON(w, &snap.Entries[i], total)
	}
	appendEntryJSON(w, total, total)
	w.endArray()
	w.kFloat("total_fail_per_sec", total.TotalFailPerSec)
	// 2.12.1 meaning: the Aggregated *current* RPS (HEAD's is cumulative and
	// is available as stats[-1].total_rps).
	w.kNum("total_rps", rateNum(total.CurrentRPS, total))
	w.kInt("user_count", int64(st.UserCount))
	if st.Distributed {
		w.kInt("worker_count", int64(activeWorkers(st.Workers)))
		w.key("workers")
		w.beginArray()
		for i := range st.Workers {
			wk := &st.Workers[i]
			w.elem()
			w.beginObject()
			if wk.Connections >= 0 {
				w.kInt("connections", int64(wk.Connections))
			}
			if wk.Conn != nil {
				w.kInt("connections_established", wk.Conn.Established)
				w.kFloat("connects_per_sec", wk.Conn.ConnectsPerSec)
			}
			w.kFloat("cpu_usage", wk.CPUUsage)
			if wk.Dropped > 0 {
				w.kInt("dropped_iterations", wk.Dropped)
			}
			w.kStr("id", wk.ID)
			w.kInt("memory_usage", wk.MemoryUsage)
			w.kStr("state", wk.State)
			if c := wk.Conn; c != nil && c.TLSHandshakes+c.TLSResumed > 0 {
				w.kFloat("tls_handshakes_per_sec", c.TLSHandshakesPerSec) // cicada (issue 16): only when TLS is in use
			}
			w.kInt("user_count", int64(wk.UserCount))
			w.endObject()
		}
		w.endArray()
	}
	w.endObject()
}

func writeOptPtr(w *jsonWriter, p *float64) {
	if p == nil {
		w.null()
		return
	}
	w.float(*p)
}

// statsCache memoises the /stats/requests body as Locust does (one result
// shared by all clients for a TTL that doubles while building takes
// longer than the TTL).
type statsCache struct {
	mu      sync.Mutex
	body    []byte
	expires time.Time
	ttl     time.Duration
}

func (c *statsCache) invalidate() {
	c.mu.Lock()
	c.body = nil
	c.mu.Unlock()
}

// get returns the cached body or builds a new one with build.
func (c *statsCache) get(now func() time.Time, base time.Duration, build func() []byte) []byte {
	if base < 0 {
		return build()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := now()
	if c.body != nil && t.Before(c.expires) {
		return c.body
	}
	if c.ttl < base {
		c.ttl = base
	}
	start := time.Now()
	c.body = build()
	if took := time.Since(start); took > c.ttl {
		c.ttl *= 2
	}
	c.expires = now().Add(c.ttl)
	return c.body
}

// buildRequests builds the /stats/requests body.
func (s *Server) buildRequests() []byte {
	st := s.runner.Status()
	snap := s.runner.Snapshot()
	jw := jsonWriter{buf: make([]byte, 0, 1024+700*min(len(snap.Entries), maxRows))}
	appendRequestsJSON(&jw, &st, snap)
	return jw.bytes()
}

// handleRequests answers GET /stats/requests (Locust 2.12.1 locust/web.py,
// request_stats in WebUI.__init__).
func (s *Server) handleRequests(w http.ResponseWriter, r *http.Request) {
	body := s.cache.get(s.opts.Now, s.opts.StatsCacheTTL, s.buildRequests)
	writeJSON(w, http.StatusOK, body)
}

// handleExceptions answers GET /exceptions: {"exceptions": [{"count",
// "msg", "nodes", "traceback"}]}, with raw (HEAD) rather than HTML-escaped
// (2.12.1) text.
func (s *Server) handleExceptions(w http.ResponseWriter, r *http.Request) {
	snap := s.runner.Snapshot()
	var jw jsonWriter
	jw.beginObject()
	jw.key("exceptions")
	jw.beginArray()
	for _, x := range snap.Exceptions {
		jw.elem()
		jw.beginObject()
		jw.kInt("count", x.Count)
		jw.kStr("msg", x.Msg)
		jw.kStr("nodes", strings.Join(x.Nodes, ", "))
		jw.kStr("traceback", x.Traceback)
		jw.endObject()
	}
	jw.endArray()
	jw.endObject()
	writeJSON(w, http.StatusOK, jw.bytes())
}

// historyPoint samples the chart values from st and src.
func historyPoint(st Status, src StatsSource, now time.Time) HistoryPoint {
	snap := src.Snapshot()
	t := &snap.Total
	p := HistoryPoint{
		Time:              now,
		UserCount:         st.UserCount,
		CurrentRPS:        t.CurrentRPS,
		CurrentFailPerSec: t.CurrentFailPerSec,
		AvgResponseTime:   t.AvgResponseTime(),
		P50:               math.NaN(),
		P95:               math.NaN(),
	}
	if v, ok := t.CurrentPercentile(0.5); ok {
		p.P50 = float64(v)
	}
	if v, ok := t.CurrentPercentile(0.95); ok {
		p.P95 = float64(v)
	}
	if st.Distributed {
		p.Workers = activeWorkers(st.Workers)
	}
	return p
}
