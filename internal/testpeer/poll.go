package testpeer

import (
	"errors"
	"fmt"
	"time"
)

// ErrTimeout is wrapped by Poll's error when the condition never held.
var ErrTimeout = errors.New("testpeer: condition not met before the deadline")

// DefaultInterval is the time between two evaluations of a condition in
// Eventually.
const DefaultInterval = 5 * time.Millisecond

// Poll evaluates cond every interval until it returns true or within has
// passed (cond is evaluated at least once, and once more at the deadline).
// The error wraps ErrTimeout.
func Poll(within, interval time.Duration, cond func() bool) error {
	if interval <= 0 {
		interval = DefaultInterval
	}
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (%v)", ErrTimeout, within)
		}
		time.Sleep(interval) // the polling interval, not synchronisation
	}
	return nil
}

// Eventually fails t unless cond holds within the given time; what names
// the condition in the failure ("timed out after 10s waiting for what").
// cond is evaluated every DefaultInterval from t's goroutine.
func Eventually(t T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := Poll(within, DefaultInterval, cond); err != nil {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}
