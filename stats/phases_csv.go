package stats

import (
	"io"
	"strconv"
	"strings"
	"time"
)

// PhasesCSVHeader is the header of cicada's <prefix>_phases.csv (Locust has
// no such file): one row per entry and phase that has samples, then the
// Aggregated rows; times in milliseconds with microsecond resolution.
var PhasesCSVHeader = []string{"Type", "Name", "Phase", "Count", "Average (ms)", "Min (ms)", "50%", "90%", "95%", "99%", "Max (ms)"}

// WritePhasesCSV writes the whole _phases.csv: the per-phase timings of
// every entry (EntryStats.Phases), in the snapshot's order, then the
// Aggregated row's. Entries without phases (Python workers, non-HTTP
// records) have no rows.
func WritePhasesCSV(w io.Writer, s *Snapshot) error {
	var b strings.Builder
	b.WriteString(strings.Join(PhasesCSVHeader, ",") + "\n")
	rows := func(method, name string, ps *PhaseStats) {
		if ps == nil {
			return
		}
		for i, p := range ps {
			if p.Count == 0 {
				continue
			}
			b.WriteString(csvQuote(method) + "," + csvQuote(name) + "," + PhaseNames[i] + "," + strconv.FormatUint(p.Count, 10))
			for _, d := range []time.Duration{p.Avg, p.Min, p.P50, p.P90, p.P95, p.P99, p.Max} {
				b.WriteString("," + phaseMs(d))
			}
			b.WriteString("\n")
		}
	}
	for i := range s.Entries {
		e := &s.Entries[i]
		rows(e.Method, e.Name, e.Phases)
	}
	rows("", "Aggregated", s.Total.Phases)
	_, err := io.WriteString(w, b.String())
	return err
}

// phaseMs formats d in milliseconds with three decimals (whole µs).
func phaseMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Round(time.Microsecond))/1e6, 'f', 3, 64)
}

// csvQuote quotes a field as Python's csv module does (minimal quoting).
func csvQuote(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
