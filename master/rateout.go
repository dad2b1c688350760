package master

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cicada-load/cicada/stats"
)

// The arrival-rate outputs (issue 13): a table after Locust's tables in the
// summary, and PREFIX_rate.csv beside Locust's CSV files, rewritten on
// each CSV tick. Locust's own tables and CSV files keep Locust's numbers
// (the service time, from the send); these carry the cicada-only figures:
// the requested and achieved rates, the dropped iterations per worker and
// in total, and the exact percentiles of the response time measured from
// the moment each iteration was due (wrk2's correction; package worker,
// rate.go).

// RatePercentiles are the corrected percentiles of the rate table and CSV.
var RatePercentiles = []float64{0.50, 0.90, 0.99, 0.999, 1.0}

// rateFrame is the arrival-rate view of one frame; nil without a rate.
type rateFrame struct {
	requested float64 // mean requested rate since the test began, iterations/s
	current   float64 // the rate of the current stage
	elapsed   time.Duration
	workers   []rateWorker // by index
}

type rateWorker struct {
	index   int
	id      string
	dropped int64
}

// rateFrame takes the rate view. Precondition: loop, or after it returned.
func (m *Master) rateFrame() *rateFrame {
	if len(m.opts.Rate) == 0 {
		return nil
	}
	rs := m.rateState()
	f := &rateFrame{}
	if !rs.begin.IsZero() {
		f.elapsed = timeNow().Sub(rs.begin)
		if rateStagesEnd(&m.opts) {
			f.elapsed = min(f.elapsed, m.opts.Rate[len(m.opts.Rate)-1].Duration)
		}
		f.requested = meanRate(m.opts.Rate, f.elapsed)
		f.current = float64(rateAt(m.opts.Rate, f.elapsed)) / 1000
	}
	for id, n := range rs.dropped {
		f.workers = append(f.workers, rateWorker{index: m.st.reg.indexes[id], id: id, dropped: n})
	}
	sort.Slice(f.workers, func(i, j int) bool { return f.workers[i].index < f.workers[j].index })
	return f
}

// meanRate is the time average of the schedule over [0, elapsed].
func meanRate(stages []RateStage, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return float64(rateAt(stages, 0)) / 1000
	}
	var sum float64 // iterations
	var prev time.Duration
	var prevRate float64
	for _, s := range stages {
		end := s.Duration
		if end == 0 || end > elapsed {
			end = elapsed
		}
		if end > prev {
			// The rate is linear over [prev, end] (constant without Ramp):
			// the trapezoid is exact.
			r0, r1 := s.Rate, s.Rate
			if s.Ramp && s.Duration > 0 {
				r0 = prevRate
				if end < s.Duration {
					r1 = rateAtF(stages, end)
				}
			}
			sum += (r0 + r1) / 2 * (end - prev).Seconds()
			prev = end
		}
		prevRate = s.Rate
		if prev >= elapsed {
			break
		}
	}
	return sum / elapsed.Seconds()
}

