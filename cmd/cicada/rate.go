package main

import (
	"errors"
	"fmt"
	"os"

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

// errRateDataplane refuses a scenario's load: with --dataplane (config
// refuses --arrival-rate with it).
var errRateDataplane = errors.New("the scenario's load: (arrival rate) cannot be combined with --dataplane: the data plane cannot pace iterations")

// checkRate refuses what the scenario's load: cannot do here, and tells a
// worker started by hand that its load: is the master's: a cicada master
// paces it, a Python Locust master cannot (its users then run the closed
// model, with their wait times). --processes children stay quiet.
func (a *app) checkRate() error {
	if a.file == nil || a.file.Load == nil {
		return nil
	}
	if a.cfg.Dataplane != "" {
		return fmt.Errorf("%s: %w", a.file.Path, errRateDataplane)
	}
	if a.cfg.Worker && os.Getenv(localWorkerEnv) != "1" {
		a.log.Info("The scenario's load: (arrival rate) is the master's: a cicada master paces this worker's users; " +
			"under a Python Locust master they run the closed model (users and wait times)")
	}
	return nil
}
