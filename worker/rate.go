package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// Arrival-rate (open model) load, issue 13.
//
// Contract. Once a worker has a rate (SetRate, or the master's
// protocol.TypeCicadaRate message), its users stop pacing themselves: after
// OnStart and after each task a user parks in the pacer's free list instead
// of running its wait time. The pacer starts one iteration (the user's
// next task) at each due time of an even schedule, due(n) = anchor +
// n/rate, re-anchored when the rate changes. An iteration that is due
// while no user is free is dropped: counted in the worker's Recorder
// (protocol.StatsReport.Dropped, "cicada_dropped"; by the name of the task
// it would have run in "cicada_dropped_by", ratedrops.go) and never run
// later.
// The users are the cap on in-flight iterations (max_in_flight: the master
// spawns that many users, as for a closed-model test).
//
// Timing. The pacer sleeps until the next due time and then starts every
// iteration whose time has come, so at rates above the timer resolution
// (about 1 ms on a busy Linux host) a few iterations share one wake-up; each
// keeps its own due time. An iteration started late (the pacer was not
// scheduled, the process paused, its goroutine waited for a CPU) carries
// its lag, measured when its task begins: its requests are recorded
// with Recorder.RecordCorrected, service time from the send in Locust's
// fields and service time plus the lag (the response time from the moment
// the iteration was due, wrk2's correction) in the exact histogram. Due
// times more than maxCatchUp in the past are dropped rather than fired in
// a burst.
//
// Deliberate differences: k6's arrival-rate executors start extra VUs up to
// maxVUs; here the users are pre-allocated by the spawn and never grown.
// wrk2 never drops (each connection falls behind its schedule); here an
// iteration waits for no user, so coordinated omission shows as the
// dropped count plus the in-flight iterations' long service times.

// maxCatchUp is how far behind its schedule the pacer still starts due
// iterations; older ones are counted as dropped.
const maxCatchUp = time.Second

// farFuture arms a parked user's timer so that a stop request finds it
// stoppable (User.requestStop stops the timer); the pacer claims the user
// by stopping the timer first.
const farFuture = 100 * 365 * 24 * time.Hour

// rateRecorder is what the pacer needs of the worker's Recorder beyond
// recorder (*stats.Recorder has both).
type rateRecorder interface {
	RecordCorrected(method, name string, service, corrected time.Duration, contentLength int64, failure string)
	AddDropped(n int64)
}

// pacer starts the iterations of one worker's share of an arrival rate.
type pacer struct {
	p    *pool
	rec  rateRecorder
	now  func() time.Time
	kick chan struct{} // rate changed or a stop: wake the loop
	// cancel ends loop (Worker.leaveRate); nil for a pacer not run by
	// SetRate (tests).
	cancel context.CancelFunc

	started atomic.Int64   // iterations started since the pacer exists
	dropped atomic.Int64   // iterations dropped since the pacer exists
	attr    dropAttributor // drops by name (ratedrops.go); owned by loop

	mu     sync.Mutex
	rate   float64 // iterations per second; 0: none
	anchor int64   // unix ns of due(0)
	n      int64   // index of the next due time
	reset  bool    // re-anchor at the next round
	free   []*User // parked users, oldest first
	head   int     // free[head:] are the parked users
}

func newPacer(p *pool, rec rateRecorder, now func() time.Time) *pacer {
	if now == nil {
		now = time.Now
	}
	return &pacer{p: p, rec: rec, now: now, kick: make(chan struct{}, 1)}
}

// setRate changes the rate. A running schedule continues without a
// break: the first due time at the new rate is the next one at the old
// rate, at most one new interval away; a schedule that had no rate starts
// at the next round.
func (pc *pacer) setRate(r float64) {
	pc.mu.Lock()
	if pc.rate > 0 && r > 0 && !pc.reset {
		next := pc.dueAt(pc.n)
		if limit := pc.now().UnixNano() + int64(1e9/r); next > limit {
			next = limit
		}
		pc.anchor, pc.n = next, 0
	} else {
		pc.reset = true
	}
	pc.rate = r
	pc.mu.Unlock()
	select {
	case pc.kick <- struct{}{}:
	default:
	}
}

