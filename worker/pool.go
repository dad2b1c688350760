package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// recorder is the part of *stats.Recorder that users need.
type recorder interface {
	Record(method, name string, rt time.Duration, contentLength int64, failure string)
}

// env is what users share: stats, logging, exception reporting and hosts.
type env struct {
	rec      recorder
	log      *slog.Logger
	runCtx   context.Context // parent of every user context
	onExc    func(msg, traceback string)
	httpOpts httpOptions

	defHost    string                 // the scenario's host
	masterHost atomic.Pointer[string] // the host of the last spawn, if any
	configs    clientConfigs
	worker     *Worker   // the worker running the pool (User.Worker)
	socks      socketEnv // socket tasks' options and counters (socket.go)
}

// hostFor returns the effective base URL for users of class c.
func (e *env) hostFor(c *UserClass) string {
	if h := e.masterHost.Load(); h != nil && *h != "" {
		return *h
	}
	if c.Host != "" {
		return c.Host
	}
	return e.defHost
}

// taskError reports an error or panic of user code as an exception.
func (e *env) taskError(class, task string, err error) {
	var pe *panicError
	var tb string
	if errors.As(err, &pe) {
		tb = fmt.Sprintf("in task %s.%s (panic)\n%s", class, task, pe.stack)
	} else {
		tb = fmt.Sprintf("in task %s.%s\n", class, task)
	}
	if e.onExc != nil {
		e.onExc(err.Error(), tb)
	}
}

// classRT is a user class as the master names it, with its running users in
// start order (the last started is stopped first, as Locust does).
type classRT struct {
	name  string
	def   *compiledClass
	users []*User // guarded by pool.mu
}

// pool owns all users of a worker. apply, stopAll and counts are safe for
// concurrent use.
type pool struct {
	env  *env
	defs []*compiledClass // in scenario order

	mu      sync.Mutex
	classes map[string]*classRT // by the name the master uses
	aliased bool                // the one-class notice was logged
	exact   bool                // Scenario.ExactClassNames: no alias
	closed  bool                // the worker is shutting down: start no more users

	live    sync.WaitGroup // users started and not finished
	nLive   atomic.Int64
	nextSrc atomic.Uint32         // source address of the next user, round robin
	rate    atomic.Pointer[pacer] // arrival-rate mode (rate.go); nil: closed model
}

func newPool(e *env, classes []*compiledClass) *pool {
	p := &pool{env: e, defs: classes, classes: make(map[string]*classRT)}
	for _, c := range classes {
		p.classes[c.def.Name] = &classRT{name: c.def.Name, def: c}
	}
	return p
}

// classLocked returns the class the master calls name, creating an alias
// of the only class when the scenario has exactly one. Precondition: p.mu
// held.
func (p *pool) classLocked(name string) *classRT {
	if c, ok := p.classes[name]; ok {
		return c
	}
	if len(p.defs) != 1 || name == "" || p.exact {
		return nil
	}
	if !p.aliased {
		p.aliased = true
		p.env.log.Info("the scenario has a single user class; it serves every class name the master asks for",
			"class", p.defs[0].def.Name, "requested", name)
	}
	c := &classRT{name: name, def: p.defs[0]}
	p.classes[name] = c
	return c
}

// stopBatch tracks a group of users being stopped.
type stopBatch struct {
	users     []*User
	remaining atomic.Int64
	done      chan struct{}
}

func newBatch() *stopBatch { return &stopBatch{done: make(chan struct{})} }

func (b *stopBatch) doneOne() {
	if b.remaining.Add(-1) == 0 {
		close(b.done)
	}
}

// start initiates the graceful stop of every user in the batch.
func (b *stopBatch) start() {
	b.remaining.Store(int64(len(b.users)))
	if len(b.users) == 0 {
		close(b.done)
		return
	}
	for _, u := range b.users {
		u.requestStop(b)
	}
}

