package thresholds

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// formatValue renders a measured value or limit in the metric's unit.
func formatValue(m Metric, v float64) string {
	switch m {
	case Percentile, Avg:
		return strconv.FormatFloat(v, 'f', 2, 64) + " ms"
	case FailRatio:
		return strconv.FormatFloat(v*100, 'f', 2, 64) + "%"
	case RPS:
		return strconv.FormatFloat(v, 'f', 2, 64) + "/s"
	case Dropped:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Measured renders the measured value ("n/a" without one).
func (r Result) MeasuredString() string {
	if !r.HasValue {
		return "n/a"
	}
	return formatValue(r.Threshold.Metric, r.Measured)
}

// Status is "pass" or "FAIL".
func (r Result) Status() string {
	if r.Passed {
		return "pass"
	}
	return "FAIL"
}

// WriteTable writes the verdict as the console table printed at the end
// of a run:
//
//	Thresholds                                          Measured        Result
//	------------------------------------------------------------------------
//	p99<500ms                                          12.40 ms          pass
//	fail_ratio<1%                                        3.20%           FAIL
//	------------------------------------------------------------------------
//	Thresholds: 1 of 2 failed
//
// A note follows its row, indented. Nothing is written without
// thresholds.
func WriteTable(w io.Writer, v Verdict) error {
	if len(v.Results) == 0 {
		return nil
	}
	width := len("Thresholds")
	for _, r := range v.Results {
		width = max(width, len(r.Threshold.String()))
	}
	width = min(width, 100)
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s %16s %7s\n", width, "Thresholds", "Measured", "Result")
	sep := strings.Repeat("-", width+25) + "\n"
	b.WriteString(sep)
	failed := 0
	for i, r := range v.Results {
		if !r.Passed {
			failed++
		}
		fmt.Fprintf(&b, "%-*s %16s %7s\n", width, r.Threshold.String(), r.MeasuredString(), r.Status())
		if r.Note != "" {
			fmt.Fprintf(&b, "    (%s)\n", r.Note)
		}
		if v.Aborted == i {
			b.WriteString("    (abort_on_fail: this threshold stopped the run)\n")
		}
	}
	b.WriteString(sep)
	if failed == 0 {
		fmt.Fprintf(&b, "Thresholds: all %d passed\n\n", len(v.Results))
	} else {
		fmt.Fprintf(&b, "Thresholds: %d of %d failed\n\n", failed, len(v.Results))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CSVHeader is the header of <prefix>_thresholds.csv.
var CSVHeader = []string{"Threshold", "Metric", "Method", "Name", "Window (s)", "Abort on fail", "Limit", "Measured", "Result", "Note"}

// WriteCSV writes the verdict as <prefix>_thresholds.csv: one row per
// threshold; Limit and Measured in the metric's unit (ms, ratio, requests
// per second, count), Measured empty without a value; Result "pass" or
// "fail".
func WriteCSV(w io.Writer, v Verdict) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return fmt.Errorf("thresholds: CSV: %w", err)
	}
	for i, r := range v.Results {
		t := r.Threshold
		measured := ""
		if r.HasValue {
			measured = strconv.FormatFloat(r.Measured, 'f', -1, 64)
		}
		res := "fail"
		if r.Passed {
			res = "pass"
		}
		note := r.Note
		if v.Aborted == i {
			note = join(note, "stopped the run")
		}
		row := []string{t.String(), t.MetricName(), t.Method, t.Name, strconv.FormatFloat(t.Window.Seconds(), 'f', -1, 64),
			strconv.FormatBool(t.AbortOnFail), strconv.FormatFloat(t.Limit, 'f', -1, 64), measured, res, note}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("thresholds: CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("thresholds: CSV: %w", err)
	}
	return nil
}

// JSONResult is one threshold in the JSON verdict.
type JSONResult struct {
	Threshold     string   `json:"threshold"`
	Metric        string   `json:"metric"`
	Method        string   `json:"method"`
	Name          string   `json:"name"`
	WindowSeconds float64  `json:"window_seconds"`
	AbortOnFail   bool     `json:"abort_on_fail"`
	Limit         float64  `json:"limit"`
	Measured      *float64 `json:"measured"`
	Passed        bool     `json:"passed"`
	Note          string   `json:"note"`
}

// JSONVerdict is the verdict's JSON form (in --json output, --json-file
// and the web API).
type JSONVerdict struct {
	Passed     bool         `json:"passed"`
	Aborted    bool         `json:"aborted"`
	Thresholds []JSONResult `json:"thresholds"`
}

// JSON returns the verdict's JSON form.
func (v Verdict) JSON() JSONVerdict {
	out := JSONVerdict{Passed: v.Passed(), Aborted: v.Aborted >= 0, Thresholds: make([]JSONResult, 0, len(v.Results))}
	for _, r := range v.Results {
		t := r.Threshold
		jr := JSONResult{
			Threshold: t.String(), Metric: t.MetricName(), Method: t.Method, Name: t.Name,
			WindowSeconds: t.Window.Seconds(), AbortOnFail: t.AbortOnFail, Limit: t.Limit,
			Passed: r.Passed, Note: r.Note,
		}
		if r.HasValue {
			m := r.Measured
			jr.Measured = &m
		}
		out.Thresholds = append(out.Thresholds, jr)
	}
	return out
}

// MarshalJSON encodes the verdict's JSON form.
func (v Verdict) MarshalJSON() ([]byte, error) { return json.Marshal(v.JSON()) }
