package worker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/worker/httpc"
)

// DefaultSecondRoundTimeout is the default of Options.SecondRoundTimeout.
const DefaultSecondRoundTimeout = 2 * time.Minute

// secondRoundProbers bounds the goroutines that send second-round
// requests for waiting users (each needs a stack while its request runs).
const secondRoundProbers = 64

// SecondRoundResult is the outcome of a second round (see
// Worker.SecondRound): of Users users, Reused sent their request on the
// connection they already had, Reconnected had to open a new one, Failed
// got an error (by kind in Errors).
type SecondRoundResult struct {
	Users, Reused, Reconnected, Failed int64
	Errors                             map[string]int64
}

// secondRound collects the outcomes of one round.
type secondRound struct {
	users, reused, reconnected, failed atomic.Int64

	mu   sync.Mutex
	errs map[string]int64

	pending sync.WaitGroup // users counted whose request is not done
}

func (r *secondRound) fail(reason string) {
	r.failed.Add(1)
	r.mu.Lock()
	r.errs[reason]++
	r.mu.Unlock()
}

func (r *secondRound) result() SecondRoundResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := make(map[string]int64, len(r.errs))
	for k, v := range r.errs {
		errs[k] = v
	}
	return SecondRoundResult{Users: r.users.Load(), Reused: r.reused.Load(), Reconnected: r.reconnected.Load(), Failed: r.failed.Load(), Errors: errs}
}

// visit makes u send its second-round request: at once on this goroutine
// if u is waiting between tasks, else right after its current task (the
// user's own goroutine sends it). Users that are stopping are left out.
func (r *secondRound) visit(u *User) {
	u.mu.Lock()
	if u.stopReq || u.state == stFinishing || u.state == stDone || u.probe != nil {
		u.mu.Unlock()
		return
	}
	r.users.Add(1)
	r.pending.Add(1)
	if u.state == stWaiting && u.timer != nil && u.timer.Stop() {
		// The user is ours until we re-arm its timer.
		u.state = stRunning
		due := u.due
		u.mu.Unlock()
		u.sendProbe(r)
		u.mu.Lock()
		if u.stopReq {
			u.state = stFinishing
			u.mu.Unlock()
			go u.finish()
			return
		}
		u.state = stWaiting
		u.timer.Reset(max(time.Until(time.Unix(0, due)), 0))
		u.mu.Unlock()
		return
	}
	u.probe = r
	u.mu.Unlock()
}

// takeProbe returns and clears a pending second-round request.
func (u *User) takeProbe() *secondRound {
	u.mu.Lock()
	r := u.probe
	u.probe = nil
	u.mu.Unlock()
	return r
}

// sendProbe repeats the user's last request on its existing connection
// and records whether the connection was reused. The request is recorded
// in the stats like any other.
func (u *User) sendProbe(r *secondRound) {
	defer r.pending.Done()
	req := u.lastReq
	if req == nil || u.http.client == nil {
		r.fail("no connection (the user sent no request yet)")
		return
	}
	resp := respPool.Get().(*httpc.Response)
	defer respPool.Put(resp)
	if err := u.do(u.ctx, req, (*Expect)(nil), resp); err != nil {
		k := httpc.Classify(err)
		label := k.String()
		if k.GeneratorSide() {
			label += " (load generator)"
		}
		r.fail(label)
		return
	}
	if resp.Reused {
		r.reused.Add(1)
	} else {
		r.reconnected.Add(1)
	}
}

// SecondRound makes every running user send one more request, its last
// one again, on the connection it already has (RFC 3511 §5.2's check that
// held connections still work), and returns how many reused their
// connection. Waiting users send it at once (at most 64 at a time), busy
// ones after their current task; their timers keep their schedule. It
// returns when every request is done, or when ctx is done (the requests
// not done count as failed). One round runs at a time.
func (w *Worker) SecondRound(ctx context.Context) (SecondRoundResult, error) {
	if !w.roundBusy.CompareAndSwap(false, true) {
		return SecondRoundResult{}, fmt.Errorf("worker: a second round is already running")
	}
	defer w.roundBusy.Store(false)
	if w.opts.Runtime != nil {
		return w.opts.Runtime.SecondRound(ctx)
	}
	users := w.pool.running()
	r := &secondRound{errs: make(map[string]int64)}
	var next atomic.Int64
	var probers sync.WaitGroup
	for range min(secondRoundProbers, len(users)) {
		probers.Add(1)
		go func() {
			defer probers.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(users)) || ctx.Err() != nil {
					return
				}
				r.visit(users[i])
			}
		}()
	}
	probers.Wait()
	done := make(chan struct{})
	go func() { r.pending.Wait(); close(done) }()
	select {
	case <-done:
		return r.result(), nil
	case <-ctx.Done():
		res := r.result()
		missing := res.Users - res.Reused - res.Reconnected - res.Failed
		if missing > 0 {
			res.Failed += missing
			res.Errors["no answer in time"] += missing
		}
		return res, ctx.Err()
	}
}

// onSecondRound answers the master's cicada_second_round in the
// background with cicada_second_round_result.
func (w *Worker) onSecondRound() {
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		ctx, cancel := context.WithTimeout(w.env.runCtx, w.opts.SecondRoundTimeout)
		defer cancel()
		start := time.Now()
		w.log.Info("second round: every user sends one more request on its connection")
		res, err := w.SecondRound(ctx)
		if err != nil && res.Users == 0 {
			w.log.Warn("second round failed", "err", err)
		}
		errs := make(map[string]any, len(res.Errors))
		for k, v := range res.Errors {
			errs[k] = v
		}
		w.log.Info(fmt.Sprintf("Second round: %d users, %d reused their connection, %d reconnected, %d failed", res.Users, res.Reused, res.Reconnected, res.Failed),
			"took", time.Since(start).Round(time.Millisecond))
		w.send(protocol.TypeCicadaSecondRoundResult, &protocol.Custom{Data: map[string]any{
			"users": res.Users, "reused": res.Reused, "reconnected": res.Reconnected, "failed": res.Failed, "errors": errs,
		}})
	}()
}
