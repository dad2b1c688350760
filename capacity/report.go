package capacity

import (
	"encoding/csv"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Param is one reported test parameter (RFC 9411 section 6.3 asks for every
// parameter of the test beside its result).
type Param struct{ Name, Value string }

// Report is one test's report: what ran, with which parameters, and the
// search's result.
type Report struct {
	// Test is the short name (`cicada bench TEST`).
	Test string
	// Title names the benchmark ("Maximum TCP connection establishment rate").
	Title string
	// RFC names the sections followed.
	RFC string
	// Unit is the load's unit ("connections/s").
	Unit string
	// Params are the test's parameters, in order.
	Params []Param
	// Result is the search's.
	Result Result
	// Latency, if set, is the trial run at a fraction of the found maximum
	// (the latency test), with LatencyFraction that fraction.
	Latency         *Trial
	LatencyFraction float64
}

// ms is a latency in milliseconds with microsecond precision.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func num2(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// WriteTable writes the report as a console table: the parameters, one row
// per trial and the outcome.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s)\n", r.Title, r.RFC)
	for _, p := range r.Params {
		fmt.Fprintf(&b, "  %-22s %s\n", p.Name, p.Value)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "#\tload (%s)\tachieved\tattempted\tfailed\t2nd round\tp50 ms\tp95 ms\tp99 ms\tverdict\t\n", r.Unit)
	row := func(name string, t *Trial) {
		second := "-"
		if t.SecondRound > 0 {
			second = fmt.Sprintf("%d/%d", t.SecondRound-t.SecondRoundFailed, t.SecondRound)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", name, num2(t.Load), num2(t.Achieved), t.Attempted, t.Failed,
			second, ms(t.P50), ms(t.P95), ms(t.P99), t.Verdict)
	}
	for i := range r.Result.Trials {
		row(strconv.Itoa(i+1), &r.Result.Trials[i])
	}
	if r.Latency != nil {
		row("latency", r.Latency)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("capacity: table: %w", err)
	}
	for i, t := range r.Result.Trials {
		if t.Reason != "" {
			fmt.Fprintf(&b, "  trial %d: %s\n", i+1, t.Reason)
		}
	}
	for _, l := range r.variantLines() { // report_variants.go
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "\nResult: %s (%d trials, search time %s)\n", r.Result.Summary(r.Unit), len(r.Result.Trials), r.Result.Elapsed.Round(time.Millisecond))
	if r.Latency != nil {
		fmt.Fprintf(&b, "Latency at %g%% of the maximum (%s %s): p50 %s ms, p95 %s ms, p99 %s ms, max %s ms (%s)\n",
			r.LatencyFraction*100, num2(r.Latency.Load), r.Unit, ms(r.Latency.P50), ms(r.Latency.P95), ms(r.Latency.P99), ms(r.Latency.Max), r.Latency.Verdict)
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("capacity: table: %w", err)
	}
	return nil
}

// CSVHeader is the header of WriteCSV's trials file.
var CSVHeader = []string{"Trial", "Test", "Unit", "Load", "Achieved", "Attempted", "Failed", "Second Round", "Second Round Failed",
	"Bytes", "Duration s", "p50 ms", "p95 ms", "p99 ms", "Max ms", "Verdict", "Reason", "TLS Full", "TLS Resumed", "TLS", "Mix"}

// WriteCSV writes one row per trial (the latency trial last, named
// "latency"), then a row "result" whose Load is the found maximum and whose
// Verdict is "found", "ceiling", "invalid" or "none", Reason the summary.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(CSVHeader)
	row := func(name string, t *Trial) {
		_ = cw.Write(append([]string{name, r.Test, r.Unit, num(t.Load), num(t.Achieved), strconv.FormatInt(t.Attempted, 10), strconv.FormatInt(t.Failed, 10),
			strconv.FormatInt(t.SecondRound, 10), strconv.FormatInt(t.SecondRoundFailed, 10), strconv.FormatInt(t.Bytes, 10),
			strconv.FormatFloat(t.Duration.Seconds(), 'f', 3, 64), ms(t.P50), ms(t.P95), ms(t.P99), ms(t.Max), t.Verdict.String(), t.Reason}, variantCells(t)...))
	}
	for i := range r.Result.Trials {
		row(strconv.Itoa(i+1), &r.Result.Trials[i])
	}
	if r.Latency != nil {
		row("latency", r.Latency)
	}
	_ = cw.Write([]string{"result", r.Test, r.Unit, num(r.Result.Max), "", "", "", "", "", "",
		strconv.FormatFloat(r.Result.Elapsed.Seconds(), 'f', 3, 64), "", "", "", "", r.Result.Outcome(), r.Result.Summary(r.Unit), "", "", "", ""})
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("capacity: csv: %w", err)
	}
	return nil
}

