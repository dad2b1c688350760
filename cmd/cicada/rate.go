package main

import (
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/master/dispatch"
)

// applyRate fills the master's arrival-rate options (issue 13) from
// --arrival-rate/--max-in-flight (config validated them; -u holds the cap)
// or else from the scenario's load: form. Without an explicit -r the users
// (the in-flight cap) are all spawned within about a second, since they
// idle until the pacer gives them an iteration.
func (a *app) applyRate(opts *master.Options) {
	cfg := a.cfg
	switch {
	case cfg.ArrivalRate > 0:
		opts.Rate = []master.RateStage{{Rate: cfg.ArrivalRate}}
	case a.file != nil && a.file.Load != nil:
		opts.Rate = append([]master.RateStage(nil), a.file.Load.Stages...)
		if !cfg.UsersSet {
			opts.Users = a.file.Load.MaxInFlight
		}
	default:
		return
	}
	if cfg.SpawnRate == 0 {
		opts.SpawnRate = min(max(float64(opts.Users), 1), dispatch.MaxSpawnRate)
	}
}