// park puts u, which has finished its step, in the free list. It returns
// false when u must finish instead (a stop was requested). Called from
// u's own step goroutine.
func (pc *pacer) park(u *User) bool {
	u.mu.Lock()
	if u.stopReq {
		u.mu.Unlock()
		return false
	}
	u.state = stWaiting
	u.due = 0
	if u.timer == nil {
		u.timer = time.AfterFunc(farFuture, u.step)
	} else {
		u.timer.Reset(farFuture)
	}
	u.mu.Unlock()
	pc.mu.Lock()
	pc.free = append(pc.free, u)
	pc.mu.Unlock()
	return true
}

// claimLocked takes the oldest parked user that is still parked (stopped users
// are discarded), or returns nil. Precondition: pc.mu held.
func (pc *pacer) claimLocked(due int64) *User {
	for pc.head < len(pc.free) {
		u := pc.free[pc.head]
		pc.free[pc.head] = nil
		pc.head++
		u.mu.Lock()
		ok := u.state == stWaiting && !u.stopReq && u.timer.Stop()
		if ok {
			u.state = stRunning
			u.dispatched = true
			u.dueNs = due
		}
		u.mu.Unlock()
		if ok {
			pc.compactLocked()
			return u
		}
	}
	pc.compactLocked()
	return nil
}

// compactLocked reuses the free list's storage once half of it is spent.
func (pc *pacer) compactLocked() {
	if pc.head > 0 && pc.head*2 >= len(pc.free) {
		n := copy(pc.free, pc.free[pc.head:])
		clear(pc.free[n:])
		pc.free = pc.free[:n]
		pc.head = 0
	}
}

// loop runs the schedule until ctx ends.
func (pc *pacer) loop(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var starts []*User
	for {
		pc.mu.Lock()
		now := pc.now().UnixNano()
		if pc.reset {
			pc.reset = false
			pc.anchor, pc.n = now, 0
		}
		var wait time.Duration
		var dropped int64
		if pc.rate <= 0 {
			wait = time.Hour
		} else {
			starts, dropped, wait = pc.roundLocked(now, starts[:0])
		}
		pc.mu.Unlock()
		if dropped > 0 {
			pc.countDropped(dropped) // ratedrops.go: by name, under pool.mu
		}
		for i, u := range starts {
			pc.started.Add(1)
			go u.step()
			starts[i] = nil
		}
		starts = starts[:0]
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-pc.kick:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		case <-t.C:
		}
	}
}

// dueAt is the unix ns time of due time n.
func (pc *pacer) dueAt(n int64) int64 {
	return pc.anchor + int64(math.Round(float64(n)*1e9/pc.rate))
}

// roundLocked handles every due time up to now: it claims a user for each
// (appended to starts) or counts it dropped, and returns the wait until
// the next due time. Precondition: pc.mu held, pc.rate > 0.
func (pc *pacer) roundLocked(now int64, starts []*User) ([]*User, int64, time.Duration) {
	var dropped int64
	// Due times older than maxCatchUp are dropped in one step.
	if late := now - int64(maxCatchUp) - pc.anchor; late > 0 {
		if first := int64(float64(late) * pc.rate / 1e9); first > pc.n {
			dropped += first - pc.n
			pc.n = first
		}
	}
	for {
		due := pc.dueAt(pc.n)
		if due > now {
			return starts, dropped, time.Duration(due - now)
		}
		pc.n++
		if u := pc.claimLocked(due); u != nil {
			starts = append(starts, u)
		} else {
			dropped++
		}
	}
}

