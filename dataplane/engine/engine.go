// Package engine drives userspace stacks: Engine runs one polling loop per
// core, each over its own Stack and link, and Loop is the single-loop form
// on the calling goroutine.
//
// # The engine (issue 11)
//
// Each core is one goroutine, locked to its OS thread when
// Config.LockThreads is set, that runs to completion, turn after turn:
// receive a burst and process it, run due timers and ARP, flush (all in
// stack.Poll); pick up a pending Do; call Config.Tick (where the integration
// layer launches and stops connections at its pace, for example with a
// Launcher); and once a second publish the core's counters and call
// Config.Every. A turn that did nothing waits on the core's Waiter for up to
// IdleWait (or yields the processor when it has none). Nothing on a turn
// locks or allocates: a pending Do is one atomic load, the stop flag
// another, and the publication takes the engine's mutex once a second.
//
// The cores own disjoint slices of the client port space: Split divides
// PortMin..PortMax and core k's stack gets slice k and every client
// address, on the client and on the server alike, as dperf splits it. The
// link must deliver each frame to the core owning its port (afpacket's
// OpenFanout does so with a classic BPF fanout program); ARP and ICMP reach
// core 0 only, so the engine copies the next hop core 0 resolved to the
// other cores' stacks (stack.SetNextHop) while they have none, and once a
// second if it changed.
//
// # Counters and the busy share
//
// Every core publishes a CoreStats once a second of the engine's clock and
// when Run ends; Counters returns those publications and their sum (sums of
// every field, the largest RespTimeMax), so it may be called from any
// goroutine while Run runs and is at most a second behind.
//
// Busy is the share of the last publication interval spent in busy turns:
// a turn is busy if it received a frame or its stack sent one, opened or
// closed a connection (whether in Poll, Tick or Do); its time runs from its
// start to the next turn's start. Idle waits and turns that did none of
// these count as idle, so a core spinning without load shows near 0 and a
// saturated core near 1. dperf reports the same quantity as its "cpu"
// column; unlike dperf, the time of a turn is measured with the engine's
// clock (one read per turn), not with TSC cycles.
//
// # Deliberate differences from dperf
//
//   - Goroutines, not DPDK lcores: LockThreads pins each loop to an OS
//     thread but not the thread to a CPU; the Go scheduler and the kernel
//     place them. An idle loop sleeps in its Waiter rather than spinning.
//   - Pacing is not the engine's: Tick is called every turn and the caller
//     decides what to launch (Launcher is the ready-made pace).
package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// ErrConfig is wrapped by every refused Loop, Engine configuration, Split
// and Launcher.
var ErrConfig = errors.New("engine: invalid configuration")

// ErrStopped is returned by Loop.Run when ctx ended before Until held, and
// by Engine.Do when the engine's Run returned before fn ran on every core.
var ErrStopped = errors.New("engine: stopped before the loop was done")

// ErrRunning is returned by a second call of Engine.Run: an Engine runs
// once.
var ErrRunning = errors.New("engine: Run already called")

// Waiter is implemented by links that can block until frames arrive
// (afpacket.Link, afxdp.Link); an idle loop waits on it instead of spinning.
type Waiter interface {
	Wait(d time.Duration)
}

// PublishInterval is how often each core publishes its counters, on the
// engine's clock.
const PublishInterval = int64(time.Second)

// Config configures an Engine.
type Config struct {
	// Cores are the loops, one per core; at least one. Their stacks own
	// disjoint port slices of one tuple space (see Split) and distinct
	// links; the engine is each stack's only user while Run runs.
	Cores []Core
	// LockThreads locks each loop to its OS thread (runtime.LockOSThread)
	// for the whole run. The zero value does not: tests over the pipe run
	// more loops than the machine has CPUs. A data plane run sets it.
	LockThreads bool
	// IdleWait is the longest wait of an idle turn on the core's Waiter.
	// If zero, DefaultIdleWait.
	IdleWait time.Duration
	// Tick, if set, is called on each core's goroutine once per turn, after
	// the stack's Poll, with the core index, its stack and now: the
	// integration layer launches and stops connections here (the pace is
	// its own; see Launcher). It must not block: it delays the core's
	// receive. Turns follow each other without a pause under load and are
	// at most IdleWait apart when idle.
	Tick func(core int, s *stack.Stack, now int64)
	// Every, if set, is called once a PublishInterval on each core's
	// goroutine, after the core published its counters (the stats flush),
	// and once more when Run ends.
	Every func(core int, s *stack.Stack, now int64)
	// Clock, if set, is the engine's monotonic clock in nanoseconds, never
	// going back, shared by every core (tests inject a fake one). If nil,
	// the time since New.
	Clock func() int64
}

