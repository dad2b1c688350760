package worker

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The time-driven paths of the user pool, run on synctest's fake clock:
// waits, task run times and stop grace periods take no real time, so the
// tests check exact intervals instead of tolerances a loaded machine
// could break.

// TestWaitTimesPaceTasksExactly: a user's task starts follow its WaitTime
// to the nanosecond, with the task's own run time counted as each wait
// function says (Locust's constant, constant_pacing, constant_throughput).
// Like Locust's, the pacing functions wait their full interval after the
// first task, so only the later intervals absorb the run time.
func TestWaitTimesPaceTasksExactly(t *testing.T) {
	for _, c := range []struct {
		name  string
		wait  WaitTime
		run   time.Duration // how long each task takes
		first time.Duration // from the first task start to the second
		want  time.Duration // from one task start to the next after that
	}{
		{"Constant adds the run time", Constant(time.Second), 300 * time.Millisecond, 1300 * time.Millisecond, 1300 * time.Millisecond},
		{"ConstantPacing absorbs the run time", ConstantPacing(time.Second), 300 * time.Millisecond, 1300 * time.Millisecond, time.Second},
		{"ConstantPacing shorter than the run", ConstantPacing(100 * time.Millisecond), 250 * time.Millisecond, 350 * time.Millisecond, 250 * time.Millisecond},
		{"ConstantThroughput", ConstantThroughput(4), 50 * time.Millisecond, 300 * time.Millisecond, 250 * time.Millisecond},
		{"Between with equal bounds", Between(2*time.Second, 2*time.Second), 0, 2 * time.Second, 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var starts []time.Time
				class := &UserClass{Name: "P", Wait: c.wait, Tasks: []Task{{Name: "t", Fn: func(ctx context.Context, u *User) error {
					mu.Lock()
					starts = append(starts, time.Now())
					mu.Unlock()
					time.Sleep(c.run)
					return nil
				}}}}
				p, _ := newTestPool(t, class)
				_, b := p.apply(map[string]int64{"P": 1})
				b.start()
				const n = 8
				time.Sleep(c.first + time.Duration(n)*c.want + c.want/2)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if len(starts) != n+2 {
					t.Fatalf("%d task starts; want %d", len(starts), n+2)
				}
				for i := 1; i < len(starts); i++ {
					want := c.want
					if i == 1 {
						want = c.first
					}
					if got := starts[i].Sub(starts[i-1]); got != want {
						t.Fatalf("start %d came %v after start %d; want %v", i, got, i-1, want)
					}
				}
			})
		})
	}
}

// TestStopGraceThenForce: a stop waits exactly the grace period for a
// task that ignores it, then cancels the task's context; a task that
// finishes within the grace period is never interrupted.
func TestStopGraceThenForce(t *testing.T) {
	for _, c := range []struct {
		name            string
		taskLeft        time.Duration // how long the task still runs when the stop comes
		grace           time.Duration
		wantElapsed     time.Duration
		wantInterrupted bool
	}{
		{"task ends within the grace", 10 * time.Second, 30 * time.Second, 10 * time.Second, false},
		{"grace runs out", time.Hour, 30 * time.Second, 30 * time.Second, true},
		{"no grace", time.Hour, 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				entered := make(chan struct{}, 1)
				interrupted := make(chan bool, 1)
				class := &UserClass{Name: "S", Wait: Constant(time.Hour), Tasks: []Task{{Name: "slow", Fn: func(ctx context.Context, u *User) error {
					entered <- struct{}{}
					select {
					case <-time.After(c.taskLeft):
						interrupted <- false
						return nil
					case <-ctx.Done():
						interrupted <- true
						return ctx.Err()
					}
				}}}}
				p, _ := newTestPool(t, class)
				_, b := p.apply(map[string]int64{"S": 1})
				b.start()
				<-entered
				_, b = p.apply(map[string]int64{"S": 0})
				start := time.Now()
				b.start()
				if !b.wait(c.grace, time.Second, nil) {
					t.Fatal("stop did not finish")
				}
				if got := time.Since(start); got != c.wantElapsed {
					t.Errorf("stop took %v; want %v", got, c.wantElapsed)
				}
				if got := <-interrupted; got != c.wantInterrupted {
					t.Errorf("task interrupted = %v; want %v", got, c.wantInterrupted)
				}
			})
		})
	}
}
