// Package engine drives userspace stacks: for now one polling loop per
// Stack (receive burst, input, timers, paced launches, transmit flush),
// run to completion on the calling goroutine. The engine of issue 11 (one
// loop per core, locked threads, per-second counter sums, busy share) grows
// from here.
package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cicada-load/cicada/dataplane/stack"
)

// ErrConfig is wrapped by every refused Loop.
var ErrConfig = errors.New("engine: invalid configuration")

// ErrStopped is returned by Run when ctx ended before Until held.
var ErrStopped = errors.New("engine: stopped before the loop was done")

// Waiter is implemented by links that can block until frames arrive
// (afpacket.Link); an idle Loop waits on it instead of spinning.
type Waiter interface {
	Wait(d time.Duration)
}

// DefaultIdleWait is Loop.IdleWait's default.
const DefaultIdleWait = time.Millisecond

// Loop is one polling loop over one Stack.
type Loop struct {
	// Stack is the stack the loop drives; required. The loop is its only
	// user while Run runs.
	Stack *stack.Stack
	// Rate is the launch rate in connections per second. Zero launches
	// nothing unless MaxOpen is set (a server, or a client driven by Until
	// alone).
	Rate float64
	// MaxOpen, if set, bounds the open connections (SocketsCurrent): a
	// closed loop like wrk's connection count. With a zero Rate the loop
	// launches whenever fewer are open, as fast as they close.
	MaxOpen int
	// Total bounds the launches; zero with a Rate is unbounded.
	Total int
	// Burst bounds the launches of one turn. If zero, stack.DefaultBurst.
	Burst int
	// Waiter, if set, is waited on for up to IdleWait when a turn received
	// nothing and had nothing to launch.
	Waiter Waiter
	// IdleWait is the longest idle wait. If zero, DefaultIdleWait.
	IdleWait time.Duration
	// Until, if set, is called after every turn with the stack's counters
	// and the launches so far; Run returns nil once it holds.
	Until func(c *stack.Counters, launched int) bool

	launched int
	ctr      stack.Counters
}

// Launched returns how many connections the loop has launched.
func (l *Loop) Launched() int { return l.launched }

// Run polls the stack until Until holds (nil) or ctx ends (ErrStopped
// wrapping ctx's error). The clock is the monotonic time since Run began.
func (l *Loop) Run(ctx context.Context) error {
	if l.Stack == nil || l.Rate < 0 || l.Total < 0 || l.Burst < 0 || l.IdleWait < 0 || l.MaxOpen < 0 {
		return fmt.Errorf("engine: Loop needs a Stack and no negative Rate, Total, Burst, IdleWait or MaxOpen: %w", ErrConfig)
	}
	burst, idle := l.Burst, l.IdleWait
	if burst == 0 {
		burst = stack.DefaultBurst
	}
	if idle == 0 {
		idle = DefaultIdleWait
	}
	start := time.Now()
	for turn := 0; ; turn++ {
		if turn%64 == 0 && ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrStopped, ctx.Err())
		}
		now := int64(time.Since(start))
		got := l.Stack.Poll(now)
		want := l.due(now)
		if l.MaxOpen > 0 && want > 0 {
			l.ctr = l.Stack.Counters()
			want = min(want, l.MaxOpen-int(l.ctr.SocketsCurrent))
		}
		if want > 0 {
			l.launched += l.Stack.Launch(now, min(want, burst))
		}
		if l.Until != nil {
			l.ctr = l.Stack.Counters()
			if l.Until(&l.ctr, l.launched) {
				return nil
			}
		}
		if got == 0 && want <= 0 && l.Waiter != nil {
			l.Waiter.Wait(idle)
		}
	}
}

// due is how many launches the pace (or, with only MaxOpen, Total) allows
// at now.
func (l *Loop) due(now int64) int {
	var n int
	switch {
	case l.Rate > 0:
		n = int(float64(now) * l.Rate / 1e9)
	case l.MaxOpen > 0 && l.Total > 0:
		n = l.Total
	case l.MaxOpen > 0:
		n = l.launched + l.MaxOpen
	default:
		return 0
	}
	if l.Total > 0 {
		n = min(n, l.Total)
	}
	return n - l.launched
}
