package web

import (
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// responseTimeBuckets are the upper bounds (seconds) of the
// cicada_response_time_seconds histogram. Locust's bucket keys (whole ms,
// 10 ms above 100 ms, ...) are assigned to the first bound >= key.
var responseTimeBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// responseTimeLEs are the le label values of responseTimeBuckets.
var responseTimeLEs = func() []string {
	les := make([]string, len(responseTimeBuckets))
	for i, le := range responseTimeBuckets {
		les[i] = strconv.FormatFloat(le, 'g', -1, 64)
	}
	return les
}()

// workerStates are the states cicada_workers always reports (0 if none).
var workerStates = []string{protocol.StateReady, protocol.StateSpawning, protocol.StateRunning, protocol.StateStopped, protocol.StateMissing}

// runnerStates are the states of the cicada_state enum.
var runnerStates = []string{protocol.StateReady, protocol.StateSpawning, protocol.StateRunning, protocol.StateCleanup, protocol.StateStopping, protocol.StateStopped}

// promWriter appends the Prometheus text exposition format 0.0.4.
type promWriter struct{ b []byte }

// family writes the HELP and TYPE lines of a metric family.
func (p *promWriter) family(name, typ, help string) {
	p.b = append(p.b, "# HELP "...)
	p.b = append(p.b, name...)
	p.b = append(p.b, ' ')
	for i := 0; i < len(help); i++ {
		switch c := help[i]; c {
		case '\\':
			p.b = append(p.b, `\\`...)
		case '\n':
			p.b = append(p.b, `\n`...)
		default:
			p.b = append(p.b, c)
		}
	}
	p.b = append(p.b, "\n# TYPE "...)
	p.b = append(p.b, name...)
	p.b = append(p.b, ' ')
	p.b = append(p.b, typ...)
	p.b = append(p.b, '\n')
}

// sample writes one sample line; labels alternate names and values.
func (p *promWriter) sample(name string, v float64, labels ...string) {
	p.b = append(p.b, name...)
	if len(labels) > 0 {
		p.b = append(p.b, '{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				p.b = append(p.b, ',')
			}
			p.b = append(p.b, labels[i]...)
			p.b = append(p.b, '=', '"')
			p.b = appendLabelValue(p.b, labels[i+1])
			p.b = append(p.b, '"')
		}
		p.b = append(p.b, '}')
	}
	p.b = append(p.b, ' ')
	p.b = appendPromFloat(p.b, v)
	p.b = append(p.b, '\n')
}

