package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/worker/httpc"
)

// ErrStopUser, returned by a task or OnStart, stops that user for good (like
// raising StopUser in a Locust task). The user runs OnStop and is no longer
// counted; it is not reported as an exception.
var ErrStopUser = errors.New("worker: stop user")

// TaskFunc is the body of a task, OnStart or OnStop. ctx is cancelled when
// the user is stopped forcibly (after the master's stop_timeout) or the
// worker shuts down; long work must honour it. A returned error other than
// ErrStopUser is reported to the master as an exception (Locust's
// "exception" message), not as a request failure; record request failures
// with User.Record or the User's HTTP helpers instead.
type TaskFunc func(ctx context.Context, u *User) error

// Task is one weighted task of a user class.
type Task struct {
	// Name identifies the task in exception reports and logs.
	Name string
	// Weight is the relative probability of picking this task (Locust's
	// @task(weight)); in a Sequential class it is how many times in a row
	// the task runs. If zero, 1 is used.
	Weight int
	// Fn runs the task. If nil, the task sends Requests in order
	// (RequestsFunc); one of the two must be set.
	Fn TaskFunc
	// Requests are the task's HTTP requests as data, in order: what a
	// runtime that cannot run Go code (the data plane, Options.Runtime)
	// sends instead of calling Fn. Package scenario fills both. A task
	// with only Fn cannot run on such a runtime, which refuses it by name.
	Requests []Request
	// Tags are the task's tags for -T/--tags and -E/--exclude-tags
	// (Locust's @tag); see FilterTasks for the selection rules.
	Tags []string
	// Parallel marks a task made by ParallelRequestsFunc: its Requests go
	// out at once (streams of the user's HTTP/2 connection), not in
	// order. A runtime that sends Requests itself must honour it or
	// refuse the task.
	Parallel bool
	// Socket, if set, is a WebSocket or TCP task as data (SocketFunc runs
	// it when Fn is nil). Runtimes that speak only HTTP refuse it.
	Socket *Socket
}

// Request is one HTTP request as data, with the checks that decide its
// success.
type Request struct {
	HTTP httpc.Request
	// Expect are the response checks; nil means any status below 400.
	Expect *Expect
	// Dynamic, if not empty, says why this request is not fixed data
	// (templates filled from the user's variables, captures, checks
	// that only Go code runs): a runtime that sends requests as data
	// (the data plane) refuses it with this reason. The task's Fn sends
	// it.
	Dynamic string
}

// RequestsFunc returns a task that sends reqs in order with User.DoDiscard.
// Failures are recorded in the stats and do not end the task (as in
// Locust, a failed request is not an exception); a missing host or an
// unusable URL is returned (reported as an exception).
func RequestsFunc(reqs []Request) TaskFunc {
	return func(ctx context.Context, u *User) error {
		for i := range reqs {
			err := u.DoDiscard(ctx, &reqs[i].HTTP, reqs[i].Expect)
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrNoHost) || errors.Is(err, httpc.ErrInvalidURL) {
				return err // a configuration problem: reported as an exception
			}
		}
		return nil
	}
}

// UserClass describes one kind of simulated user, the Go counterpart of a
// Locust User class. The master refers to it by Name in spawn messages.
// A UserClass must not be modified after it is passed to New.
type UserClass struct {
	// Name is the class name the master uses (Locust: the class's __name__).
	Name string
	// Weight is the class's relative share of users for a master's
	// dispatcher. If zero, 1 is used.
	Weight int
	// FixedCount, if positive, asks a master for exactly this many users
	// of the class in the whole cluster (Locust's fixed_count).
	FixedCount int
	// Host is the default base URL of this class's HTTP client. The host
	// sent by the master (-H) takes precedence, as in Locust; if both are
	// empty the scenario's host is used.
	Host string
	// Wait is the wait time between tasks. If nil, WaitSpec's; if both
	// are unset, there is no wait.
	Wait WaitTime
	// WaitSpec is the wait time as data (see Task.Requests); a runtime
	// that cannot call Go code refuses a Wait without it.
	WaitSpec *WaitSpec
	// Tasks are the tasks; at least one is required.
	Tasks []Task
	// Sequential runs the tasks in order (each Weight times) instead of
	// picking them at random by weight (Locust's SequentialTaskSet).
	Sequential bool
	// OnStart, if set, runs once when the user starts, before its first
	// task (Locust's on_start).
	OnStart TaskFunc
	// OnStop, if set, runs once when the user stops (Locust's on_stop). It
	// runs after the current task finished, or after it was interrupted by
	// a forced stop, with a context that is not yet cancelled.
	OnStop TaskFunc
	// OnStartRequests and OnStopRequests are OnStart and OnStop as data
	// (see Task.Requests); when OnStart or OnStop is nil, they run these.
	OnStartRequests, OnStopRequests []Request
}