// Core is one loop's stack and, if its link can block, the link's Waiter.
type Core struct {
	Stack  *stack.Stack
	Waiter Waiter
}

// CoreStats is one core's publication.
type CoreStats struct {
	// Counters are the core's stack counters when it published.
	Counters stack.Counters
	// Busy is the share of the last publication interval spent in busy
	// turns (see the package doc), 0..1.
	Busy float64
	// Turns is the number of turns since Run began.
	Turns uint64
	// At is the engine's clock when the core published (0: not yet).
	At int64
}

// Engine runs one polling loop per core, each over its own Stack and link.
// Run, Do and Counters are safe for concurrent use (LOCKS.md).
type Engine struct {
	cfg   Config
	idle  time.Duration
	clock func() int64

	started atomic.Bool
	stop    atomic.Bool
	ended   chan struct{} // closed when Run's loops have all returned
	doSem   chan struct{} // one Do at a time
	cores   []coreState
	hop     atomic.Uint64 // core 0's next hop: hopValid | the MAC's 48 bits

	mu struct {
		sync.Mutex
		pub []CoreStats
	}
}

const hopValid = 1 << 48

// coreState is one core's mailbox, padded so that cores do not share a
// cache line.
type coreState struct {
	do atomic.Pointer[doReq]
	_  [56]byte
}

type doReq struct {
	fn   func(core int, s *stack.Stack, now int64)
	left atomic.Int32
	done chan struct{}
}

// New checks cfg and returns an Engine ready to Run, or an error wrapping
// ErrConfig.
func New(cfg Config) (*Engine, error) {
	if len(cfg.Cores) == 0 {
		return nil, fmt.Errorf("engine: no Cores: %w", ErrConfig)
	}
	if cfg.IdleWait < 0 {
		return nil, fmt.Errorf("engine: negative IdleWait %v: %w", cfg.IdleWait, ErrConfig)
	}
	seen := make(map[*stack.Stack]int, len(cfg.Cores))
	for k, c := range cfg.Cores {
		if c.Stack == nil {
			return nil, fmt.Errorf("engine: core %d has no Stack: %w", k, ErrConfig)
		}
		if j, dup := seen[c.Stack]; dup {
			return nil, fmt.Errorf("engine: cores %d and %d share a Stack: %w", j, k, ErrConfig)
		}
		seen[c.Stack] = k
	}
	e := &Engine{cfg: cfg, idle: cfg.IdleWait, clock: cfg.Clock,
		ended: make(chan struct{}), doSem: make(chan struct{}, 1),
		cores: make([]coreState, len(cfg.Cores))}
	e.cfg.Cores = append([]Core(nil), cfg.Cores...)
	e.mu.pub = make([]CoreStats, len(cfg.Cores))
	if e.idle == 0 {
		e.idle = DefaultIdleWait
	}
	if e.clock == nil {
		start := time.Now()
		e.clock = func() int64 { return int64(time.Since(start)) }
	}
	return e, nil
}

// Run runs every core's loop until ctx ends, then stops them (each within
// one turn and one IdleWait), waits for all, publishes their last counters
// and returns nil; no goroutine of the engine outlives it. A second call
// returns ErrRunning.
func (e *Engine) Run(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return ErrRunning
	}
	var wg sync.WaitGroup
	for k := range e.cfg.Cores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The label names the core in CPU profiles.
			pprof.Do(ctx, pprof.Labels("dataplane-core", strconv.Itoa(k)), func(context.Context) { e.loop(k) })
		}()
	}
	<-ctx.Done()
	e.stop.Store(true)
	wg.Wait()
	close(e.ended)
	return nil
}