// appendLabelValue escapes \, " and newline; invalid UTF-8 becomes U+FFFD
// (label values must be valid UTF-8).
func appendLabelValue(b []byte, s string) []byte {
	if !strings.ContainsAny(s, "\\\"\n") && utf8.ValidString(s) {
		return append(b, s...)
	}
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch r {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return b
}

func appendPromFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendMetrics writes every cicada metric for st and snap.
func appendMetrics(p *promWriter, st *Status, snap *stats.Snapshot) {
	entries := snap.Entries
	perEntry := func(name, typ, help string, val func(e *stats.EntryStats) float64) {
		p.family(name, typ, help)
		for i := range entries {
			e := &entries[i]
			p.sample(name, val(e), "method", e.Method, "name", e.Name)
		}
	}
	perEntry("cicada_requests_total", "counter",
		"Requests completed, successes and failures, per request name and method (Locust num_requests).",
		func(e *stats.EntryStats) float64 { return float64(e.NumRequests) })
	perEntry("cicada_request_failures_total", "counter",
		"Failed requests per request name and method (Locust num_failures).",
		func(e *stats.EntryStats) float64 { return float64(e.NumFailures) })
	perEntry("cicada_response_size_bytes_total", "counter",
		"Sum of response body sizes per request name and method.",
		func(e *stats.EntryStats) float64 { return float64(e.TotalContentLength) })

	const rt = "cicada_response_time_seconds"
	p.family(rt, "histogram", "Response times per request name and method, from Locust's bucketed histogram (requests without a response time are not counted).")
	counts := make([]int64, len(responseTimeBuckets)+1)
	for i := range entries {
		e := &entries[i]
		clear(counts)
		for k, n := range e.ResponseTimes() {
			sec := float64(k) / 1000
			j := sort.SearchFloat64s(responseTimeBuckets, sec)
			counts[j] += n
		}
		var cum int64
		for j, le := range responseTimeLEs {
			cum += counts[j]
			p.sample(rt+"_bucket", float64(cum), "method", e.Method, "name", e.Name, "le", le)
		}
		cum += counts[len(responseTimeBuckets)]
		p.sample(rt+"_bucket", float64(cum), "method", e.Method, "name", e.Name, "le", "+Inf")
		p.sample(rt+"_sum", e.TotalResponseTime/1000, "method", e.Method, "name", e.Name)
		p.sample(rt+"_count", float64(cum), "method", e.Method, "name", e.Name)
	}

	t := &snap.Total
	p.family("cicada_current_requests_per_second", "gauge", "Locust's current RPS of all requests (sliding window of up to 10 s ending 2 s before the last request).")
	p.sample("cicada_current_requests_per_second", t.CurrentRPS)
	p.family("cicada_current_failures_per_second", "gauge", "Locust's current failures per second of all requests (same window).")
	p.sample("cicada_current_failures_per_second", t.CurrentFailPerSec)
	p.family("cicada_current_response_time_seconds", "gauge", "Locust's current response-time percentiles of all requests (about the last 10 s); absent while Locust shows None.")
	for _, cp := range chartPercentiles {
		if v, ok := t.CurrentPercentile(cp.p); ok {
			p.sample("cicada_current_response_time_seconds", float64(v)/1000, "percentile", cp.label)
		}
	}
	p.family("cicada_stats_reset_timestamp_seconds", "gauge", "Unix time of the last statistics reset (counters restart from zero then).")
	p.sample("cicada_stats_reset_timestamp_seconds", t.StartTime)

	p.family("cicada_errors_total", "counter", "Occurrences of each distinct request error (at most 500 errors).")
	for i := range snap.Errors {
		if i == maxRows {
			break
		}
		e := &snap.Errors[i]
		p.sample("cicada_errors_total", float64(e.Occurrences), "method", e.Method, "name", e.Name, "error", e.Error)
	}
	var exc int64
	for _, x := range snap.Exceptions {
		exc += x.Count
	}
	p.family("cicada_exceptions_total", "counter", "Exceptions raised by user tasks.")
	p.sample("cicada_exceptions_total", float64(exc))

	p.family("cicada_users", "gauge", "Running users (master: sum of the users last reported by workers).")
	p.sample("cicada_users", float64(st.UserCount))
	p.family("cicada_user_class_users", "gauge", "Running users per User class.")
	classes := make([]string, 0, len(st.UserClassesCount))
	for c := range st.UserClassesCount {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		p.sample("cicada_user_class_users", float64(st.UserClassesCount[c]), "user_class", c)
	}
	p.family("cicada_state", "gauge", "Runner state: 1 for the current state, 0 for the others.")
	for _, s := range runnerStates {
		v := 0.0
		if s == st.State {
			v = 1
		}
		p.sample("cicada_state", v, "state", s)
	}

	if !st.Distributed {
		return
	}
	byState := make(map[string]int)
	for _, w := range st.Workers {
		byState[w.State]++
	}
	p.family("cicada_workers", "gauge", "Connected workers per state.")
	for _, s := range workerStates {
		p.sample("cicada_workers", float64(byState[s]), "state", s)
		delete(byState, s)
	}
	others := make([]string, 0, len(byState))
	for s := range byState {
		others = append(others, s)
	}
	sort.Strings(others)
	for _, s := range others {
		p.sample("cicada_workers", float64(byState[s]), "state", s)
	}
	workerGauge := func(name, help string, val func(w *WorkerInfo) (float64, bool)) {
		p.family(name, "gauge", help)
		for i := range st.Workers {
			w := &st.Workers[i]
			if v, ok := val(w); ok {
				p.sample(name, v, "worker", w.ID)
			}
		}
	}
	workerGauge("cicada_worker_users", "Users running on each worker.",
		func(w *WorkerInfo) (float64, bool) { return float64(w.UserCount), true })
	workerGauge("cicada_worker_cpu_usage_ratio", "CPU usage of each worker process as reported in its heartbeat (1 = one core).",
		func(w *WorkerInfo) (float64, bool) { return w.CPUUsage / 100, true })
	workerGauge("cicada_worker_memory_bytes", "Resident memory of each worker process as reported in its heartbeat.",
		func(w *WorkerInfo) (float64, bool) { return float64(w.MemoryUsage), w.MemoryUsage >= 0 })
	workerGauge("cicada_worker_connections", "Open client connections of each worker (cicada workers only).",
		func(w *WorkerInfo) (float64, bool) { return float64(w.Connections), w.Connections >= 0 })
	var conns int
	known := false
	for _, w := range st.Workers {
		if w.Connections >= 0 {
			conns += w.Connections
			known = true
		}
	}
	if known {
		p.family("cicada_connections", "gauge", "Open client connections of all workers that report them.")
		p.sample("cicada_connections", float64(conns))
	}
	appendRateMetrics(p, st, snap)
	appendConnMetrics(p, st)
}

// appendConnMetrics writes the detailed connection counters of the
// workers that report them (cicada workers).
func appendConnMetrics(p *promWriter, st *Status) {
	var ws []*WorkerInfo
	for i := range st.Workers {
		if st.Workers[i].Conn != nil {
			ws = append(ws, &st.Workers[i])
		}
	}
	if len(ws) == 0 {
		return
	}
	gauge := func(name, typ, help string, val func(c *ConnStats) float64) {
		p.family(name, typ, help)
		var total float64
		for _, w := range ws {
			v := val(w.Conn)
			total += v
			p.sample(name, v, "worker", w.ID)
		}
	}
	gauge("cicada_worker_connections_established", "gauge", "Established client connections of each worker.",
		func(c *ConnStats) float64 { return float64(c.Established) })
	gauge("cicada_worker_connects_total", "counter", "Successful connects of each worker since it started.",
		func(c *ConnStats) float64 { return float64(c.Connects) })
	gauge("cicada_worker_reconnects_total", "counter", "Connects that replaced a user's earlier connection, per worker.",
		func(c *ConnStats) float64 { return float64(c.Reconnects) })
	gauge("cicada_worker_connects_per_second", "gauge", "Connect rate of each worker between its last two heartbeats.",
		func(c *ConnStats) float64 { return c.ConnectsPerSec })
	appendTLSMetrics(ws, gauge)
	byKey := func(name, help, label string, get func(c *ConnStats) map[string]int64, sided bool) {
		p.family(name, "counter", help)
		for _, w := range ws {
			m := get(w.Conn)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if !sided {
					p.sample(name, float64(m[k]), "worker", w.ID, label, k)
					continue
				}
				side := "server"
				if w.Conn.GeneratorSide != nil && w.Conn.GeneratorSide(k) {
					side = "generator"
				}
				p.sample(name, float64(m[k]), "worker", w.ID, label, k, "side", side)
			}
		}
	}
	byKey("cicada_worker_connection_closes_total", "Closed client connections per worker and cause.", "cause",
		func(c *ConnStats) map[string]int64 { return c.Closes }, false)
	byKey("cicada_worker_connect_errors_total", "Failed connects per worker and kind; side says whether the load generator (its ports, files, memory) or the server/network is at fault.", "kind",
		func(c *ConnStats) map[string]int64 { return c.ConnectErrors }, true)
	byKey("cicada_worker_connection_errors_total", "Failed requests on open connections per worker and kind, with the side at fault.", "kind",
		func(c *ConnStats) map[string]int64 { return c.Errors }, true)
	var est int64
	for _, w := range ws {
		est += w.Conn.Established
	}
	p.family("cicada_connections_established", "gauge", "Established client connections of all workers that report them.")
	p.sample("cicada_connections_established", float64(est))
}

// handleMetrics serves Prometheus metrics (text format 0.0.4).
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	st := s.runner.Status()
	snap := s.runner.Snapshot()
	p := promWriter{b: make([]byte, 0, 4096+2048*len(snap.Entries))}
	appendMetrics(&p, &st, snap)
	h := w.Header()
	h.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(p.b)))
	w.WriteHeader(http.StatusOK)
	w.Write(p.b)
}