// compiledClass is a validated UserClass with its task selection tables.
type compiledClass struct {
	def   *UserClass
	idx   int                       // index in Scenario.Classes
	table atomic.Pointer[taskTable] // the tasks selected by the test's tags
}

func compileClass(uc *UserClass) (*compiledClass, error) {
	if uc.Name == "" {
		return nil, fmt.Errorf("%w: user class without a name", ErrScenario)
	}
	if uc.Weight < 0 || uc.FixedCount < 0 {
		return nil, fmt.Errorf("%w: user class %q: negative weight or fixed_count", ErrScenario, uc.Name)
	}
	if len(uc.Tasks) == 0 {
		return nil, fmt.Errorf("%w: user class %q has no tasks", ErrScenario, uc.Name)
	}
	c := &compiledClass{def: uc}
	uc.Tasks = slices.Clone(uc.Tasks) // Fn filled in below: not the caller's
	if uc.Wait == nil && uc.WaitSpec != nil {
		uc.Wait = uc.WaitSpec.WaitTime()
	}
	if uc.OnStart == nil && len(uc.OnStartRequests) > 0 {
		uc.OnStart = RequestsFunc(uc.OnStartRequests)
	}
	if uc.OnStop == nil && len(uc.OnStopRequests) > 0 {
		uc.OnStop = RequestsFunc(uc.OnStopRequests)
	}
	for i, t := range uc.Tasks {
		if t.Fn == nil && t.Socket != nil {
			uc.Tasks[i].Fn = SocketFunc(t.Socket)
		} else if t.Fn == nil && len(t.Requests) > 0 {
			uc.Tasks[i].Fn = RequestsFunc(t.Requests)
		} else if t.Fn == nil {
			return nil, fmt.Errorf("%w: user class %q: task %d (%q) has neither a function nor requests", ErrScenario, uc.Name, i, t.Name)
		}
		if t.Weight < 0 {
			return nil, fmt.Errorf("%w: user class %q: task %q has a negative weight", ErrScenario, uc.Name, t.Name)
		}
	}
	c.table.Store(buildTable(uc, tagFilter{}))
	return c, nil
}

// user states
const (
	stNew       uint8 = iota // created, first step not yet run
	stRunning                // a goroutine runs a task, OnStart or the wait computation
	stWaiting                // idle: the timer will run the next step
	stFinishing              // OnStop / cleanup in progress
	stDone
)

// User is one simulated user. Each user runs its tasks one at a time; while
// it waits between tasks it holds no goroutine (the next task is scheduled
// with a timer), so an idle user costs only this struct, its timer and its
// HTTP client.
//
// The methods of User may be called from its own tasks only (they are not
// meant for other goroutines), except where noted.
type User struct {
	// Data is free for the scenario's per-user state (Locust: attributes
	// on self). Only the user's own tasks touch it, one at a time.
	Data any

	p      *pool
	class  *classRT
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer

	mu      sync.Mutex // guards state, stopReq, batch, timer arming
	state   uint8
	stopReq bool
	forced  bool

	started    bool // OnStart ran (owned by the running step)
	idx        int  // position in class.users; -1 when detached (guarded by pool.mu)
	batch      *stopBatch
	seq        int // next position in class.seq
	cpLastRun  int64
	cpLastWait time.Duration
	src        uint32         // index of the user's source address
	due        int64          // when the timer fires (unix ns), while waiting
	lastReq    *httpc.Request // the last request sent, for a second round
	probe      *secondRound   // a second-round request to send after the current step (guarded by mu)
	// Arrival-rate mode (rate.go): dispatched and dueNs (the iteration's
	// due time, unix ns) are set by the pacer when it starts the user's
	// next iteration (under mu, before the step's go statement); paced
	// holds while that iteration's task runs, lag is how late the task
	// began. Owned by the running step otherwise.
	dispatched, paced bool
	dueNs             int64
	lag               time.Duration

	http httpState
	sock *sockState // WebSocket and TCP connections, made on first use (socket.go)
}

