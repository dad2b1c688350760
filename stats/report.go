package stats

import (
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/cicada-load/cicada/internal/pyrepr"
)

// DefaultNameWidth is Locust's STATS_NAME_WIDTH when stdout is not a
// terminal.
const DefaultNameWidth = 80

const typeWidth = 8

// DefaultMaxRows is the most entry or error rows a console table prints
// (Format.MaxRows).
const DefaultMaxRows = 1000

// TerminalNameWidth returns Locust's STATS_NAME_WIDTH for a terminal of the
// given number of columns, max(min(columns−80, 80), 0), in the encoding of
// Format.NameWidth (−1 stands for 0).
func TerminalNameWidth(columns int) int {
	w := max(min(columns-80, 80), 0)
	if w == 0 {
		return -1
	}
	return w
}

// Format lays out reports. The zero value prints exactly what a Locust
// 2.12.1 master prints when stdout is not a terminal.
type Format struct {
	// NameWidth is Locust's STATS_NAME_WIDTH: the percentile table's name
	// column; the stats table's is NameWidth−4. If zero, DefaultNameWidth
	// is used; a negative value means 0.
	NameWidth int
	// Standalone formats error texts as a Locust standalone process does
	// (the text as recorded) instead of as a 2.12.1 master does for
	// errors received from workers (repr of the text, CatchResponseError
	// unwrapped in the error report). See ErrorStats.
	Standalone bool
	// Exact shows exact percentiles instead of Locust's bucket percentiles
	// (console percentile table, cumulative CSV percentiles) when the
	// snapshot is ExactComplete; the table title then reads "(exact)".
	// Current (windowed) percentiles always come from Locust's buckets.
	Exact bool
	// MaxRows is the most entry rows the stats and percentile tables and
	// the most error rows the error report print; a line then says how
	// many were left out (the CSV writers and the snapshot keep every
	// row). If zero, DefaultMaxRows is used; a negative value means no
	// limit. Locust prints every row (100,000 names made a master print
	// 259 MB of tables in 30 s); within the limit the output is Locust's.
	MaxRows int
}

func (f Format) maxRows() int {
	switch {
	case f.MaxRows == 0:
		return DefaultMaxRows
	case f.MaxRows < 0:
		return math.MaxInt
	}
	return f.MaxRows
}

// appendOmitted appends the line that stands for n rows left out.
func (f Format) appendOmitted(b []byte, n int, what string) []byte {
	b = append(b, "... "...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, " more "...)
	b = append(b, what...)
	b = append(b, " not shown (the console prints "...)
	b = strconv.AppendInt(b, int64(f.maxRows()), 10)
	b = append(b, "; the web UI and the CSV files have them all)\n"...)
	return b
}

func (f Format) nameWidth() int {
	switch {
	case f.NameWidth == 0:
		return DefaultNameWidth
	case f.NameWidth < 0:
		return 0
	}
	return f.NameWidth
}

// WriteStatsTable writes Locust's stats table followed by an empty line, as
// print_stats logs it: current (sliding-window) rates when current is true
// (the periodic table), total rates otherwise (the final summary).
func WriteStatsTable(w io.Writer, s *Snapshot, current bool) error {
	return Format{}.WriteStatsTable(w, s, current)
}

// WritePercentileTable writes Locust's "Response time percentiles" table
// followed by an empty line.
func WritePercentileTable(w io.Writer, s *Snapshot) error {
	return Format{}.WritePercentileTable(w, s)
}

// WriteErrorReport writes Locust's error report (ending with an empty line),
// or nothing when there are no errors.
func WriteErrorReport(w io.Writer, s *Snapshot) error {
	return Format{}.WriteErrorReport(w, s)
}

// absInt is the width Python's "%-<n>s" pads to for a possibly negative n
// ("%--4s" left-justifies in 4), as Locust's stats table does when
// STATS_NAME_WIDTH < 4.
func absInt(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func dashes(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, '-')
	}
	return b
}

func appendIntW(b []byte, v int64, width int) []byte {
	return padLeft(b, strconv.FormatInt(v, 10), width)
}

