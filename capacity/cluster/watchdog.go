package cluster

import (
	"context"
	"errors"
	"time"
)

// DefaultConnectionGrace is how long a trial runs on while the worker has
// no controller (AgentOptions.Connected false) before it is stopped.
const DefaultConnectionGrace = 10 * time.Second

// errControllerGone ends a trial whose controller went away.
var errControllerGone = errors.New("cluster: trial stopped: no connection to the controller")

// watchdog cancels a trial (cancel) once AgentOptions.Connected has been
// false for the connection grace, so that a worker whose controller was
// killed stops loading the target within seconds rather than at the
// worker's master heartbeat timeout (60 s). It returns when ctx ends.
func (a *Agent) watchdog(ctx context.Context, cancel context.CancelCauseFunc) {
	if a.o.Connected == nil {
		return
	}
	grace := a.o.ConnectionGrace
	if grace <= 0 {
		grace = DefaultConnectionGrace
	}
	tick := time.NewTicker(min(grace/10, 500*time.Millisecond))
	defer tick.Stop()
	var since time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			switch {
			case a.o.Connected():
				since = time.Time{}
			case since.IsZero():
				since = now
			case now.Sub(since) >= grace:
				a.log.Warn("no connection to the bench controller: stopping the trial", "after", grace)
				cancel(errControllerGone)
				return
			}
		}
	}
}