// Class returns the user class name this user was spawned as: the name the
// master used, which may differ from the UserClass.Name when a scenario
// with a single class serves any name.
func (u *User) Class() string { return u.class.name }

// Logger returns the worker's logger.
func (u *User) Logger() *slog.Logger { return u.p.env.log }

// Host returns the base URL in effect for this user: the master's host if
// it sent one, else the class's Host, else the scenario's Host.
func (u *User) Host() string { return u.p.env.hostFor(u.class.def.def) }

// Record reports one request (or any timed action) to the worker's stats, as
// Locust's events.request does: method is Locust's request_type, rt the
// response time, contentLength the response size in bytes, and err the
// failure (nil for success). The failure text in the stats is err.Error().
// Safe for concurrent use.
func (u *User) Record(method, name string, rt time.Duration, contentLength int64, err error) {
	failure := ""
	if err != nil {
		failure = err.Error()
		if failure == "" {
			failure = "error"
		}
	}
	u.record(method, name, rt, contentLength, failure)
}

// step runs the user's next piece of work: OnStart (first time), a task,
// then arms the timer for the wait. It runs on a fresh goroutine each time
// (go statement or timer callback) and returns while the user waits.
func (u *User) step() {
	cc := u.class.def
	for {
		u.mu.Lock()
		if u.stopReq {
			u.state = stFinishing
			u.mu.Unlock()
			u.finish()
			return
		}
		u.state = stRunning
		u.mu.Unlock()

		if !u.started {
			u.started = true
			if cc.def.OnStart != nil {
				if u.run("on_start", cc.def.OnStart) {
					u.selfStop()
					return
				}
			}
			continue // re-check the stop request before the first task
		}

		pc := u.p.rate.Load()
		if pc != nil {
			if !u.dispatched {
				if pc.park(u) {
					return
				}
				continue // a stop was requested: finish at the top
			}
			u.dispatched, u.paced = false, true
			u.lag = max(0, time.Duration(pc.now().UnixNano()-u.dueNs))
		}
		ti := u.pick()
		var stop bool
		if ti < 0 { // no task left after tag filtering: Locust's exception
			u.run("(no task)", func(context.Context, *User) error { return noTasksError(u.class.name) })
		} else {
			t := &cc.def.Tasks[ti]
			stop = u.run(t.Name, t.Fn)
		}
		u.paced, u.lag = false, 0
		if stop {
			u.selfStop()
			return
		}
		if r := u.takeProbe(); r != nil {
			u.sendProbe(r)
		}
		var w time.Duration
		if pc != nil {
			continue // the pacer starts the next iteration
		}
		if cc.def.Wait != nil {
			w = cc.def.Wait(u)
		}
		if ti < 0 {
			w = max(w, NoTaskWait)
		}
		if w <= 0 {
			continue
		}
		u.mu.Lock()
		if u.stopReq {
			u.state = stFinishing
			u.mu.Unlock()
			u.finish()
			return
		}
		u.state = stWaiting
		u.due = time.Now().Add(w).UnixNano()
		if u.timer == nil {
			u.timer = time.AfterFunc(w, u.step)
		} else {
			u.timer.Reset(w)
		}
		u.mu.Unlock()
		return
	}
}

