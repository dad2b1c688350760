package main

import "github.com/cicada-load/cicada/thresholds"

// LiveThresholds serves the web API's GET /thresholds/live
// (web.LiveThresholdSource): the thresholds' current states.
func (r *masterRunner) LiveThresholds() []thresholds.Result { return r.m.LiveThresholds() }