// Do runs fn on every core's goroutine between two turns, with the core's
// index, stack and clock, and waits until all have run it. It returns
// ctx's error if ctx ends first, and ErrStopped if Run returns first (or
// had returned); the cores that had not started fn then never do, those
// that had finish it. Called before Run, it waits for Run's loops. Do
// calls are serialised; fn must not call Do.
func (e *Engine) Do(ctx context.Context, fn func(core int, s *stack.Stack, now int64)) error {
	if fn == nil {
		return fmt.Errorf("engine: Do with a nil func: %w", ErrConfig)
	}
	select {
	case e.doSem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("engine: Do: %w", ctx.Err())
	case <-e.ended:
		return ErrStopped
	}
	defer func() { <-e.doSem }()
	r := &doReq{fn: fn, done: make(chan struct{})}
	r.left.Store(int32(len(e.cores)))
	for k := range e.cores {
		e.cores[k].do.Store(r)
	}
	withdraw := func() {
		for k := range e.cores {
			e.cores[k].do.CompareAndSwap(r, nil)
		}
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		withdraw()
		return fmt.Errorf("engine: Do: %w", ctx.Err())
	case <-e.ended:
		withdraw()
		select {
		case <-r.done:
			return nil
		default:
			return ErrStopped
		}
	}
}

// Counters returns the cores' last publications and their sum: every
// field added, RespTimeMax the largest. Safe from any goroutine.
func (e *Engine) Counters() (sum stack.Counters, cores []CoreStats) {
	e.mu.Lock()
	cores = append([]CoreStats(nil), e.mu.pub...)
	e.mu.Unlock()
	for i := range cores {
		addCounters(&sum, &cores[i].Counters)
	}
	return sum, cores
}