// wait waits for the batch: gracefully for up to grace, then it forces the
// remaining users and waits up to forceWait more. It returns true if every
// user finished. abort, if it fires, ends the graceful phase early.
func (b *stopBatch) wait(grace, forceWait time.Duration, abort <-chan struct{}) bool {
	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-b.done:
			t.Stop()
			return true
		case <-t.C:
		case <-abort:
			t.Stop()
		}
	}
	select {
	case <-b.done:
		return true
	default:
	}
	for _, u := range b.users {
		u.force()
	}
	t := time.NewTimer(forceWait)
	defer t.Stop()
	select {
	case <-b.done:
		return true
	case <-t.C:
		return false
	}
}

// startBatch is the most users started under one hold of pool.mu: between
// batches the lock is free for stats and stops, and a newer command can
// interrupt the start.
const startBatch = 256

// spawnPlan is what converging to a spawn's counts takes.
type spawnPlan struct {
	// unknown are the class names the pool does not have (asked for > 0).
	unknown []string
	// counts are the users per known class the worker converges to: the
	// spawn's, or their share of the ceiling if clamped.
	counts map[string]int64
	// asked is the total the spawn asks for of the known classes
	// (saturated at math.MaxInt64); clamped tells that it exceeded the
	// ceiling and counts were scaled down to it.
	asked   int64
	clamped bool
	// starts are the users to start, per class, in class-name order.
	starts []classStart
	// stop holds the surplus users, already detached; the caller must start
	// and wait for it.
	stop *stopBatch
}

// classStart is a number of users to start in one class.
type classStart struct {
	c *classRT
	n int64
}

// plan prepares converging to the absolute per-class counts in target,
// with at most ceiling users in the known classes (negative: no ceiling):
// it detaches the surplus users (most recently started first) into the
// plan's stop batch and counts the missing ones, which start starts. Class
// names the pool does not have are returned in the plan's unknown. It
// holds p.mu for a time proportional to the classes and the surplus, not
// to the users to start.
func (p *pool) plan(target map[string]int64, ceiling int64) spawnPlan {
	pl := spawnPlan{stop: newBatch(), counts: make(map[string]int64)}
	names := make([]string, 0, len(target))
	for n := range target {
		names = append(names, n)
	}
	slices.Sort(names)
	p.mu.Lock()
	defer p.mu.Unlock()
	known := names[:0]
	for _, name := range names {
		want := max(target[name], 0)
		if p.classLocked(name) == nil {
			if want > 0 {
				pl.unknown = append(pl.unknown, name)
			}
			continue
		}
		known = append(known, name)
		pl.counts[name] = want
		pl.asked = addSat(pl.asked, want)
	}
	if ceiling >= 0 && pl.asked > ceiling {
		pl.counts = clampCounts(known, pl.counts, pl.asked, ceiling)
		pl.clamped = true
	}
	for _, name := range known {
		c, want := p.classes[name], pl.counts[name]
		if have := int64(len(c.users)); have < want {
			pl.starts = append(pl.starts, classStart{c: c, n: want - have})
		}
		for int64(len(c.users)) > want {
			u := c.users[len(c.users)-1]
			c.users[len(c.users)-1] = nil
			c.users = c.users[:len(c.users)-1]
			u.idx = -1
			pl.stop.users = append(pl.stop.users, u)
		}
	}
	return pl
}

// start starts the users of starts, at most startBatch under one hold of
// p.mu. Before each batch it calls interrupted (if not nil) and stops
// early when it returns true, or when the pool was closed. It returns the
// number of users started and whether all were.
func (p *pool) start(starts []classStart, interrupted func() bool) (started int64, complete bool) {
	for _, cs := range starts {
		for left := cs.n; left > 0; {
			if interrupted != nil && interrupted() {
				return started, false
			}
			k := min(left, startBatch)
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				return started, false
			}
			for range k {
				p.startLocked(cs.c)
			}
			p.mu.Unlock()
			left -= k
			started += k
		}
	}
	return started, true
}