// RateStats are a worker's arrival-rate counters since its first rate.
type RateStats struct {
	// Rate is the worker's current share, iterations per second (0 when
	// it has none; also 0 before any).
	Rate float64
	// Started and Dropped count iterations since the worker's first rate.
	Started, Dropped int64
	// Free is the number of users parked waiting for an iteration.
	Free int
}

// SetRate puts the worker in arrival-rate mode (see the comment at the top
// of rate.go) with perSecond iterations per second, or changes its rate.
// A cicada master sends it (protocol.TypeCicadaRate); a Go program may call
// it directly. It fails for a negative, NaN or infinite rate, before Run,
// and on a worker with an Options.Runtime (the data plane schedules its own
// connections and cannot pace a rate). Once in rate mode the worker stays
// in it until the master's next stop; a rate of 0 starts no iterations.
func (w *Worker) SetRate(perSecond float64) error {
	if perSecond < 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) {
		return rateError(perSecond, "not a finite rate >= 0")
	}
	if w.opts.Runtime != nil {
		return rateError(perSecond, "the data plane runtime cannot pace an arrival rate (run this worker without --dataplane)")
	}
	if w.env.runCtx == nil {
		return rateError(perSecond, "SetRate before Run")
	}
	w.rateMu.Lock()
	defer w.rateMu.Unlock()
	pc := w.pool.rate.Load()
	if pc == nil {
		pc = newPacer(w.pool, w.rec, w.opts.Now)
		ctx, cancel := context.WithCancel(w.env.runCtx)
		pc.cancel = cancel
		w.pool.rate.Store(pc)
		go pc.loop(ctx)
	}
	pc.setRate(perSecond)
	return nil
}

// leaveRate ends arrival-rate mode (the master's stop ends the test; its
// next rate test sends a rate again, and a master without one finds users
// that pace themselves). Users still parked are being stopped.
func (w *Worker) leaveRate() {
	w.rateMu.Lock()
	defer w.rateMu.Unlock()
	if pc := w.pool.rate.Swap(nil); pc != nil {
		pc.cancel()
	}
}

// RateStats returns the worker's arrival-rate counters (zero before its
// first rate).
func (w *Worker) RateStats() RateStats {
	pc := w.pool.rate.Load()
	if pc == nil {
		return RateStats{}
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return RateStats{Rate: pc.rate, Started: pc.started.Load(), Dropped: pc.dropped.Load(), Free: len(pc.free) - pc.head}
}

// ErrRate is wrapped by every refusal of SetRate.
var ErrRate = errors.New("worker: arrival rate refused")

func rateError(r float64, why string) error {
	return fmt.Errorf("%w: %s/s: %s", ErrRate, strconv.FormatFloat(r, 'g', -1, 64), why)
}

// rateValue reads the rate of a TypeCicadaRate message's data.
func rateValue(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// onRate handles the master's TypeCicadaRate message: {"rate": float}.
func (w *Worker) onRate(msg protocol.Message) {
	var r float64
	ok := false
	if c, _ := msg.Data.(*protocol.Custom); c != nil {
		if m, _ := c.Data.(map[string]any); m != nil {
			r, ok = rateValue(m["rate"])
		}
	}
	if !ok {
		w.logRepeated(slog.LevelError, causeRate, "arrival rate message without a numeric rate; ignored", "data", msg.Data)
		return
	}
	if err := w.SetRate(r); err != nil {
		w.logRepeated(slog.LevelError, causeRate, "arrival rate refused", "err", err)
		return
	}
	w.log.Debug("arrival rate share from master", "rate", r)
}

// record is User.Record's and the HTTP helpers' path to the stats: the
// requests of a paced iteration carry their corrected time.
func (u *User) record(method, name string, rt time.Duration, contentLength int64, failure string) {
	if u.paced {
		if rr, ok := u.p.env.rec.(rateRecorder); ok {
			rr.RecordCorrected(method, name, rt, rt+u.lag, contentLength, failure)
			return
		}
	}
	u.p.env.rec.Record(method, name, rt, contentLength, failure)
}