// Outcome is "found", "ceiling", "invalid" or "none".
func (r *Result) Outcome() string {
	switch {
	case r.Stopped != "":
		return "stopped"
	case r.Invalid != "":
		return "invalid"
	case r.Ceiling:
		return "ceiling"
	case r.Found:
		return "found"
	}
	return "none"
}

// chart geometry of the HTML page's SVG.
const (
	chartW, chartH          = 640, 280
	chartLeft, chartBottom  = 70, 40
	chartTop, chartRightPad = 20, 20
)

type point struct {
	X, Y    float64
	N       int
	Load    string
	Verdict string
	Color   string
}

type htmlData struct {
	*Report
	Summary, Outcome, Elapsed string
	Variants                  []string
	Rows                      []htmlRow
	W, H                      int
	Points                    []point
	Path                      string
	MaxY                      float64
	MaxLabel                  string
	HasMax                    bool
	Ticks                     []tick
	X0, X1, Y0, Y1            float64
}

type htmlRow struct {
	N                                     string
	T                                     *Trial
	Load, Achieved, P50, P95, P99, Second string
}

type tick struct {
	Y     float64
	Label string
}

var verdictColor = map[Verdict]string{Pass: "#2a9d4a", Fail: "#d03030", Invalid: "#e09000"}

// WriteHTML writes the report as an HTML page of its own: parameters, the
// trials, the outcome and an SVG chart of the search (load per trial, colour
// by verdict, the found maximum as a dashed line). All text is escaped
// (html/template).
func (r *Report) WriteHTML(w io.Writer) error {
	d := htmlData{Report: r, Summary: r.Result.Summary(r.Unit), Outcome: r.Result.Outcome(),
		Elapsed: r.Result.Elapsed.Round(time.Millisecond).String(), W: chartW, H: chartH, Variants: r.variantLines()}
	trials := r.Result.Trials
	top := r.Result.Max
	for _, t := range trials {
		top = math.Max(top, t.Load)
	}
	if top <= 0 {
		top = 1
	}
	top *= 1.1
	x0, x1 := float64(chartLeft), float64(chartW-chartRightPad)
	y0, y1 := float64(chartH-chartBottom), float64(chartTop)
	d.X0, d.X1, d.Y0, d.Y1 = x0, x1, y0, y1
	yOf := func(v float64) float64 { return y0 - (y0-y1)*v/top }
	n := len(trials)
	var path strings.Builder
	for i, t := range trials {
		x := x0 + (x1-x0)*(float64(i)+0.5)/float64(max(n, 1))
		y := yOf(t.Load)
		d.Points = append(d.Points, point{X: x, Y: y, N: i + 1, Load: num2(t.Load), Verdict: t.Verdict.String(), Color: verdictColor[t.Verdict]})
		if i == 0 {
			fmt.Fprintf(&path, "M%.1f %.1f", x, y)
		} else {
			fmt.Fprintf(&path, " L%.1f %.1f", x, y)
		}
	}
	d.Path = path.String()
	for k := 0; k <= 4; k++ {
		v := top / 1.1 * float64(k) / 4
		d.Ticks = append(d.Ticks, tick{Y: yOf(v), Label: strconv.FormatFloat(v, 'g', 4, 64)})
	}
	if r.Result.Max > 0 {
		d.HasMax, d.MaxY, d.MaxLabel = true, yOf(r.Result.Max), "max "+num2(r.Result.Max)
	}
	row := func(name string, t *Trial) htmlRow {
		second := "-"
		if t.SecondRound > 0 {
			second = fmt.Sprintf("%d/%d", t.SecondRound-t.SecondRoundFailed, t.SecondRound)
		}
		return htmlRow{N: name, T: t, Load: num2(t.Load), Achieved: num2(t.Achieved), P50: ms(t.P50), P95: ms(t.P95), P99: ms(t.P99), Second: second}
	}
	for i := range trials {
		d.Rows = append(d.Rows, row(strconv.Itoa(i+1), &trials[i]))
	}
	if r.Latency != nil {
		d.Rows = append(d.Rows, row("latency", r.Latency))
	}
	if err := htmlPage.Execute(w, d); err != nil {
		return fmt.Errorf("capacity: html: %w", err)
	}
	return nil
}

