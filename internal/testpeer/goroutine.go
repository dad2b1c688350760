package testpeer

import (
	"context"
	"time"
)

// Go runs run on a goroutine of its own until the test ends: a cleanup of
// t cancels run's context and waits up to within (DefaultGrace if zero) for
// run to return, and fails t ("what did not return after cancel") if it
// does not. The returned channel is closed once run has returned. It is the
// way tests run an in-process server, master or worker in the background.
func Go(t T, what string, within time.Duration, run func(ctx context.Context)) <-chan struct{} {
	t.Helper()
	if within <= 0 {
		within = DefaultGrace
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(within):
			t.Fatalf("%s did not return %v after cancel", what, within)
		}
	})
	return done
}