// WriteStatsTable is the package-level WriteStatsTable with this format.
func (f Format) WriteStatsTable(w io.Writer, s *Snapshot, current bool) error {
	nw := f.nameWidth() - typeWidth + 4
	pad := absInt(nw)
	var b []byte
	b = padRight(b, "Type", typeWidth)
	b = append(b, ' ')
	b = padRight(b, "Name", pad)
	b = append(b, ' ')
	b = padLeft(b, "# reqs", 7)
	b = append(b, ' ')
	b = padLeft(b, "# fails", 12)
	b = append(b, " |"...)
	b = padLeft(b, "Avg", 7)
	b = append(b, ' ')
	b = padLeft(b, "Min", 7)
	b = append(b, ' ')
	b = padLeft(b, "Max", 7)
	b = padLeft(b, "Med", 7)
	b = append(b, " | "...)
	b = padLeft(b, "req/s", 7)
	b = append(b, ' ')
	b = padLeft(b, "failures/s", 11)
	b = append(b, '\n')
	sep := dashes(nil, typeWidth)
	sep = append(sep, '|')
	sep = dashes(sep, nw)
	for _, n := range []int{7, 13, 7, 7, 7, 7, 8, 11} {
		sep = append(sep, '|')
		sep = dashes(sep, n)
	}
	sep = append(sep, '\n')
	b = append(b, sep...)
	for i := range s.Entries {
		if i == f.maxRows() {
			b = f.appendOmitted(b, len(s.Entries)-i, "entries")
			break
		}
		b = statsRow(b, &s.Entries[i], pad, current)
	}
	b = append(b, sep...)
	b = statsRow(b, &s.Total, pad, current)
	b = append(b, '\n')
	_, err := w.Write(b)
	return err
}

// statsRow is Locust's StatsEntry.to_string.
func statsRow(b []byte, e *EntryStats, pad int, current bool) []byte {
	typ := ""
	if e.Method != "" {
		typ = e.Method + " "
	}
	b = padRight(b, typ, typeWidth)
	b = append(b, ' ')
	b = padRight(b, e.Name, pad)
	b = append(b, ' ')
	b = appendIntW(b, e.NumRequests, 7)
	b = append(b, ' ')
	fails := strconv.FormatInt(e.NumFailures, 10) + "(" + pyFixed(e.FailRatio()*100, 2) + "%)"
	b = padLeft(b, fails, 12)
	b = append(b, " |"...)
	var mn float64
	if e.MinResponseTime != nil {
		mn = *e.MinResponseTime
	}
	b = appendIntW(b, pyTrunc(e.AvgResponseTime()), 7)
	b = append(b, ' ')
	b = appendIntW(b, pyTrunc(mn), 7)
	b = append(b, ' ')
	b = appendIntW(b, pyTrunc(e.MaxResponseTime), 7)
	b = appendIntW(b, pyTrunc(e.Median()), 7)
	b = append(b, " | "...)
	rps, fps := e.TotalRPS, e.TotalFailPerSec
	if current {
		rps, fps = e.CurrentRPS, e.CurrentFailPerSec
	}
	b = padLeft(b, pyFixed(rps, 2), 7)
	b = append(b, ' ')
	b = padLeft(b, pyFixed(fps, 2), 11)
	return append(b, '\n')
}

// percentileValue returns the cumulative percentile shown for e.
func (f Format) percentileValue(e *EntryStats, p float64, exact bool) int64 {
	if exact {
		if ms, ok := e.ExactPercentile(p); ok {
			return pyTrunc(ms)
		}
		return 0
	}
	return e.Percentile(p)
}

func (f Format) useExact(s *Snapshot) bool { return f.Exact && s.ExactComplete() }

