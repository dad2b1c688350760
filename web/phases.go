package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/stats"
)

// phaseQuantiles are the quantiles of cicada_request_phase_seconds.
var phaseQuantiles = []struct {
	q   string
	get func(p *stats.PhaseSummary) time.Duration
}{
	{"0.5", func(p *stats.PhaseSummary) time.Duration { return p.P50 }},
	{"0.9", func(p *stats.PhaseSummary) time.Duration { return p.P90 }},
	{"0.95", func(p *stats.PhaseSummary) time.Duration { return p.P95 }},
	{"0.99", func(p *stats.PhaseSummary) time.Duration { return p.P99 }},
}

// appendPhaseMetrics writes cicada's per-phase timings (stats.PhaseStats of
// cicada workers) as one Prometheus summary: quantiles from the exact
// histograms, sum and count, per request name, method and phase (dns,
// connect, tls, ttfb, body), and for all requests (name "Aggregated").
// Nothing is written when no entry has phases (Python workers only).
func appendPhaseMetrics(p *promWriter, snap *stats.Snapshot) {
	const name = "cicada_request_phase_seconds"
	if snap.Total.Phases == nil {
		return
	}
	p.family(name, "summary", "Per-phase times of HTTP requests from cicada workers (dns and connect and tls on new connections, "+
		"ttfb from the start of the request to the first response byte, body from there to the end), per request name and method; "+
		"quantiles from exact histograms.")
	write := func(method, reqName string, ps *stats.PhaseStats) {
		if ps == nil {
			return
		}
		for i := range ps {
			ph := &ps[i]
			if ph.Count == 0 {
				continue
			}
			phase := stats.PhaseNames[i]
			for _, q := range phaseQuantiles {
				p.sample(name, q.get(ph).Seconds(), "method", method, "name", reqName, "phase", phase, "quantile", q.q)
			}
			p.sample(name+"_sum", ph.Avg.Seconds()*float64(ph.Count), "method", method, "name", reqName, "phase", phase)
			p.sample(name+"_count", float64(ph.Count), "method", method, "name", reqName, "phase", phase)
		}
	}
	for i := range snap.Entries {
		e := &snap.Entries[i]
		write(e.Method, e.Name, e.Phases)
	}
	write("", "Aggregated", snap.Total.Phases)
}

// phaseJSON is an entry's phases in /stats/requests ("cicada_phases":
// phase name → {count, avg, min, max, p50, p90, p95, p99} in ms), for the
// dashboard's phase table; absent when the entry has none.
func phaseJSON(ps *stats.PhaseStats) string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for i := range ps {
		ph := &ps[i]
		if ph.Count == 0 {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(`"` + stats.PhaseNames[i] + `":{"count":` + strconv.FormatUint(ph.Count, 10))
		for _, f := range []struct {
			k string
			d time.Duration
		}{{"avg", ph.Avg}, {"min", ph.Min}, {"max", ph.Max}, {"p50", ph.P50}, {"p90", ph.P90}, {"p95", ph.P95}, {"p99", ph.P99}} {
			b.WriteString(`,"` + f.k + `":` + strconv.FormatFloat(float64(f.d.Round(time.Microsecond))/1e6, 'f', -1, 64))
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.String()
}

// handlePhasesCSV serves the current _phases.csv (cicada's per-phase
// timings, stats.WritePhasesCSV) as /stats/phases/csv.
func (s *Server) handlePhasesCSV(w http.ResponseWriter, r *http.Request) {
	s.writeCSV(w, "phases", stats.WritePhasesCSV)
}

// reportPhase is one row of the HTML report's Request Phases table.
type reportPhase struct {
	Method, Name, Phase          string
	Count                        uint64
	Avg, Min, P50, P95, P99, Max string // ms, two decimals
	Total                        bool
}

// reportPhases returns the HTML report's per-phase rows: each entry's
// phases, then the Aggregated row's; none without phases.
func reportPhases(snap *stats.Snapshot) []reportPhase {
	var out []reportPhase
	add := func(method, name string, ps *stats.PhaseStats, total bool) {
		if ps == nil {
			return
		}
		for i := range ps {
			ph := &ps[i]
			if ph.Count == 0 {
				continue
			}
			f := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }
			out = append(out, reportPhase{Method: method, Name: name, Phase: stats.PhaseNames[i], Count: ph.Count,
				Avg: f(ph.Avg), Min: f(ph.Min), P50: f(ph.P50), P95: f(ph.P95), P99: f(ph.P99), Max: f(ph.Max), Total: total})
		}
	}
	for i := range snap.Entries {
		e := &snap.Entries[i]
		add(e.Method, e.Name, e.Phases, false)
	}
	add("", "Aggregated", snap.Total.Phases, true)
	return out
}
