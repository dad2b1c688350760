package stats

import (
	"io"
	"strconv"
	"strings"

	"github.com/cicada-load/cicada/internal/pyrepr"
)

// csvRow builds lines the way Python's csv.writer (default dialect) writes
// them: comma-separated, a field quoted (quotes doubled) only when it
// contains a comma, a quote, \r or \n, and CRLF at the end of a row.
type csvRow struct {
	b      []byte
	inLine bool // a field was written on the current line
}

func (r *csvRow) field(s string) *csvRow {
	if r.inLine {
		r.b = append(r.b, ',')
	}
	r.inLine = true
	if !strings.ContainsAny(s, ",\"\r\n") {
		r.b = append(r.b, s...)
		return r
	}
	r.b = append(r.b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			r.b = append(r.b, '"')
		}
		r.b = append(r.b, s[i])
	}
	r.b = append(r.b, '"')
	return r
}

func (r *csvRow) int(v int64) *csvRow { return r.field(strconv.FormatInt(v, 10)) }

func (r *csvRow) float(v float64) *csvRow { return r.field(pyrepr.Float(v)) }

// orZero is Python's "x or 0": the int 0 for a zero (or missing) float.
func (r *csvRow) orZero(v *float64) *csvRow {
	if v == nil || *v == 0 {
		return r.field("0")
	}
	return r.float(*v)
}

func (r *csvRow) end() *csvRow {
	r.b = append(r.b, '\r', '\n')
	r.inLine = false
	return r
}

func (r *csvRow) header(cols ...string) *csvRow {
	for _, c := range cols {
		r.field(c)
	}
	return r.end()
}

func percentileHeaders() []string {
	h := make([]string, len(PercentilesToReport))
	for i, p := range PercentilesToReport {
		h[i] = ReadablePercentile(p)
	}
	return h
}

// StatsCSVHeader is the header of _stats.csv.
var StatsCSVHeader = append([]string{
	"Type", "Name", "Request Count", "Failure Count", "Median Response Time",
	"Average Response Time", "Min Response Time", "Max Response Time",
	"Average Content Size", "Requests/s", "Failures/s",
}, percentileHeaders()...)

// HistoryCSVHeader is the header of _stats_history.csv.
var HistoryCSVHeader = append(append([]string{
	"Timestamp", "User Count", "Type", "Name", "Requests/s", "Failures/s",
}, percentileHeaders()...),
	"Total Request Count", "Total Failure Count", "Total Median Response Time",
	"Total Average Response Time", "Total Min Response Time",
	"Total Max Response Time", "Total Average Content Size")

// FailuresCSVHeader is the header of _failures.csv (2.12.1).
var FailuresCSVHeader = []string{"Method", "Name", "Error", "Occurrences"}

// ExceptionsCSVHeader is the header of _exceptions.csv.
var ExceptionsCSVHeader = []string{"Count", "Message", "Traceback", "Nodes"}

// percentileFields appends Locust's _percentile_fields: N/A without
// requests, else the cumulative (or, with current, windowed, None as 0)
// percentiles as ints.
func (f Format) percentileFields(r *csvRow, e *EntryStats, current, exact bool) *csvRow {
	for _, p := range PercentilesToReport {
		switch {
		case e.NumRequests == 0:
			r.field("N/A")
		case current:
			v, _ := e.CurrentPercentile(p)
			r.int(v)
		default:
			r.int(f.percentileValue(e, p, exact))
		}
	}
	return r
}

// avgContent is Locust's avg_content_length: a float, or the int 0 without
// requests.
func (r *csvRow) avgContent(e *EntryStats) *csvRow {
	if e.NumRequests == 0 {
		return r.field("0")
	}
	return r.float(e.AvgContentLength())
}

// WriteStatsCSV writes the whole _stats.csv (header and rows) in Locust's
// format.
func WriteStatsCSV(w io.Writer, s *Snapshot) error { return Format{}.WriteStatsCSV(w, s) }

// WriteFailuresCSV writes the whole _failures.csv (2.12.1 columns), rows
// sorted by error key as Locust sorts them.
func WriteFailuresCSV(w io.Writer, s *Snapshot) error { return Format{}.WriteFailuresCSV(w, s) }

