package main

import (
	"github.com/cicada-load/cicada/thresholds"
	"github.com/cicada-load/cicada/web"
)

var _ web.LiveThresholdSource = (*masterRunner)(nil)

// LiveThresholds serves the web API's GET /thresholds/live
// (web.LiveThresholdSource): the thresholds' current states.
func (r *masterRunner) LiveThresholds() []thresholds.Result { return r.m.LiveThresholds() }
