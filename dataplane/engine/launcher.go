package engine

import (
	"fmt"
	"math"

	"github.com/cicada-load/cicada/dataplane/stack"
)

// Launcher paces one client stack's new connections: Rate per second from
// its first call, at most MaxOpen open at once, Total in all, Burst per
// call. Loop uses one; with an Engine, call one Launcher per core from
// Config.Tick (each core's stack owns its own port slice, so a rate is
// split between the cores by the caller). It is not safe for concurrent
// use: it belongs to the core that calls it.
type Launcher struct {
	// Rate is the launch rate in connections per second. Zero launches
	// nothing unless MaxOpen is set.
	Rate float64
	// MaxOpen, if set, bounds the open connections (SocketsCurrent): a
	// closed loop like wrk's connection count. With a zero Rate the
	// launcher launches whenever fewer are open, as fast as they close.
	MaxOpen int
	// Total bounds the launches; zero with a Rate is unbounded.
	Total int
	// Burst bounds the launches of one call. If zero, stack.DefaultBurst.
	Burst int

	start    int64
	started  bool
	invalid  bool
	launched int
}

// Validate returns an error wrapping ErrConfig for a negative field or a
// Rate that is not a finite number.
func (l *Launcher) Validate() error {
	if !(l.Rate >= 0 && l.Rate <= math.MaxFloat64) || l.MaxOpen < 0 || l.Total < 0 || l.Burst < 0 {
		return fmt.Errorf("engine: Launcher needs a finite Rate and a MaxOpen, Total and Burst that are not negative (%v, %d, %d, %d): %w",
			l.Rate, l.MaxOpen, l.Total, l.Burst, ErrConfig)
	}
	return nil
}

// Launched returns how many connections the launcher has launched.
func (l *Launcher) Launched() int { return l.launched }

// Launch launches on s what the pace allows at now and returns how many it
// launched (none before the stack's next hop is resolved: stack.Launch
// refuses them, and they stay due). A Launcher that Validate refuses
// launches nothing: check it where the configuration is read.
func (l *Launcher) Launch(s *stack.Stack, now int64) int {
	if !l.started {
		l.start, l.started, l.invalid = now, true, l.Validate() != nil
	}
	if l.invalid {
		return 0
	}
	want := l.due(now - l.start)
	if l.MaxOpen > 0 && want > 0 {
		want = min(want, l.MaxOpen-int(s.Counters().SocketsCurrent))
	}
	if want <= 0 {
		return 0
	}
	burst := l.Burst
	if burst == 0 {
		burst = stack.DefaultBurst
	}
	n := s.Launch(now, min(want, burst))
	l.launched += n
	return n
}

// due is how many launches the pace (or, with only MaxOpen, Total) allows
// after elapsed nanoseconds.
func (l *Launcher) due(elapsed int64) int {
	var n int
	switch {
	case l.Rate > 0:
		n = int(min(float64(elapsed)*l.Rate/1e9, 1<<62))
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
