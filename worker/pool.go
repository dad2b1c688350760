package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

	live    sync.WaitGroup // users started and not finished
	nLive   atomic.Int64
	nextSrc atomic.Uint32 // source address of the next user, round robin
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
	if len(p.defs) != 1 || name == "" {
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

// apply converges to the absolute per-class counts in target: it starts the
// missing users at once and detaches the surplus (most recently started
// first) into the returned batch, which the caller must start and wait for.
// Class names the pool does not have are returned in unknown.
func (p *pool) apply(target map[string]int64) (unknown []string, b *stopBatch) {
	b = newBatch()
	names := make([]string, 0, len(target))
	for n := range target {
		names = append(names, n)
	}
	slices.Sort(names)
	p.mu.Lock()
	for _, name := range names {
		want := target[name]
		c := p.classLocked(name)
		if c == nil {
			if want > 0 {
				unknown = append(unknown, name)
			}
			continue
		}
		if want < 0 {
			want = 0
		}
		for int64(len(c.users)) < want {
			p.startLocked(c)
		}
		for int64(len(c.users)) > want {
			u := c.users[len(c.users)-1]
			c.users[len(c.users)-1] = nil
			c.users = c.users[:len(c.users)-1]
			u.idx = -1
			b.users = append(b.users, u)
		}
	}
	p.mu.Unlock()
	return unknown, b
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
