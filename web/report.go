package web

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/thresholds"
)

// ReportData is everything the HTML report shows.
type ReportData struct {
	// Status is the runner state at report time (host, locustfile, user
	// classes and their counts for the task ratios).
	Status Status
	// Snapshot is the final statistics.
	Snapshot *stats.Snapshot
	// History is the chart history; the charts section is omitted when it
	// is empty (as in Locust 2.12.1).
	History []HistoryPoint
	// ShowDownloadLink adds the "Download the Report" link (?download=1),
	// as the web UI's /stats/report does.
	ShowDownloadLink bool
	// Version is cicada's version, shown in the footer.
	Version string
	// Format lays out error texts (stats.Format.CSVText).
	Format stats.Format
	// Thresholds is the run's verdict (thresholds.go); nil omits the
	// section.
	Thresholds *thresholds.Verdict
}

// reportPercentiles are the columns of the report's response-time table.
var reportPercentiles = []float64{0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0}

type reportRow struct {
	Method, Name           string
	Requests, Fails        int64
	Avg, Min, Max, AvgSize int64
	RPS, FailsPerSec       string
	Percentiles            []int64
}

type reportError struct {
	Method, Name, Error string
	Occurrences         int64
}

type reportView struct {
	Title, Locustfile, Host, Version string
	Start, End, Duration             string
	ShowDownloadLink                 bool
	Requests                         []reportRow
	PercentileHeaders                []string
	Failures                         []reportError
	Exceptions                       []stats.ExceptionStats
	HasHistory                       bool
	HistoryJSON                      template.JS
	CSS                              template.CSS
	JS                               template.JS
	TasksPerClass, TasksTotal        template.HTML
	Thresholds                       []reportThreshold
	ThresholdsPassed                 bool
	Phases                           []reportPhase // phases.go
	Drops                            []reportDrop  // reportdrops.go
}

