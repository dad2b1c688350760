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
	// localWorkers is the number of standalone's own workers (0 for a
	// distributed master): Start waits for them, as Locust standalone
	// has no worker to wait for.
	localWorkers int
	// learned: the classes are the master's (learned from the workers),
	// by name only.
	learned bool
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
	if !a.learnClasses {
		r.classes = webClasses(a.file.Scenario.Classes)
	} else {
		r.learned = true
	}
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
	if r.learned {
		for _, c := range s.Classes {
			st.UserClasses = append(st.UserClasses, web.UserClass{Name: c.Name})
		}
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
			Dropped:     w.Dropped,
		}
		if c := w.Connections; c != nil {
			wi.Connections = int(c.Open)
			wi.Conn = &web.ConnStats{Open: c.Open, Established: c.Established, Connects: c.Connects, Reconnects: c.Reconnects,
				ConnectsPerSec: w.ConnectsPerSec, Closes: c.Closes, ConnectErrors: c.ConnectErrors, Errors: c.Errors,
				GeneratorSide: protocol.GeneratorSideKind,
				TLSHandshakes: c.TLSHandshakes, TLSResumed: c.TLSResumed, TLSHandshakeTime: time.Duration(c.TLSHandshakeMicros) * time.Microsecond,
				TLSHandshakesPerSec: w.TLSHandshakesPerSec, H2GoAways: c.H2GoAways, H2ResetStreams: c.H2ResetStreams}
		}
		st.Workers = append(st.Workers, wi)
	}
	return st
}

func (r *masterRunner) Snapshot() *stats.Snapshot { return r.m.Snapshot() }

func (r *masterRunner) Start(ctx context.Context, req web.StartRequest) error {
	r.waitLocalWorkers(ctx)
	return r.m.Start(req.Users, req.SpawnRate, req.Host)
}

// localWorkersWait bounds Start's wait for standalone's own workers, which
// register within milliseconds of the start of the process.
const localWorkersWait = 5 * time.Second

// waitLocalWorkers waits until standalone's own workers are registered
// (at most localWorkersWait), so that a POST /swarm right after the
// process starts runs the test instead of warning that no worker is
// there. A distributed master does not wait, as Locust's.
func (r *masterRunner) waitLocalWorkers(ctx context.Context) {
	if r.localWorkers <= 0 {
		return
	}
	deadline := time.Now().Add(localWorkersWait)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for r.m.Status().WorkerCount < r.localWorkers && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
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
