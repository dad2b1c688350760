package worker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

type cmdKind uint8

const (
	cmdSpawn cmdKind = iota + 1
	cmdStop
	cmdQuit
)

// command is a unit of work for the controller goroutine.
type command struct {
	kind    cmdKind
	spawn   *protocol.Spawn
	newTest bool // the spawn starts a test
}

func (w *Worker) enqueue(c command) {
	w.mu.Lock()
	w.enqueueLocked(c)
	w.mu.Unlock()
}

// enqueueLocked queues c; a spawn replaces a spawn still waiting at the end
// of the queue (only the newest absolute counts matter), a stop drops the
// spawns waiting before it (it undoes them) and is dropped after another
// stop, and a second quit adds nothing: a flood of commands keeps the queue
// at most [stop, spawn, quit] long. Precondition: w.mu held.
func (w *Worker) enqueueLocked(c command) {
	if w.mu.quitting {
		return
	}
	q := w.mu.queue
	last := func() cmdKind {
		if len(q) == 0 {
			return 0
		}
		return q[len(q)-1].kind
	}
	switch {
	case slices.ContainsFunc(q, func(o command) bool { return o.kind == cmdQuit }):
		// Nothing runs after a quit.
	case c.kind == cmdSpawn && last() == cmdSpawn:
		c.newTest = c.newTest || q[len(q)-1].newTest
		q[len(q)-1] = c
	case c.kind == cmdStop:
		for last() == cmdSpawn {
			q = q[:len(q)-1]
		}
		if last() != cmdStop {
			q = append(q, c)
		}
		w.mu.queue = q
	default:
		w.mu.queue = append(q, c)
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Worker) next() (command, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.mu.queue) == 0 {
		return command{}, false
	}
	c := w.mu.queue[0]
	w.mu.queue = slices.Delete(w.mu.queue, 0, 1)
	return c, true
}

func (w *Worker) pending() (any, quit bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.mu.queue {
		if c.kind == cmdQuit {
			quit = true
		}
	}
	return len(w.mu.queue) > 0, quit
}

// controller runs spawn, stop and quit one at a time, off the receive loop,
// so that heartbeats and new commands are handled while thousands of users
// start or stop.
func (w *Worker) controller(ctx context.Context) {
	w.diagnoseStart()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		for {
			c, ok := w.next()
			if !ok {
				break
			}
			switch c.kind {
			case cmdSpawn:
				w.doSpawn(ctx, c.spawn, c.newTest)
			case cmdStop:
				w.doStop(ctx)
			case cmdQuit:
				w.doQuit()
				return
			}
		}
	}
}

// doSpawn converges to the spawn's absolute counts (Locust 2.12.1
// locust/runners.py, the "spawn" case of WorkerRunner.worker and
// WorkerRunner.start_worker), clamped to the worker's user ceiling: missing
// users start at once (in batches a newer command interrupts), surplus users
// (the most recently started first) stop gracefully within stop_timeout, then
// forcibly. It then reports spawning_complete with the actual counts, unless
// a newer command superseded it meanwhile.
func (w *Worker) doSpawn(ctx context.Context, s *protocol.Spawn, newTest bool) {
	if newTest {
		w.applyTags(s.ParsedOptions) // tags.go: the test's task selection
	}
	pl := w.pool.plan(s.UserClassesCount, w.maxUsers)
	if pl.clamped {
		w.reportProblem(causeSpawnCeiling,
			fmt.Sprintf("%v: the spawn asks this worker for %d users; it runs at most %d (%s), so it runs %d: run more workers, or %s",
				ErrTooManyUsers, pl.asked, w.maxUsers, w.maxUsersWhy, w.maxUsers, maxUsersFix),
			"spawn: user count above the worker's ceiling; clamped\n",
			"asked", pl.asked, "max_users", w.maxUsers)
	}
	diagSpawn := *s
	diagSpawn.UserClassesCount = pl.counts
	w.diagnoseSpawn(&diagSpawn, newTest)
	w.reportUnknown(pl.unknown)
	if w.opts.Runtime != nil {
		if !w.runtimeSpawn(ctx, pl) {
			return
		}
		w.spawningComplete()
		return
	}
	b := pl.stop
	b.start()
	// Start the missing users in batches; a newer command interrupts.
	if _, complete := w.pool.start(pl.starts, func() bool {
		if ctx.Err() != nil {
			return true
		}
		any, _ := w.pending()
		return any
	}); !complete {
		return // superseded (the next command converges from here), or shutting down
	}
	if len(b.users) > 0 {
		w.mu.Lock()
		grace := w.mu.stopTimeout
		w.mu.Unlock()
		settled := make(chan struct{})
		go func() {
			b.wait(grace, w.opts.ForceWait, nil)
			close(settled)
		}()
	wait:
		for {
			select {
			case <-settled:
				break wait
			case <-ctx.Done():
				return
			case <-w.wake:
				if any, _ := w.pending(); any {
					return // superseded: the stopping users finish on their own
				}
			}
		}
	}
	w.spawningComplete()
}

// spawningComplete reports spawning_complete with the running users,
// unless a newer command is waiting.
func (w *Worker) spawningComplete() {
	counts, total := w.userCounts()
	w.mu.Lock()
	if len(w.mu.queue) > 0 {
		w.mu.Unlock()
		return
	}
	w.mu.state = protocol.StateRunning
	w.mu.Unlock()
	w.sendGated(protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: counts, UserCount: total})
	w.log.Info("spawning complete", "users", total)
}

