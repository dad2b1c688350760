package web

import (
	"encoding/json"
	"net/http"

	"github.com/cicada-load/cicada/thresholds"
)

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

// ThresholdSource is implemented by a Runner whose master evaluates
// thresholds; GET /thresholds serves its verdict.
type ThresholdSource interface {
	// Thresholds returns the verdict so far (the final one after the
	// run), nil without thresholds.
	Thresholds() *thresholds.Verdict
}

// handleThresholds is GET /thresholds (cicada's own route): {"verdict":
// null} without thresholds, else {"verdict": {"aborted", "passed",
// "thresholds": [...]}} (thresholds.JSONVerdict, keys sorted as every
// route's).
func (s *Server) handleThresholds(w http.ResponseWriter, r *http.Request) {
	var v *thresholds.Verdict
	if src, ok := s.runner.(ThresholdSource); ok {
		v = src.Thresholds()
	}
	body := map[string]any{"verdict": nil}
	if v != nil {
		// Through a map, so that every object's keys are sorted.
		b, err := json.Marshal(v.JSON())
		var m map[string]any
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, []byte(`{"verdict": null}`+"\n"))
			return
		}
		body["verdict"] = m
	}
	out, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, []byte(`{"verdict": null}`+"\n"))
		return
	}
	writeJSON(w, http.StatusOK, append(out, '\n'))
}