// WriteReport writes the self-contained HTML report (Locust 2.12.1
// locust/html.py, get_html_report): request statistics, response-time
// percentiles, failures, exceptions, charts of the history (uPlot, inlined)
// and the final task ratios. It works offline: every script, style and
// datum is inline.
// cmd uses it for --html; the web Server serves it at /stats/report.
func WriteReport(w io.Writer, d ReportData) error {
	v, err := buildReportView(d)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("web: report: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func unixTime(sec float64) time.Time {
	return time.UnixMicro(int64(math.Round(sec * 1e6))).UTC()
}

func buildReportView(d ReportData) (*reportView, error) {
	snap := d.Snapshot
	if snap == nil {
		snap = &stats.Snapshot{}
	}
	a := assets()
	js, err := fs.ReadFile(a, "report.js")
	if err != nil {
		return nil, fmt.Errorf("web: report assets: %w", err)
	}
	css, err := fs.ReadFile(a, "report.css")
	if err != nil {
		return nil, fmt.Errorf("web: report assets: %w", err)
	}
	v := &reportView{
		Title:            "cicada Test Report",
		Locustfile:       d.Status.Locustfile,
		Host:             d.Status.Host,
		Version:          d.Version,
		ShowDownloadLink: d.ShowDownloadLink,
		CSS:              template.CSS(reportCSS + string(css)),
		JS:               template.JS(js),
	}
	if v.Locustfile != "" {
		v.Title = "Test Report for " + v.Locustfile
	}
	start := unixTime(snap.Total.StartTime)
	end := snap.Time.UTC()
	if snap.Total.LastRequestTimestamp != nil {
		end = unixTime(*snap.Total.LastRequestTimestamp)
	}
	if snap.Total.StartTime > 0 {
		const layout = "2006-01-02 15:04:05 UTC"
		v.Start, v.End = start.Format(layout), end.Format(layout)
		v.Duration = end.Sub(start).Round(time.Second).String()
	}
	row := func(e *stats.EntryStats) reportRow {
		r := reportRow{
			Method: e.Method, Name: e.Name, Requests: e.NumRequests, Fails: e.NumFailures,
			Avg: int64(e.AvgResponseTime()), Max: int64(e.MaxResponseTime),
			AvgSize:     int64(e.AvgContentLength()),
			RPS:         strconv.FormatFloat(e.TotalRPS, 'f', 1, 64),
			FailsPerSec: strconv.FormatFloat(e.TotalFailPerSec, 'f', 1, 64),
		}
		if e.MinResponseTime != nil {
			r.Min = int64(*e.MinResponseTime)
		}
		for _, p := range reportPercentiles {
			r.Percentiles = append(r.Percentiles, e.Percentile(p))
		}
		return r
	}
	for i := range snap.Entries {
		v.Requests = append(v.Requests, row(&snap.Entries[i]))
	}
	total := row(&snap.Total)
	total.Name = "Aggregated"
	v.Requests = append(v.Requests, total)
	for _, p := range reportPercentiles {
		v.PercentileHeaders = append(v.PercentileHeaders, stats.ReadablePercentile(p)+"ile (ms)")
	}
	for i := range snap.Errors {
		e := &snap.Errors[i]
		v.Failures = append(v.Failures, reportError{Method: e.Method, Name: e.Name, Error: d.Format.CSVText(e), Occurrences: e.Occurrences})
	}
	v.Exceptions = snap.Exceptions
	if len(d.History) > 0 {
		var jw jsonWriter
		appendHistoryJSON(&jw, d.History, 0, true)
		v.HasHistory = true
		v.HistoryJSON = template.JS(jw.bytes())
	}
	v.TasksPerClass, v.TasksTotal = ratioHTML(d.Status, false), ratioHTML(d.Status, true)
	v.Thresholds, v.ThresholdsPassed = reportThresholds(d.Thresholds)
	v.Phases = reportPhases(snap)
	v.Drops = reportDrops(snap)
	return v, nil
}

// reportClassCounts returns the users per class the report's final ratios
// use: FinalUserClassesCount once the test is stopping or stopped (and
// that is known), else UserClassesCount (Locust 2.12.1 html.py,
// get_html_report).
func reportClassCounts(st Status) map[string]int64 {
	switch st.State {
	case protocol.StateStopping, protocol.StateStopped:
		if sumCounts(st.FinalUserClassesCount) > 0 {
			return st.FinalUserClassesCount
		}
	}
	return st.UserClassesCount
}

func sumCounts(m map[string]int64) int64 {
	var sum int64
	for _, n := range m {
		sum += n
	}
	return sum
}

// ratioHTML renders the task-ratio tree of /tasks as nested lists, with
// the user counts of reportClassCounts.
func ratioHTML(st Status, total bool) template.HTML {
	var b strings.Builder
	counts := reportClassCounts(st)
	sum := sumCounts(counts)
	if sum == 0 {
		sum = 1
	}
	var walk func(tasks []Task, parent float64)
	walk = func(tasks []Task, parent float64) {
		var tw int64
		for _, t := range tasks {
			if t.Weight > 0 {
				tw += int64(t.Weight)
			}
		}
		b.WriteString("<ul>")
		for _, t := range tasks {
			if t.Weight <= 0 {
				continue
			}
			r := float64(t.Weight) * parent / float64(tw)
			fmt.Fprintf(&b, "<li>%.1f%% %s", r*100, template.HTMLEscapeString(t.Name))
			if len(t.Tasks) > 0 {
				walk(t.Tasks, r)
			}
			b.WriteString("</li>")
		}
		b.WriteString("</ul>")
	}
	b.WriteString("<ul>")
	for _, c := range st.UserClasses {
		ratio := float64(counts[c.Name]) / float64(sum)
		fmt.Fprintf(&b, "<li>%.1f%% %s", ratio*100, template.HTMLEscapeString(c.Name))
		parent := 1.0
		if total {
			parent = ratio
		}
		walk(c.Tasks, parent)
		b.WriteString("</li>")
	}
	b.WriteString("</ul>")
	return template.HTML(b.String())
}

// WriteReport writes the report for the server's runner and history.
//
// The final task ratios use the user counts of the moment the test began
// stopping, as Locust's do (see reportClassCounts); a runner that does not
// report them falls back to the last non-empty counts the history sampler
// saw.
func (s *Server) WriteReport(w io.Writer, showDownloadLink bool) error {
	st := s.runner.Status()
	if sumCounts(reportClassCounts(st)) == 0 {
		if last := s.history.LastUserClassesCount(); last != nil {
			st.UserClassesCount = last
		}
	}
	return WriteReport(w, ReportData{
		Status:           st,
		Snapshot:         s.runner.Snapshot(),
		History:          s.history.Points(),
		ShowDownloadLink: showDownloadLink,
		Version:          s.opts.Version,
		Format:           s.opts.Format,
	})
}

// handleReport serves GET /stats/report; ?download=1 (any non-empty value)
// drops the download link and adds Content-Disposition, as Locust does.
func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
	download := r.URL.Query().Get("download") != ""
	var buf bytes.Buffer
	if err := s.WriteReport(&buf, !download); err != nil {
		s.log.Error("web: report", "err", err)
		writeText(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP(buf.Bytes()))
	if download {
		h.Set("Content-Disposition", "attachment;filename=report_"+strconv.FormatInt(s.opts.Now().Unix(), 10)+".html")
	}
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

// reportCSS styles the report. Table rules apply to table.grid only, so
// that uPlot's legend (a table too) keeps its own layout inside the chart
// card. The dark variant follows prefers-color-scheme.
const reportCSS = `
:root{--bg:#f6f7f9;--fg:#1d2330;--muted:#667085;--line:#d9dde5;--card:#fff;--head:#eef0f4;--accent:#0a7d5a;--grid:rgba(0,0,0,.08);color-scheme:light}
@media (prefers-color-scheme:dark){:root{--bg:#14171f;--fg:#e4e7ee;--muted:#98a2b3;--line:#2e3442;--card:#1c2029;--head:#252a36;--accent:#2fb386;--grid:rgba(255,255,255,.1);color-scheme:dark}}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:14px;color:var(--fg);margin:0;background:var(--bg)}
a{color:var(--accent)}
.container{max-width:1200px;margin:0 auto;padding:20px}
h1{margin:0 0 6px}h2{margin-top:32px;border-bottom:2px solid var(--accent);padding-bottom:4px}
.info p{margin:2px 0}.info span{color:var(--muted)}
table.grid{width:100%;border-collapse:collapse;background:var(--card)}
.grid th,.grid td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
.grid th{background:var(--head)}.grid td.num,.grid th.num{text-align:right}
.grid tr.total td{font-weight:700;border-top:2px solid var(--fg)}
.grid td.pre{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px}
.chart{background:var(--card);margin-bottom:14px;padding:6px;border:1px solid var(--line);overflow-x:auto}
.chart[hidden]{display:none}
.chart .u-legend{max-width:100%}
.ratio{display:flex;gap:40px}.ratio ul{list-style:none;padding-left:16px}
footer{color:var(--muted);font-size:12px;margin-top:30px}
`

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"inc":  func(i int) int { return i + 1 },
	"join": func(s []string) string { return strings.Join(s, ", ") },
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>{{.CSS}}</style>
</head>
<body>
<div class="container">
<h1>cicada Test Report</h1>
<div class="info">
{{if .Start}}<p><span>During:</span> {{.Start}} – {{.End}} ({{.Duration}})</p>{{end}}
<p><span>Target Host:</span> {{if .Host}}{{.Host}}{{else}}None{{end}}</p>
<p><span>Script:</span> {{.Locustfile}}</p>
{{if .ShowDownloadLink}}<p><a href="?download=1">Download the Report</a></p>{{end}}
</div>

<h2>Request Statistics</h2>
<table class="grid" id="request-statistics">
<thead><tr><th>Method</th><th>Name</th><th class="num"># Requests</th><th class="num"># Fails</th><th class="num">Average (ms)</th><th class="num">Min (ms)</th><th class="num">Max (ms)</th><th class="num">Average size (bytes)</th><th class="num">RPS</th><th class="num">Failures/s</th></tr></thead>
<tbody>
{{- $n := len .Requests}}{{range $i, $r := .Requests}}
<tr{{if eq (inc $i) $n}} class="total"{{end}}><td>{{$r.Method}}</td><td>{{$r.Name}}</td><td class="num">{{$r.Requests}}</td><td class="num">{{$r.Fails}}</td><td class="num">{{$r.Avg}}</td><td class="num">{{$r.Min}}</td><td class="num">{{$r.Max}}</td><td class="num">{{$r.AvgSize}}</td><td class="num">{{$r.RPS}}</td><td class="num">{{$r.FailsPerSec}}</td></tr>
{{- end}}
</tbody>
</table>

<h2>Response Time Statistics</h2>
<table class="grid" id="response-time-statistics">
<thead><tr><th>Method</th><th>Name</th>{{range .PercentileHeaders}}<th class="num">{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range $i, $r := .Requests}}
<tr{{if eq (inc $i) $n}} class="total"{{end}}><td>{{$r.Method}}</td><td>{{$r.Name}}</td>{{range $r.Percentiles}}<td class="num">{{.}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>

{{if .Thresholds}}
<h2>Thresholds: {{if .ThresholdsPassed}}passed{{else}}FAILED{{end}}</h2>
<table class="grid" id="thresholds">
<thead><tr><th>Threshold</th><th class="num">Measured</th><th>Result</th><th>Note</th></tr></thead>
<tbody>
{{- range .Thresholds}}
<tr><td>{{.Threshold}}</td><td class="num">{{.Measured}}</td><td>{{.Result}}</td><td>{{.Note}}</td></tr>
{{- end}}
</tbody>
</table>
{{end}}

{{if .Drops}}
<h2>Dropped Iterations</h2>
<p>Arrival-rate iterations that were due while every user of their worker was busy, so they never ran. A dropped iteration is counted under the first request of the task it would have run.</p>
<table class="grid" id="dropped-iterations">
<thead><tr><th>Method</th><th>Name</th><th class="num">Dropped</th><th class="num">Share</th></tr></thead>
<tbody>
{{- range .Drops}}
<tr{{if .Total}} class="total"{{end}}><td>{{.Method}}</td><td>{{.Name}}</td><td class="num">{{.Dropped}}</td><td class="num">{{.Share}}</td></tr>
{{- end}}
</tbody>
</table>
{{end}}

{{if .Phases}}
<h2>Request Phases</h2>
<table class="grid" id="phases-statistics">
<thead><tr><th>Method</th><th>Name</th><th>Phase</th><th class="num">Count</th><th class="num">Average (ms)</th><th class="num">Min (ms)</th><th class="num">50%ile (ms)</th><th class="num">95%ile (ms)</th><th class="num">99%ile (ms)</th><th class="num">Max (ms)</th></tr></thead>
<tbody>
{{- range .Phases}}
<tr{{if .Total}} class="total"{{end}}><td>{{.Method}}</td><td>{{.Name}}</td><td>{{.Phase}}</td><td class="num">{{.Count}}</td><td class="num">{{.Avg}}</td><td class="num">{{.Min}}</td><td class="num">{{.P50}}</td><td class="num">{{.P95}}</td><td class="num">{{.P99}}</td><td class="num">{{.Max}}</td></tr>
{{- end}}
</tbody>
</table>
{{end}}

{{if .Failures}}
<h2>Failures Statistics</h2>
<table class="grid" id="failures-statistics">
<thead><tr><th>Method</th><th>Name</th><th>Error</th><th class="num">Occurrences</th></tr></thead>
<tbody>
{{- range .Failures}}
<tr><td>{{.Method}}</td><td>{{.Name}}</td><td class="pre">{{.Error}}</td><td class="num">{{.Occurrences}}</td></tr>
{{- end}}
</tbody>
</table>
{{end}}

{{if .Exceptions}}
<h2>Exceptions Statistics</h2>
<table class="grid" id="exceptions-statistics">
<thead><tr><th class="num">Count</th><th>Message</th><th>Traceback</th><th>Nodes</th></tr></thead>
<tbody>
{{- range .Exceptions}}
<tr><td class="num">{{.Count}}</td><td>{{.Msg}}</td><td class="pre">{{.Traceback}}</td><td>{{join .Nodes}}</td></tr>
{{- end}}
</tbody>
</table>
{{end}}

{{if .HasHistory}}
<h2>Charts</h2>
<div class="chart" id="chart-rps"></div>
<div class="chart" id="chart-rt"></div>
<div class="chart" id="chart-users"></div>
<div class="chart" id="chart-conn" hidden></div>
<div class="chart" id="chart-connrate" hidden></div>
<div class="chart" id="chart-connerr" hidden></div>
<script type="application/json" id="report-history">{{.HistoryJSON}}</script>
{{end}}

<h2>Final ratio</h2>
<div class="ratio">
<div><h3>Ratio per User class</h3>{{.TasksPerClass}}</div>
<div><h3>Total ratio</h3>{{.TasksTotal}}</div>
</div>

<footer>Generated by cicada {{.Version}}</footer>
</div>
<script>{{.JS}}</script>
</body>
</html>
`))
