package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/thresholds"
)

// thresholds are the scenario's thresholds: then those of --threshold.
func (a *app) thresholds() ([]thresholds.Threshold, error) {
	var out []thresholds.Threshold
	if a.file != nil {
		out = append(out, a.file.Thresholds...)
	}
	for i, expr := range a.cfg.Thresholds {
		t, err := thresholds.Parse(expr)
		if err != nil {
			return nil, fmt.Errorf("--threshold: %w", err)
		}
		t.Source = fmt.Sprintf("--threshold #%d", i+1)
		out = append(out, t)
	}
	return out, nil
}

// verdictElement is the element the JSON document's array ends with when
// thresholds were declared: name and method as every element has, and
// the verdict.
type verdictElement struct {
	Name    string                 `json:"name"`
	Method  string                 `json:"method"`
	Verdict thresholds.JSONVerdict `json:"cicada_thresholds"`
}

// verdictElementName names that element.
const verdictElementName = "cicada thresholds"

// writeJSON prints --json on stdout and writes --json-file's
// <name>.json, as Locust HEAD does (locust/main.py, shutdown), with the
// thresholds' verdict as the array's last element when there is one.
func (a *app) writeJSON(m *master.Master, v *thresholds.Verdict) error {
	if !a.cfg.JSON && a.cfg.JSONFile == "" {
		return nil
	}
	var extra [][]byte
	if v != nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("    ", "    ")
		if err := enc.Encode(verdictElement{Name: verdictElementName, Method: "", Verdict: v.JSON()}); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
		extra = append(extra, bytes.TrimRight(b.Bytes(), "\n"))
	}
	doc := m.StatsJSON(extra...)
	if a.cfg.JSON {
		if _, err := a.stdout.Write(append(doc, '\n')); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if a.cfg.JSONFile != "" {
		if err := os.WriteFile(a.cfg.JSONFile+".json", doc, 0o644); err != nil {
			return fmt.Errorf("--json-file: %w", err)
		}
	}
	return nil
}

// Thresholds serves the web API's GET /thresholds (web.ThresholdSource).
func (r *masterRunner) Thresholds() *thresholds.Verdict { return r.m.Thresholds() }