// apply converges to the absolute per-class counts in target without a
// ceiling or interruption: plan, then start. The caller must start and
// wait for the returned batch of surplus users.
func (p *pool) apply(target map[string]int64) (unknown []string, b *stopBatch) {
	pl := p.plan(target, -1)
	p.start(pl.starts, nil)
	return pl.unknown, pl.stop
}

// clampCounts scales counts (per class; names lists them in a stable
// order; asked is their sum, saturated) down to ceiling users, in
// proportion (largest remainders). The result sums to ceiling.
func clampCounts(names []string, counts map[string]int64, asked, ceiling int64) map[string]int64 {
	scaled := counts
	if asked == math.MaxInt64 && len(names) > 1 {
		// The sum may have saturated: shares of counts/len(names) keep the
		// proportions and sum to at most math.MaxInt64.
		scaled = make(map[string]int64, len(counts))
		asked = 0
		for _, name := range names {
			scaled[name] = counts[name] / int64(len(names))
			asked += scaled[name]
		}
	}
	out := make(map[string]int64, len(counts))
	rem := make(map[string]uint64, len(counts)) // of each share's division
	var sum int64
	for _, name := range names {
		if asked == 0 {
			break
		}
		hi, lo := bits.Mul64(uint64(scaled[name]), uint64(ceiling))
		share, r := bits.Div64(hi, lo, uint64(asked)) // scaled[name] <= asked: no overflow
		out[name] = min(int64(share), ceiling-sum)
		rem[name] = r
		sum += out[name]
	}
	// The rounding's remainder (fewer users than classes) goes to the
	// largest remainders, ties in names order.
	order := slices.Clone(names)
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(rem[b], rem[a]) })
	for _, name := range order {
		if sum >= ceiling {
			break
		}
		if out[name] < counts[name] {
			out[name]++
			sum++
		}
	}
	return out
}

// addSat returns a+b for non-negative a and b, saturated at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// startLocked starts one user of class c. Precondition: p.mu held.
func (p *pool) startLocked(c *classRT) {
	u := &User{p: p, class: c, idx: len(c.users), src: p.nextSrc.Add(1) - 1}
	u.ctx, u.cancel = context.WithCancel(p.env.runCtx)
	c.users = append(c.users, u)
	p.live.Add(1)
	p.nLive.Add(1)
	go u.step()
}

// detach removes u from its class (ErrStopUser).
func (p *pool) detach(u *User) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if u.idx < 0 {
		return
	}
	us := u.class.users
	last := len(us) - 1
	if u.idx != last {
		us[u.idx] = us[last]
		us[u.idx].idx = u.idx
	}
	us[last] = nil
	u.class.users = us[:last]
	u.idx = -1
}

// close makes start start no more users, and detaches every running user
// into one batch (as stopAll): for the worker's teardown, which may run
// while the controller is starting users.
func (p *pool) close() *stopBatch {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return p.stopAll()
}

// stopAll detaches every running user into one batch.
func (p *pool) stopAll() *stopBatch {
	b := newBatch()
	p.mu.Lock()
	for _, c := range p.classes {
		for i := len(c.users) - 1; i >= 0; i-- {
			u := c.users[i]
			u.idx = -1
			b.users = append(b.users, u)
			c.users[i] = nil
		}
		c.users = c.users[:0]
	}
	p.mu.Unlock()
	return b
}

// counts returns the running users per class (every known class, zeros
// included) and their total.
func (p *pool) counts() (map[string]int64, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int64, len(p.classes))
	var total int64
	for name, c := range p.classes {
		n := int64(len(c.users))
		m[name] = n
		total += n
	}
	return m, total
}

// running returns the running users.
func (p *pool) running() []*User {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.classes {
		n += len(c.users)
	}
	out := make([]*User, 0, n)
	for _, c := range p.classes {
		out = append(out, c.users...)
	}
	return out
}

// waitIdle waits until every user has finished, up to d.
func (p *pool) waitIdle(d time.Duration) bool {
	done := make(chan struct{})
	go func() { p.live.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

func randIntN(n int) int { return rand.IntN(n) }