// WritePercentileTable is the package-level WritePercentileTable with this
// format.
func (f Format) WritePercentileTable(w io.Writer, s *Snapshot) error {
	nw := f.nameWidth()
	exact := f.useExact(s)
	var b []byte
	if exact {
		b = append(b, "Response time percentiles (exact)\n"...)
	} else {
		b = append(b, "Response time percentiles (approximated)\n"...)
	}
	b = padRight(b, "Type", typeWidth)
	b = append(b, ' ')
	b = padRight(b, "Name", nw)
	b = append(b, ' ')
	for i, p := range PercentilesToReport {
		if i == 0 {
			b = padLeft(b, ReadablePercentile(p), 8)
		} else {
			b = append(b, ' ')
			b = padLeft(b, ReadablePercentile(p), 6)
		}
	}
	b = append(b, ' ')
	b = padLeft(b, "# reqs", 6)
	b = append(b, '\n')
	sep := dashes(nil, typeWidth)
	sep = append(sep, '|')
	sep = dashes(sep, nw)
	sep = append(sep, '|')
	sep = dashes(sep, 8)
	for range PercentilesToReport {
		sep = append(sep, '|')
		sep = dashes(sep, 6)
	}
	sep = append(sep, '\n')
	b = append(b, sep...)
	row := func(e *EntryStats) {
		b = padRight(b, e.Method, typeWidth)
		b = append(b, ' ')
		b = padRight(b, e.Name, nw)
		b = append(b, ' ')
		for i, p := range PercentilesToReport {
			v := f.percentileValue(e, p, exact)
			if i == 0 {
				b = appendIntW(b, v, 8)
			} else {
				b = append(b, ' ')
				b = appendIntW(b, v, 6)
			}
		}
		b = append(b, ' ')
		b = appendIntW(b, e.NumRequests, 6)
		b = append(b, '\n')
	}
	shown, limit := 0, f.maxRows()
	for i := range s.Entries {
		if len(s.Entries[i].buckets) == 0 {
			continue
		}
		if shown == limit {
			left := 0
			for j := i; j < len(s.Entries); j++ {
				if len(s.Entries[j].buckets) > 0 {
					left++
				}
			}
			b = f.appendOmitted(b, left, "entries")
			break
		}
		row(&s.Entries[i])
		shown++
	}
	b = append(b, sep...)
	if len(s.Total.buckets) > 0 {
		row(&s.Total)
	}
	b = append(b, '\n')
	_, err := w.Write(b)
	return err
}

// ReportText returns the error as the console error report shows it:
// "<method> <name>: <error>", where a 2.12.1 master shows an error received
// from a worker as its repr ("'...'" or "\"...\""), except that a
// CatchResponseError(...) wrapper is stripped; standalone Locust shows the
// text as recorded.
func (f Format) ReportText(e *ErrorStats) string {
	text := e.Error
	if !f.Standalone {
		const wrap = "CatchResponseError("
		if strings.HasPrefix(text, wrap) {
			text = text[len(wrap):max(len(text)-1, len(wrap))]
		} else {
			text = pyrepr.String(text)
		}
	}
	return e.Method + " " + e.Name + ": " + text
}

// CSVText returns the error as the failures CSV shows it: Locust's
// parse_error, which on a 2.12.1 master is the masked repr of the received
// text and standalone the masked text.
func (f Format) CSVText(e *ErrorStats) string {
	if f.Standalone {
		return maskAddress(e.Error)
	}
	return maskAddress(pyrepr.String(e.Error))
}

// WriteErrorReport is the package-level WriteErrorReport with this format.
func (f Format) WriteErrorReport(w io.Writer, s *Snapshot) error {
	if len(s.Errors) == 0 {
		return nil
	}
	var b []byte
	b = append(b, "Error report\n"...)
	b = padRight(b, "# occurrences", 18)
	b = append(b, ' ')
	b = padRight(b, "Error", 100)
	b = append(b, '\n')
	sep := dashes(nil, 18)
	sep = append(sep, '|')
	sep = dashes(sep, 80+f.nameWidth()-19)
	sep = append(sep, '\n')
	b = append(b, sep...)
	for i := range s.Errors {
		if i == f.maxRows() {
			b = f.appendOmitted(b, len(s.Errors)-i, "errors")
			break
		}
		b = padRight(b, strconv.FormatInt(s.Errors[i].Occurrences, 10), 18)
		b = append(b, ' ')
		b = padRight(b, f.ReportText(&s.Errors[i]), 100)
		b = append(b, '\n')
	}
	b = append(b, sep...)
	b = append(b, '\n')
	_, err := w.Write(b)
	return err
}
