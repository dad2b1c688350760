package web

import "github.com/cicada-load/cicada/thresholds"

// reportThreshold is one row of the HTML report's thresholds table.
type reportThreshold struct {
	Threshold, Measured, Result, Note string
}

// reportThresholds renders a verdict's rows (none for nil) and whether
// every threshold passed.
func reportThresholds(v *thresholds.Verdict) ([]reportThreshold, bool) {
	if v == nil {
		return nil, true
	}
	rows := make([]reportThreshold, 0, len(v.Results))
	for i, r := range v.Results {
		note := r.Note
		if v.Aborted == i {
			if note != "" {
				note += "; "
			}
			note += "stopped the run (abort_on_fail)"
		}
		rows = append(rows, reportThreshold{Threshold: r.Threshold.String(), Measured: r.MeasuredString(), Result: r.Status(), Note: note})
	}
	return rows, v.Passed()
}
