package main

import (
	"context"
	"time"

	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/worker"
)

// masterRunner adapts a master.Master to the web package's Runner.
type masterRunner struct {
	m           *master.Master
	distributed bool
	locustfile  string
	classes     []web.UserClass
	users       int
	spawnRate   float64
	runTime     time.Duration
	logs        *web.LogBuffer
}

var (
	_ web.Runner    = (*masterRunner)(nil)
	_ web.LogSource = (*masterRunner)(nil)
)

func newMasterRunner(m *master.Master, a *app, distributed bool, logs *web.LogBuffer) *masterRunner {
	r := &masterRunner{
		m:           m,
		distributed: distributed,
		locustfile:  a.cfg.Locustfile,
		users:       a.cfg.Users,
		spawnRate:   a.cfg.SpawnRate,
		runTime:     time.Duration(a.cfg.RunTime),
		logs:        logs,
	}
	r.classes = webClasses(a.file.Scenario.Classes)
	return r
}

func webClasses(classes []worker.UserClass) []web.UserClass {
	out := make([]web.UserClass, 0, len(classes))
	for _, c := range classes {
		wc := web.UserClass{Name: c.Name}
		for _, t := range c.Tasks {
			weight := t.Weight
			if weight <= 0 || c.Sequential {
				weight = 1
			}
			wc.Tasks = append(wc.Tasks, web.Task{Name: t.Name, Weight: weight})
		}
		out = append(out, wc)
	}
	return out
}

func (r *masterRunner) Status() web.Status {
	s := r.m.Status()
	st := web.Status{
		State:                 s.State,
		UserCount:             int(s.UserCount),
		Host:                  s.Host,
		Distributed:           r.distributed,
		UserClassesCount:      s.UserClassesCount,
		FinalUserClassesCount: s.FinalUserClassesCount,
		Shape:                 s.Shape,
		UserClasses:           r.classes,
		Locustfile:            r.locustfile,
		StartTime:             s.StartTime,
		ConfiguredUsers:       r.users,
		ConfiguredSpawnRate:   r.spawnRate,
		ConfiguredRunTime:     r.runTime,
	}
	// Standalone lists its in-process worker too: the web package shows
	// workers only when Distributed, and uses them standalone only for the
	// connection charts of the history.
	for _, w := range s.Workers {
		wi := web.WorkerInfo{
			ID:          w.ID,
			State:       w.State,
			UserCount:   int(w.UserCount),
			CPUUsage:    w.CPUUsage,
			MemoryUsage: w.MemoryUsage,
			Connections: -1,
		}
		if c := w.Connections; c != nil {
			wi.Connections = int(c.Open)
			wi.Conn = &web.ConnStats{Open: c.Open, Established: c.Established, Connects: c.Connects, Reconnects: c.Reconnects,
				ConnectsPerSec: w.ConnectsPerSec, Closes: c.Closes, ConnectErrors: c.ConnectErrors, Errors: c.Errors,
				GeneratorSide: protocol.GeneratorSideKind}
		}
		st.Workers = append(st.Workers, wi)
	}
	return st
}

func (r *masterRunner) Snapshot() *stats.Snapshot { return r.m.Snapshot() }

func (r *masterRunner) Start(_ context.Context, req web.StartRequest) error {
	return r.m.Start(req.Users, req.SpawnRate, req.Host)
}

func (r *masterRunner) Stop(ctx context.Context) error { return r.m.Stop(ctx) }

func (r *masterRunner) ResetStats() { r.m.ResetStats() }

func (r *masterRunner) Logs() web.Logs {
	var l web.Logs
	if r.logs != nil {
		l.Master = r.logs.Lines()
	}
	return l
}
