package web

import "github.com/cicada-load/cicada/stats"

// appendRateMetrics writes the arrival-rate drops (issue 13): the total
// and per worker. Closed-model runs never drop, so the families appear
// with the first dropped iteration.
func appendRateMetrics(p *promWriter, st *Status, snap *stats.Snapshot) {
	seen := snap.Total.Dropped > 0
	for i := range st.Workers {
		seen = seen || st.Workers[i].Dropped > 0
	}
	if !seen {
		return
	}
	p.family("cicada_dropped_iterations_total", "counter", "Arrival-rate iterations not started because every user was busy (since the last statistics reset).")
	p.sample("cicada_dropped_iterations_total", float64(snap.Total.Dropped))
	p.family("cicada_worker_dropped_iterations_total", "counter", "Arrival-rate iterations each worker dropped in the current test.")
	for i := range st.Workers {
		w := &st.Workers[i]
		p.sample("cicada_worker_dropped_iterations_total", float64(w.Dropped), "worker", w.ID)
	}
}
