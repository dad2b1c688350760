package worker

import (
	"math/rand/v2"
	"time"
)

// WaitTime computes how long a user waits after a task before it runs the
// next one. It is called on the user's own goroutine, after each task, so it
// may keep per-user state in the User (see ConstantPacing). A nil WaitTime
// means no wait at all.
//
// The constructors below follow Locust's locust/user/wait_time.py (2.12.1):
// constant, between, constant_pacing and constant_throughput.
type WaitTime func(u *User) time.Duration

// Constant waits d after every task (Locust's constant(seconds)).
func Constant(d time.Duration) WaitTime {
	if d < 0 {
		d = 0
	}
	return func(*User) time.Duration { return d }
}

// Between waits a uniformly random duration in [min, max] after every task
// (Locust's between(min_wait, max_wait)). The arguments may come in either
// order.
func Between(min, max time.Duration) WaitTime {
	if max < min {
		min, max = max, min
	}
	if min < 0 {
		min = 0
	}
	span := max - min
	if span <= 0 {
		return Constant(min)
	}
	return func(*User) time.Duration {
		return min + time.Duration(rand.Int64N(int64(span)+1))
	}
}

// ConstantPacing makes the time from the start of one task to the start of
// the next equal to d: the wait is d minus the run time of the task that just
// ended, and 0 when the task took longer than d (Locust's
// constant_pacing(seconds)). Like Locust, the first call returns d.
func ConstantPacing(d time.Duration) WaitTime {
	if d < 0 {
		d = 0
	}
	return func(u *User) time.Duration {
		now := nanotime()
		if u.cpLastRun == 0 {
			u.cpLastWait = d
			u.cpLastRun = now
			return d
		}
		run := time.Duration(now-u.cpLastRun) - u.cpLastWait
		w := d - run
		if w < 0 {
			w = 0
		}
		u.cpLastWait = w
		u.cpLastRun = now
		return w
	}
}

// ConstantThroughput paces each user to run tasksPerSecond tasks per second
// at most, the inverse of ConstantPacing (Locust's
// constant_throughput(task_runs_per_second)). A rate ≤ 0 means no wait.
func ConstantThroughput(tasksPerSecond float64) WaitTime {
	if tasksPerSecond <= 0 {
		return Constant(0)
	}
	return ConstantPacing(time.Duration(float64(time.Second) / tasksPerSecond))
}

// clockBase anchors nanotime; time.Since uses the monotonic clock.
var clockBase = time.Now()

// nanotime returns monotonic nanoseconds since clockBase, never 0 after the
// first nanosecond so that 0 can mean "unset".
func nanotime() int64 { return int64(time.Since(clockBase)) + 1 }

// WaitKind names one of Locust's wait time functions, for WaitSpec.
type WaitKind uint8

// The wait kinds of a WaitSpec.
const (
	WaitConstant           WaitKind = iota + 1 // Constant(Min)
	WaitBetween                                // Between(Min, Max)
	WaitConstantPacing                         // ConstantPacing(Min)
	WaitConstantThroughput                     // ConstantThroughput(PerSecond)
)

// WaitSpec is a WaitTime as data, for runtimes that cannot call Go
// functions (the data plane, Options.Runtime): UserClass.WaitSpec.
// Package scenario fills it beside UserClass.Wait.
type WaitSpec struct {
	Kind      WaitKind
	Min, Max  time.Duration
	PerSecond float64
}

// WaitTime returns the WaitTime the spec describes (nil for a zero Kind).
func (s WaitSpec) WaitTime() WaitTime {
	switch s.Kind {
	case WaitConstant:
		return Constant(s.Min)
	case WaitBetween:
		return Between(s.Min, s.Max)
	case WaitConstantPacing:
		return ConstantPacing(s.Min)
	case WaitConstantThroughput:
		return ConstantThroughput(s.PerSecond)
	}
	return nil
}