// WriteExceptionsCSV writes the whole _exceptions.csv.
func WriteExceptionsCSV(w io.Writer, s *Snapshot) error { return Format{}.WriteExceptionsCSV(w, s) }

// WriteStatsCSV is the package-level WriteStatsCSV with this format.
func (f Format) WriteStatsCSV(w io.Writer, s *Snapshot) error {
	exact := f.useExact(s)
	r := new(csvRow).header(StatsCSVHeader...)
	row := func(e *EntryStats) {
		r.field(e.Method).field(e.Name).int(e.NumRequests).int(e.NumFailures).
			field(e.MedianRepr()).float(e.AvgResponseTime()).orZero(e.MinResponseTime).
			orZero(&e.MaxResponseTime).avgContent(e).float(e.TotalRPS).float(e.TotalFailPerSec)
		f.percentileFields(r, e, false, exact).end()
	}
	for i := range s.Entries {
		row(&s.Entries[i])
	}
	row(&s.Total)
	_, err := w.Write(r.b)
	return err
}

// WriteFailuresCSV is the package-level WriteFailuresCSV with this format.
func (f Format) WriteFailuresCSV(w io.Writer, s *Snapshot) error {
	r := new(csvRow).header(FailuresCSVHeader...)
	errs := s.ErrorsByKey()
	for i := range errs {
		e := &errs[i]
		r.field(e.Method).field(e.Name).field(f.CSVText(e)).int(e.Occurrences).end()
	}
	_, err := w.Write(r.b)
	return err
}

// WriteExceptionsCSV is the package-level WriteExceptionsCSV with this
// format.
func (f Format) WriteExceptionsCSV(w io.Writer, s *Snapshot) error {
	r := new(csvRow).header(ExceptionsCSVHeader...)
	for _, x := range s.Exceptions {
		r.int(x.Count).field(x.Msg).field(x.Traceback).field(strings.Join(x.Nodes, ", ")).end()
	}
	_, err := w.Write(r.b)
	return err
}

// HistoryCSV writes _stats_history.csv: the header when created, then rows
// appended at every tick (Locust appends one every second, idle or not).
// It is not safe for concurrent use.
type HistoryCSV struct {
	w           io.Writer
	f           Format
	fullHistory bool
	buf         csvRow
}

// NewHistoryCSV writes the header to w and returns the writer. With
// fullHistory (--csv-full-history) every tick writes a row per entry before
// the Aggregated row, and all percentiles are the current (windowed) ones;
// otherwise only the Aggregated row, with cumulative percentiles.
func NewHistoryCSV(w io.Writer, fullHistory bool) (*HistoryCSV, error) {
	return Format{}.NewHistoryCSV(w, fullHistory)
}

// NewHistoryCSV is the package-level NewHistoryCSV with this format.
func (f Format) NewHistoryCSV(w io.Writer, fullHistory bool) (*HistoryCSV, error) {
	h := &HistoryCSV{w: w, f: f, fullHistory: fullHistory}
	if _, err := w.Write(new(csvRow).header(HistoryCSVHeader...).b); err != nil {
		return nil, err
	}
	return h, nil
}

// WriteRows appends the rows of one tick, stamped int(s.Time), with the
// given number of running users.
func (h *HistoryCSV) WriteRows(s *Snapshot, userCount int64) error {
	ts := int64(pyTime(s.Time))
	exact := h.f.useExact(s)
	r := &h.buf
	r.b = r.b[:0]
	row := func(e *EntryStats) {
		r.int(ts).int(userCount).field(e.Method).field(e.Name).
			field(pyFixed(e.CurrentRPS, 6)).field(pyFixed(e.CurrentFailPerSec, 6))
		h.f.percentileFields(r, e, h.fullHistory, exact)
		r.int(e.NumRequests).int(e.NumFailures).field(e.MedianRepr()).
			float(e.AvgResponseTime()).orZero(e.MinResponseTime).orZero(&e.MaxResponseTime).
			avgContent(e).end()
	}
	if h.fullHistory {
		for i := range s.Entries {
			row(&s.Entries[i])
		}
	}
	row(&s.Total)
	_, err := h.w.Write(r.b)
	return err
}