// loop is core k's polling loop.
func (e *Engine) loop(k int) {
	if e.cfg.LockThreads {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	c, mb := e.cfg.Cores[k], &e.cores[k]
	s := c.Stack
	var (
		turns                 uint64
		busyNs                int64
		lastOut, lastOpen     uint64
		lastClosed            uint64
		prevStart             int64
		prevBusy              bool
		hop                   wire.MAC
		hopSet                bool
		ctr                   stack.Counters
		now                   = e.clock()
		windowStart, nextPub  = now, now + PublishInterval
		idleWait, tick, every = e.idle, e.cfg.Tick, e.cfg.Every
	)
	for !e.stop.Load() {
		now = e.clock()
		if prevBusy {
			busyNs += now - prevStart
		}
		prevStart = now
		turns++
		got := s.Poll(now)
		if k == 0 {
			if !hopSet {
				if m, ok := s.NextHop(); ok {
					hop, hopSet = m, true
					e.hop.Store(hopValid | macBits(m))
				}
			}
		} else if !s.Resolved() {
			if v := e.hop.Load(); v&hopValid != 0 {
				s.SetNextHop(bitsMAC(v))
			}
		}
		if r := mb.do.Load(); r != nil && mb.do.CompareAndSwap(r, nil) {
			r.fn(k, s, now)
			if r.left.Add(-1) == 0 {
				close(r.done)
			}
		}
		if tick != nil {
			tick(k, s, now)
		}
		ctr = s.Counters()
		busy := got > 0 || ctr.PktsOut != lastOut || ctr.SocketsOpened != lastOpen || ctr.SocketsClosed != lastClosed
		lastOut, lastOpen, lastClosed, prevBusy = ctr.PktsOut, ctr.SocketsOpened, ctr.SocketsClosed, busy
		if now >= nextPub {
			e.publish(k, &ctr, busyNs, now-windowStart, turns, now)
			busyNs, windowStart = 0, now
			nextPub = max(nextPub+PublishInterval, now+1)
			hop, hopSet = e.syncHop(k, s, hop, hopSet)
			if every != nil {
				every(k, s, now)
			}
		}
		if !busy {
			if c.Waiter != nil {
				c.Waiter.Wait(idleWait)
			} else {
				runtime.Gosched()
			}
		}
	}
	now = e.clock()
	if prevBusy {
		busyNs += now - prevStart
	}
	ctr = s.Counters()
	e.publish(k, &ctr, busyNs, now-windowStart, turns, now)
	if e.cfg.Every != nil {
		e.cfg.Every(k, s, now)
	}
}

// syncHop runs once a publication: core 0 republishes a next hop that
// changed, the other cores take core 0's if theirs differs.
func (e *Engine) syncHop(k int, s *stack.Stack, hop wire.MAC, set bool) (wire.MAC, bool) {
	m, ok := s.NextHop()
	if k == 0 {
		if ok && (!set || m != hop) {
			e.hop.Store(hopValid | macBits(m))
			return m, true
		}
		return hop, set
	}
	if v := e.hop.Load(); v&hopValid != 0 && (!ok || bitsMAC(v) != m) {
		s.SetNextHop(bitsMAC(v))
	}
	return hop, set
}

// publish stores core k's counters, busy share and turns.
func (e *Engine) publish(k int, ctr *stack.Counters, busyNs, window int64, turns uint64, now int64) {
	busy := 0.0
	if window > 0 {
		busy = min(max(float64(busyNs)/float64(window), 0), 1)
	}
	e.mu.Lock()
	e.mu.pub[k] = CoreStats{Counters: *ctr, Busy: busy, Turns: turns, At: now}
	e.mu.Unlock()
}

func macBits(m wire.MAC) uint64 {
	var v uint64
	for _, b := range m {
		v = v<<8 | uint64(b)
	}
	return v
}

func bitsMAC(v uint64) wire.MAC {
	var m wire.MAC
	for i := len(m) - 1; i >= 0; i-- {
		m[i], v = byte(v), v>>8
	}
	return m
}

// addCounters adds src to dst field by field: integer fields are summed,
// except those named ...Max, which keep the larger value. Reflection keeps
// it right when stack.Counters grows a field; it runs once per Counters
// call, never on a turn.
func addCounters(dst, src *stack.Counters) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	t := d.Type()
	for i := range d.NumField() {
		df, sf := d.Field(i), s.Field(i)
		isMax := strings.HasSuffix(t.Field(i).Name, "Max")
		switch df.Kind() {
		case reflect.Uint64, reflect.Uint32, reflect.Uint, reflect.Uint16, reflect.Uint8:
			if isMax {
				df.SetUint(max(df.Uint(), sf.Uint()))
			} else {
				df.SetUint(df.Uint() + sf.Uint())
			}
		case reflect.Int64, reflect.Int32, reflect.Int, reflect.Int16, reflect.Int8:
			if isMax {
				df.SetInt(max(df.Int(), sf.Int()))
			} else {
				df.SetInt(df.Int() + sf.Int())
			}
		}
	}
}

// Split divides the ports min..max into n disjoint, contiguous, ascending
// slices of sizes differing by at most one (the first ones larger), for
// n stacks of one tuple space: core k's stack gets PortMin, PortMax =
// slices[k][0], slices[k][1]. It refuses port 0, min > max and an n outside
// 1..max-min+1.
func Split(min, max uint16, n int) ([][2]uint16, error) {
	if min == 0 || min > max {
		return nil, fmt.Errorf("engine: Split ports %d..%d: %w", min, max, ErrConfig)
	}
	ports := int(max-min) + 1
	if n < 1 || n > ports {
		return nil, fmt.Errorf("engine: Split %d ports into %d slices: %w", ports, n, ErrConfig)
	}
	out := make([][2]uint16, n)
	lo := int(min)
	for k := range out {
		size := ports / n
		if k < ports%n {
			size++
		}
		out[k] = [2]uint16{uint16(lo), uint16(lo + size - 1)}
		lo += size
	}
	return out, nil
}
