package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// Runtime runs a worker's users in another engine than its goroutine pool:
// the data plane's connection table (package dataplane/users) runs users
// as connection records. Set it with Options.Runtime.
//
// The worker keeps everything else: the protocol, the spawn/stop/quit
// sequences, the user ceiling (Options.MaxUsers) and its share per class,
// unknown classes, spawning_complete, heartbeats (their connection
// counters come from Connections) and the stats reports from its Recorder,
// which the runtime records into. The worker calls the methods from its
// controller goroutine one at a time (Spawn, Stop, Start, Close never
// overlap), except Users and Connections, which heartbeats and stats
// reports call at any time, and SecondRound, which runs beside them on its
// own goroutine.
type Runtime interface {
	// Start is called once by Worker.Run, before the first spawn, with the
	// worker's stats recorder and logger. An error ends Run.
	Start(env RuntimeEnv) error
	// Spawn converges to the absolute per-class counts of s: it launches
	// the missing users and stops the surplus (gracefully within s.Grace,
	// then forcibly). It returns nil once the counts are reached (users
	// launched, not necessarily connected), an error if the spawn cannot be
	// run (reported to the master as an exception), or ctx's error when a
	// newer command superseded it (the next Spawn or Stop converges from
	// whatever it reached).
	Spawn(ctx context.Context, s RuntimeSpawn) error
	// Stop stops every user, gracefully within grace (users finish their
	// current request), then forcibly, and returns once none runs.
	Stop(grace time.Duration)
	// Users returns the running users per class name as given in spawns.
	Users() map[string]int64
	// Connections returns the connection counters for the heartbeat
	// (protocol's shape: the master's table, CSV, dashboard and /metrics
	// show them as a goroutine worker's).
	Connections() *protocol.ConnCounters
	// SecondRound makes every running user send its last request again on
	// the connection it holds and returns how many reused it; bounded by
	// ctx.
	SecondRound(ctx context.Context) (SecondRoundResult, error)
	// Close stops everything and releases the runtime's resources; it is
	// called once, at the end of Run.
	Close() error
}

// RuntimeEnv is what a Runtime gets from its worker at Start.
type RuntimeEnv struct {
	// Recorder is the worker's stats recorder: the runtime records every
	// request into it (Record or RecordBulk); the worker reports it.
	Recorder *stats.Recorder
	// Logger is the worker's logger.
	Logger *slog.Logger
	// Exception reports a problem to the master as a Locust exception
	// (rate-limited by the worker).
	Exception func(msg, traceback string)
}

// RuntimeSpawn is one spawn as a Runtime sees it: the counts after the
// worker's clamping to its user ceiling, resolved to scenario classes.
type RuntimeSpawn struct {
	// Classes are the target counts, in name order; names the scenario
	// does not have are left out (the worker reports them).
	Classes []RuntimeClass
	// Host is the host of the master's latest spawn (-H), "" if none: it
	// takes precedence over the class's and the scenario's Host.
	Host string
	// Grace is the graceful stop time for surplus users (the spawn's
	// stop_timeout).
	Grace time.Duration
}

// RuntimeClass is one class's target in a RuntimeSpawn.
type RuntimeClass struct {
	// Name is the class name the master uses; it differs from the
	// scenario class's name when a single-class scenario serves every
	// name.
	Name string
	// Class is the index of the scenario class in Scenario.Classes.
	Class int
	// Users is the absolute number of users wanted.
	Users int64
}

// runtimeSpawn converges through the runtime to the plan's counts; it
// returns false when a newer command superseded it (or ctx ended) and
// the caller must not report spawning_complete.
func (w *Worker) runtimeSpawn(ctx context.Context, pl spawnPlan) bool {
	rs := RuntimeSpawn{Classes: make([]RuntimeClass, 0, len(pl.counts))}
	w.pool.mu.Lock()
	for _, cs := range sortedKeys(pl.counts) {
		if c := w.pool.classes[cs]; c != nil {
			rs.Classes = append(rs.Classes, RuntimeClass{Name: cs, Class: c.def.idx, Users: pl.counts[cs]})
		}
	}
	w.pool.mu.Unlock()
	if h := w.env.masterHost.Load(); h != nil {
		rs.Host = *h
	}
	w.mu.Lock()
	rs.Grace = w.mu.stopTimeout
	w.mu.Unlock()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.opts.Runtime.Spawn(sctx, rs) }()
	for {
		select {
		case err := <-done:
			if err != nil && sctx.Err() == nil {
				w.log.Error("the spawn cannot run", "err", err)
				w.reportException(err.Error(), fmt.Sprintf("spawn: %v\n", err))
			}
			return sctx.Err() == nil
		case <-w.wake:
			if any, _ := w.pending(); any {
				cancel() // superseded: wait for the runtime to return
				<-done
				return false
			}
		}
	}
}

// userCounts returns the running users per class (every known class,
// zeros included) and their total, from the pool or the runtime.
func (w *Worker) userCounts() (map[string]int64, int64) {
	if w.opts.Runtime == nil {
		return w.pool.counts()
	}
	m, _ := w.pool.counts() // every known name, zeros
	var total int64
	for name, n := range w.opts.Runtime.Users() {
		m[name] = n
		total += n
	}
	return m, total
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
