package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/cicada-load/cicada/dataplane/stack"
)

// DefaultIdleWait is the longest idle wait of a Loop or an Engine's loop
// if theirs is zero.
const DefaultIdleWait = time.Millisecond

// Loop is one polling loop over one Stack, on the calling goroutine: the
// single-core form of Engine, with its launches paced by a Launcher. Tests
// and the lab's benchmarks use it.
type Loop struct {
	// Stack is the stack the loop drives; required. The loop is its only
	// user while Run runs.
	Stack *stack.Stack
	// Rate, MaxOpen, Total and Burst pace the launches, as Launcher's
	// fields of the same names.
	Rate    float64
	MaxOpen int
	Total   int
	Burst   int
	// Waiter, if set, is waited on for up to IdleWait when a turn received
	// nothing and launched nothing.
	Waiter Waiter
	// IdleWait is the longest idle wait. If zero, DefaultIdleWait.
	IdleWait time.Duration
	// Until, if set, is called after every turn with the stack's counters
	// and the launches so far; Run returns nil once it holds.
	Until func(c *stack.Counters, launched int) bool

	pace Launcher
	ctr  stack.Counters
}

// Launched returns how many connections the loop has launched.
func (l *Loop) Launched() int { return l.pace.Launched() }

// Run polls the stack until Until holds (nil) or ctx ends (ErrStopped
// wrapping ctx's error). The clock is the monotonic time since Run began.
func (l *Loop) Run(ctx context.Context) error {
	l.pace = Launcher{Rate: l.Rate, MaxOpen: l.MaxOpen, Total: l.Total, Burst: l.Burst}
	if l.Stack == nil || l.IdleWait < 0 || l.pace.Validate() != nil {
		return fmt.Errorf("engine: Loop needs a Stack and no negative Rate, Total, Burst, IdleWait or MaxOpen: %w", ErrConfig)
	}
	idle := l.IdleWait
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
		launched := l.pace.Launch(l.Stack, now)
		if l.Until != nil {
			l.ctr = l.Stack.Counters()
			if l.Until(&l.ctr, l.pace.Launched()) {
				return nil
			}
		}
		if got == 0 && launched == 0 && l.Waiter != nil {
			l.Waiter.Wait(idle)
		}
	}
}