var htmlPage = template.Must(template.New("bench").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>cicada bench: {{.Title}}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#eee}.pass{color:#2a9d4a}.fail{color:#d03030}.invalid{color:#e09000}td.l{text-align:left}</style></head>
<body>
<section id="capacity-{{.Test}}">
<h2>{{.Title}}</h2>
<p>Methodology: {{.RFC}}. Unit: {{.Unit}}.</p>
<p id="outcome" class="{{.Outcome}}"><b>Result:</b> {{.Summary}} ({{len .Result.Trials}} trials, search time {{.Elapsed}})</p>
<h3>Parameters</h3>
<table>{{range .Params}}<tr><th class="l">{{.Name}}</th><td class="l">{{.Value}}</td></tr>{{end}}</table>
<h3>Search</h3>
<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" role="img" aria-label="load per trial">
<line x1="{{.X0}}" y1="{{.Y0}}" x2="{{.X1}}" y2="{{.Y0}}" stroke="#888"/>
<line x1="{{.X0}}" y1="{{.Y0}}" x2="{{.X0}}" y2="{{.Y1}}" stroke="#888"/>
{{range .Ticks}}<text x="{{$.X0}}" y="{{.Y}}" dx="-4" text-anchor="end" font-size="11">{{.Label}}</text>
{{end}}<text x="{{.X0}}" y="{{.Y1}}" dy="-6" font-size="11">{{.Unit}}</text>
{{if .HasMax}}<line x1="{{.X0}}" y1="{{.MaxY}}" x2="{{.X1}}" y2="{{.MaxY}}" stroke="#2a9d4a" stroke-dasharray="6 4"/>
<text x="{{.X1}}" y="{{.MaxY}}" dy="-4" text-anchor="end" font-size="11">{{.MaxLabel}}</text>
{{end}}<path d="{{.Path}}" fill="none" stroke="#aaa"/>
{{range .Points}}<circle cx="{{.X}}" cy="{{.Y}}" r="5" fill="{{.Color}}"><title>trial {{.N}}: {{.Load}} {{.Verdict}}</title></circle>
<text x="{{.X}}" y="{{$.Y0}}" dy="16" text-anchor="middle" font-size="11">{{.N}}</text>
{{end}}<text x="{{.X1}}" y="{{.H}}" dy="-4" text-anchor="end" font-size="11"><tspan fill="#2a9d4a">&#9679; pass</tspan> <tspan fill="#d03030">&#9679; fail</tspan> <tspan fill="#e09000">&#9679; invalid (generator limit)</tspan></text>
</svg>
<h3>Trials</h3>
<table><tr><th>#</th><th>load</th><th>achieved</th><th>attempted</th><th>failed</th><th>2nd round</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>verdict</th><th>reason</th></tr>
{{range .Rows}}<tr><td>{{.N}}</td><td>{{.Load}}</td><td>{{.Achieved}}</td><td>{{.T.Attempted}}</td><td>{{.T.Failed}}</td><td>{{.Second}}</td><td>{{.P50}}</td><td>{{.P95}}</td><td>{{.P99}}</td><td class="{{.T.Verdict}}">{{.T.Verdict}}</td><td class="l">{{.T.Reason}}</td></tr>
{{end}}</table>
{{if .Variants}}<h3>TLS and traffic mix</h3>
<ul>{{range .Variants}}<li>{{.}}</li>{{end}}</ul>
{{end}}</section>
</body></html>
`))