// writeRateTable prints the arrival-rate table of the summary.
func writeRateTable(w io.Writer, snap *stats.Snapshot, f *rateFrame) {
	if f == nil {
		return
	}
	var b strings.Builder
	b.WriteString("\nArrival rate (cicada; Locust's tables above show the service time, from the send)\n")
	fmt.Fprintf(&b, "%-30s %14s %14s %12s %12s\n", "", "Requested/s", "Achieved req/s", "Requests", "Dropped")
	b.WriteString(strings.Repeat("-", 86) + "\n")
	for _, wk := range f.workers {
		fmt.Fprintf(&b, "%-30s %14s %14s %12s %12d\n", fmt.Sprintf("worker %d %s", wk.index, shortID(wk.id)), "", "", "", wk.dropped)
	}
	fmt.Fprintf(&b, "%-30s %14.2f %14.2f %12d %12d\n", "Total", f.requested, snap.Total.TotalRPS, snap.Total.NumRequests, snap.Total.Dropped)
	writeDroppedTable(&b, snap) // ratedrops.go
	b.WriteString("\nResponse time from the due time (corrected, exact, ms)\n")
	fmt.Fprintf(&b, "%-8s %-40s", "Type", "Name")
	for _, p := range RatePercentiles {
		fmt.Fprintf(&b, " %9s", pctLabel(p))
	}
	fmt.Fprintf(&b, " %9s\n", "# reqs")
	b.WriteString(strings.Repeat("-", 8+1+40+10*(len(RatePercentiles)+1)) + "\n")
	row := func(e *stats.EntryStats) {
		fmt.Fprintf(&b, "%-8s %-40s", e.Method, clipName(e.Name, 40))
		for _, p := range RatePercentiles {
			if ms, ok := e.ExactPercentile(p); ok {
				fmt.Fprintf(&b, " %9.0f", ms)
			} else {
				fmt.Fprintf(&b, " %9s", "N/A")
			}
		}
		fmt.Fprintf(&b, " %9d\n", e.NumRequests)
	}
	for i := range snap.Entries {
		if i == maxRateRows {
			fmt.Fprintf(&b, "(%d more rows in the CSV file)\n", len(snap.Entries)-i)
			break
		}
		row(&snap.Entries[i])
	}
	row(&snap.Total)
	if !snap.ExactComplete() {
		b.WriteString("(a Python worker contributed: its requests have no corrected time)\n")
	}
	_, _ = io.WriteString(w, b.String())
}

// maxRateRows bounds the rows of the console rate table.
const maxRateRows = 100

func pctLabel(p float64) string {
	if p == 1 {
		return "100%"
	}
	s := fmt.Sprintf("%.1f", p*100)
	s = strings.TrimSuffix(s, ".0")
	return s + "%"
}

func clipName(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// rateCSV is PREFIX_rate.csv: one row per entry and the Aggregated row,
// with the corrected percentiles, and the rate figures on the Aggregated
// row; the dropped iterations on every row (by name: ratedrops.go), with a
// row of its own for a name that has drops and no request, before the
// Aggregated row. Rewritten at each CSV tick.
type rateCSV struct{ f *os.File }

func openRateCSV(prefix string) (*rateCSV, error) {
	f, err := os.Create(prefix + "_rate.csv")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCSV, err)
	}
	return &rateCSV{f: f}, nil
}

func (c *rateCSV) write(snap *stats.Snapshot, rf *rateFrame) error {
	if c == nil || rf == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString("Type,Name,Requested Rate,Achieved Request Rate,Request Count,Dropped Iterations")
	for _, p := range RatePercentiles {
		b.WriteString(",Corrected " + pctLabel(p))
	}
	b.WriteString("\r\n")
	row := func(e *stats.EntryStats, total bool) {
		b.WriteString(csvField(e.Method) + "," + csvField(e.Name) + ",")
		if total {
			fmt.Fprintf(&b, "%.3f,%.3f,%d,%d", rf.requested, e.TotalRPS, e.NumRequests, e.Dropped)
		} else {
			fmt.Fprintf(&b, ",%.3f,%d,%d", e.TotalRPS, e.NumRequests, e.Dropped) // by name: ratedrops.go
		}
		for _, p := range RatePercentiles {
			if ms, ok := e.ExactPercentile(p); ok {
				fmt.Fprintf(&b, ",%.3f", ms)
			} else {
				b.WriteString(",N/A")
			}
		}
		b.WriteString("\r\n")
	}
	for i := range snap.Entries {
		row(&snap.Entries[i], false)
	}
	for _, d := range droppedOnly(snap) { // names whose every iteration was dropped
		b.WriteString(csvField(d.Method) + "," + csvField(d.Name) + fmt.Sprintf(",,0.000,0,%d", d.Count))
		for range RatePercentiles {
			b.WriteString(",N/A")
		}
		b.WriteString("\r\n")
	}
	row(&snap.Total, true)
	if err := c.f.Truncate(0); err != nil {
		return fmt.Errorf("%w: %w", ErrCSV, err)
	}
	if _, err := c.f.WriteAt([]byte(b.String()), 0); err != nil {
		return fmt.Errorf("%w: %w", ErrCSV, err)
	}
	return nil
}

func (c *rateCSV) close() error {
	if c == nil {
		return nil
	}
	if err := c.f.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrCSV, err)
	}
	return nil
}

// csvField quotes s as Python's csv module does when needed.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