// pick returns the index of the next task, or -1 if the class has no task
// left after tag filtering.
func (u *User) pick() int {
	cc := u.class.def
	t := cc.table.Load()
	switch {
	case len(t.idx) == 0:
		return -1
	case cc.def.Sequential:
		if u.seq >= len(t.seq) { // the table changed for a new test
			u.seq = 0
		}
		i := t.seq[u.seq]
		u.seq++
		if u.seq == len(t.seq) {
			u.seq = 0
		}
		return i
	case len(t.cum) == 1:
		return t.idx[0]
	}
	r := randIntN(t.total)
	lo, hi := 0, len(t.cum)-1
	for lo < hi {
		m := (lo + hi) / 2
		if t.cum[m] > r {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return t.idx[lo]
}

// run calls fn with panic recovery and reports its error. It returns true
// when the user must stop (ErrStopUser).
func (u *User) run(name string, fn TaskFunc) (stop bool) {
	err := u.call(fn)
	if err == nil {
		return false
	}
	if errors.Is(err, ErrStopUser) {
		return true
	}
	var pe *panicError
	if !errors.As(err, &pe) && u.ctx.Err() != nil {
		// The task was interrupted by a forced stop or shutdown: expected.
		return false
	}
	u.p.env.taskError(u.class.def.def.Name, name, err)
	return false
}

// call runs fn, turning a panic into a *panicError.
func (u *User) call(fn TaskFunc) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: cleanStack(debug.Stack())}
		}
	}()
	return fn(u.ctx, u)
}

// selfStop handles ErrStopUser: the user leaves its class and finishes.
func (u *User) selfStop() {
	u.p.detach(u)
	u.mu.Lock()
	u.stopReq = true
	u.state = stFinishing
	u.mu.Unlock()
	u.finish()
}

// requestStop asks the user to stop gracefully: at once if it is waiting,
// else after its current task. b is notified when it is done.
func (u *User) requestStop(b *stopBatch) {
	u.mu.Lock()
	if u.stopReq {
		u.mu.Unlock()
		b.doneOne()
		return
	}
	u.stopReq = true
	u.batch = b
	if u.state == stWaiting && u.timer.Stop() {
		u.state = stFinishing
		if u.class.def.def.OnStop == nil {
			// Nothing of this user can still record a request: it counts
			// as stopped now, and its cleanup (closing its connection)
			// must not delay the caller (the final stats report at quit).
			u.batch = nil
			u.mu.Unlock()
			b.doneOne()
		} else {
			u.mu.Unlock()
		}
		go u.finish()
		return
	}
	u.mu.Unlock()
}

// force interrupts the user's current task by cancelling its context.
func (u *User) force() {
	u.mu.Lock()
	u.forced = true
	u.mu.Unlock()
	u.cancel()
}

// finish runs OnStop, releases the user's resources and reports it done.
func (u *User) finish() {
	if u.started && u.class.def.def.OnStop != nil {
		ctx := u.ctx
		u.mu.Lock()
		forced := u.forced
		u.mu.Unlock()
		if forced {
			// Give OnStop a context of its own that the forced stop did not
			// cancel, bounded by the worker's lifetime.
			ctx = u.p.env.runCtx
		}
		saved := u.ctx
		u.ctx = ctx
		u.run("on_stop", u.class.def.def.OnStop)
		u.ctx = saved
	}
	u.cancel()
	if r := u.takeProbe(); r != nil {
		r.fail("user stopped")
		r.pending.Done()
	}
	u.http.close()
	u.sock.close() // nil-safe
	u.mu.Lock()
	b := u.batch
	u.state = stDone
	u.mu.Unlock()
	if b != nil {
		b.doneOne()
	}
	u.p.nLive.Add(-1)
	u.p.live.Done()
}

// panicError is a recovered panic in user code.
type panicError struct {
	value any
	stack string
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

var hexAddr = regexp.MustCompile(`0x[0-9a-fA-F]+`)

// cleanStack turns debug.Stack output into a stable traceback: no goroutine
// header, no argument addresses, and without the frames of the recovery
// machinery, so that the master groups equal panics into one row.
func cleanStack(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 && strings.HasPrefix(s, "goroutine ") {
		s = s[i+1:]
	}
	// Drop everything up to the panic call itself.
	if i := strings.Index(s, "panic("); i >= 0 {
		if j := strings.Index(s[i:], "\n"); j >= 0 {
			// skip the "panic(...)" line and its file line
			rest := s[i+j+1:]
			if k := strings.Index(rest, "\n"); k >= 0 {
				s = rest[k+1:]
			}
		}
	}
	return hexAddr.ReplaceAllString(s, "0x...")
}