// Bounds of the unknown-class reports.
const (
	maxUnknownSeen   = 1024 // names remembered per test
	maxUnknownListed = 10   // names listed in one report
	maxNameListed    = 64   // bytes of one name listed
)

// reportUnknown reports the class names of a spawn that the scenario does
// not have: in the log and to the master as an exception (a Python worker
// would hang in spawning instead). Each name is reported once per test (a
// master sends every step of a ramp), all names of one spawn in one
// report, and at most one report per Options.RepeatInterval; names of a
// suppressed report come again with the next spawn that has them.
func (w *Worker) reportUnknown(unknown []string) {
	if len(unknown) == 0 {
		return
	}
	var fresh []string
	w.mu.Lock()
	for _, name := range unknown {
		if !w.mu.unknownSeen[name] {
			fresh = append(fresh, name)
		}
	}
	w.mu.Unlock()
	if len(fresh) == 0 {
		return
	}
	have := make([]string, len(w.classes))
	for i, c := range w.classes {
		have[i] = c.def.Name
	}
	listed := make([]string, 0, min(len(fresh), maxUnknownListed))
	for _, name := range fresh[:cap(listed)] {
		if len(name) > maxNameListed {
			name = name[:maxNameListed] + "..."
		}
		listed = append(listed, strconv.Quote(name))
	}
	names := strings.Join(listed, ", ")
	if more := len(fresh) - len(listed); more > 0 {
		names += fmt.Sprintf(" and %d more", more)
	}
	what := "unknown user class"
	if len(fresh) > 1 {
		what = "unknown user classes"
	}
	msg := fmt.Sprintf("%s %s: this cicada worker (%s) has %s", what, names, w.nodeID, strings.Join(have, ", "))
	tb := fmt.Sprintf("spawn: %s %s not defined in the worker's scenario\n", what, names)
	if !w.reportProblem(causeUnknownClass, msg, tb, "classes", len(fresh), "have", have) {
		return
	}
	w.mu.Lock()
	if w.mu.unknownSeen == nil {
		w.mu.unknownSeen = make(map[string]bool)
	}
	for _, name := range fresh {
		if len(w.mu.unknownSeen) >= maxUnknownSeen {
			break
		}
		w.mu.unknownSeen[name] = true
	}
	w.mu.Unlock()
}

// doStop runs Locust's stop sequence (Locust 2.12.1 locust/runners.py, the
// "stop" case of WorkerRunner.worker): stop users, a stats report (cicada's
// addition), client_stopped, wait stop_timeout, client_ready, state ready.
func (w *Worker) doStop(ctx context.Context) {
	w.mu.Lock()
	grace := w.mu.stopTimeout
	w.mu.Unlock()
	if w.opts.Runtime != nil {
		w.opts.Runtime.Stop(grace)
	} else {
		b := w.pool.stopAll()
		b.start()
		if !b.wait(grace, w.opts.ForceWait, nil) {
			w.log.Warn("some users did not stop in time", "users", len(b.users))
		}
	}
	// The requests that ended within the stop timeout reach the master
	// before client_stopped: a Python worker leaves them to its next
	// periodic report, which a master that quits after the stop (the
	// run time's end with --stop-timeout) never sees.
	w.sendStats()
	w.sendGated(protocol.TypeClientStopped, nil)
	w.mu.Lock()
	w.mu.registered = false // the master deleted this worker
	w.mu.readyWanted = false
	w.mu.readySent = false
	w.mu.Unlock()
	w.log.Info("users stopped", "ready_again_in", grace)
	if grace > 0 {
		t := time.NewTimer(grace)
	sleep:
		for {
			select {
			case <-t.C:
				break sleep
			case <-ctx.Done():
				t.Stop()
				return
			case <-w.wake:
				if _, quit := w.pending(); quit {
					t.Stop()
					break sleep
				}
			}
		}
	}
	w.mu.Lock()
	w.mu.readyWanted = true
	w.mu.state = protocol.StateReady
	w.mu.Unlock()
	w.sendReady()
}

// doQuit stops the users (in-flight tasks get QuitTimeout to finish, so
// their requests are counted), sends the final stats report and then quit.
func (w *Worker) doQuit() {
	start := time.Now()
	w.mu.Lock()
	w.mu.quitting = true
	w.mu.queue = nil
	w.mu.Unlock()
	if w.opts.Runtime != nil {
		w.opts.Runtime.Stop(w.opts.QuitTimeout)
	} else {
		b := w.pool.stopAll()
		b.start()
		// Interrupted tasks return at once (their context is cancelled); wait
		// only briefly so the final report beats a Python master's 0.5 s.
		if !b.wait(w.opts.QuitTimeout, 100*time.Millisecond, nil) {
			w.log.Warn("some users did not stop before the final report", "users", w.pool.nLive.Load())
		}
	}
	w.sendStats()
	w.send(protocol.TypeQuit, nil)
	w.log.Info("final stats report and quit sent", "after", time.Since(start).Round(time.Millisecond))
	select {
	case w.done <- nil:
	default:
	}
}

// quitNow makes the controller quit and waits (bounded) until it did.
func (w *Worker) quitNow() {
	w.enqueue(command{kind: cmdQuit})
	t := time.NewTimer(2*w.opts.QuitTimeout + w.opts.ForceWait + time.Second)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	}
}
