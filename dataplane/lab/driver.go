package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/stack"
)

// Driver runs a client stack for the lab's tests and benchmarks on one
// clock for its whole life, so that the stack's now never goes back
// (engine.Loop restarts its clock and its launch count on every Run), and
// ramps with a window: while fewer than the run's total are launched, at
// most Window launched connections await their first answer (2xx, other
// status, HTTP error or failure). It is not safe for concurrent use; one
// goroutine calls Run, Now and the stack's methods between Runs.
type Driver struct {
	Stack  *stack.Stack
	Waiter engine.Waiter
	// Window bounds the launched connections not yet answered. If zero,
	// 1,000.
	Window int

	start    time.Time
	launched int
}

// Now returns the driver's clock (nanoseconds since its first Run or Now),
// for calls such as Stack.SecondRound between Runs.
func (d *Driver) Now() int64 {
	if d.start.IsZero() {
		d.start = time.Now()
	}
	return int64(time.Since(d.start))
}

// Launched returns how many connections Run has launched in all.
func (d *Driver) Launched() int { return d.launched }

// Answered is the count Driver's window holds against the launches.
func Answered(c *stack.Counters) uint64 {
	return c.HTTP2xx + c.HTTPOther + c.HTTPErrors + c.SocketsFailed
}

// Run polls the stack until until holds (nil) or ctx ends (an error
// wrapping ctx's), launching while fewer than total are launched in all.
// A turn that received and launched nothing waits on Waiter for up to a
// millisecond.
func (d *Driver) Run(ctx context.Context, total int, until func(c *stack.Counters) bool) error {
	window := d.Window
	if window == 0 {
		window = 1000
	}
	var c stack.Counters
	for turn := 0; ; turn++ {
		if turn%64 == 0 && ctx.Err() != nil {
			return fmt.Errorf("lab: driver after %d launches: %w", d.launched, ctx.Err())
		}
		now := d.Now()
		got := d.Stack.Poll(now)
		c = d.Stack.Counters()
		sent := 0
		if d.launched < total {
			if n := min(total-d.launched, window-(d.launched-int(Answered(&c))), stack.DefaultBurst); n > 0 {
				sent = d.Stack.Launch(now, n)
				d.launched += sent
			}
		}
		if until(&c) {
			return nil
		}
		if got == 0 && sent == 0 && d.Waiter != nil {
			d.Waiter.Wait(time.Millisecond)
		}
	}
}
