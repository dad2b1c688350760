package web

import (
	"encoding/json"
	"net/http"

	"github.com/cicada-load/cicada/thresholds"
)

// LiveThresholdSource is implemented by a Runner whose master evaluates
// thresholds live; GET /thresholds/live serves their current states (the
// dashboard's Thresholds tab).
type LiveThresholdSource interface {
	// LiveThresholds returns every threshold's current state in
	// declaration order (thresholds.Evaluator.Live), nil without
	// thresholds.
	LiveThresholds() []thresholds.Result
}

// liveThreshold is one threshold of GET /thresholds/live; fields in
// alphabetical order (the JSON keys are sorted as every route's).
type liveThreshold struct {
	AbortOnFail   bool     `json:"abort_on_fail"`
	Limit         float64  `json:"limit"`
	Measured      *float64 `json:"measured"`
	MeasuredText  string   `json:"measured_text"`
	Method        string   `json:"method"`
	Metric        string   `json:"metric"`
	Name          string   `json:"name"`
	Note          string   `json:"note"`
	State         string   `json:"state"`
	Threshold     string   `json:"threshold"`
	WindowSeconds float64  `json:"window_seconds"`
}

// liveThresholds is the body of GET /thresholds/live.
type liveThresholds struct {
	Failing    int             `json:"failing"`
	Thresholds []liveThreshold `json:"thresholds"`
}

// handleLiveThresholds is GET /thresholds/live (cicada's own route):
// {"failing": 0, "thresholds": null} without thresholds, else one object
// per threshold with its state ("ok", "FAILING", "waiting"), the value
// measured (null without one) and as the console shows it, and the note.
func (s *Server) handleLiveThresholds(w http.ResponseWriter, r *http.Request) {
	var body liveThresholds
	if src, ok := s.runner.(LiveThresholdSource); ok {
		if rs := src.LiveThresholds(); rs != nil {
			body.Thresholds = make([]liveThreshold, 0, len(rs))
			for _, r := range rs {
				t := r.Threshold
				lt := liveThreshold{
					AbortOnFail: t.AbortOnFail, Limit: t.Limit, MeasuredText: r.MeasuredString(), Method: t.Method,
					Metric: t.MetricName(), Name: t.Name, Note: r.Note, State: r.LiveState(), Threshold: t.String(),
					WindowSeconds: t.Window.Seconds(),
				}
				if r.HasValue {
					m := r.Measured
					lt.Measured = &m
				}
				if lt.State == thresholds.LiveFailing {
					body.Failing++
				}
				body.Thresholds = append(body.Thresholds, lt)
			}
		}
	}
	out, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, []byte(`{"failing": 0, "thresholds": null}`+"\n"))
		return
	}
	writeJSON(w, http.StatusOK, append(out, '\n'))
}
