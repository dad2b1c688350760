//go:build unix

package shutdown

import (
	"context"
	"syscall"
	"testing"
	"time"
)

const within = 10 * time.Second

func done(ctx context.Context) bool { return ctx.Err() != nil }

func waitDone(t *testing.T, what string, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(within):
		t.Fatalf("%s not done within %v", what, within)
	}
}

// interrupt sends this test process SIGINT, which Notify has taken over.
func interrupt(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
}

func TestSecondSignalForces(t *testing.T) {
	s := Notify(context.Background(), 0)
	defer s.Stop()
	if done(s.Quit) || done(s.Force) {
		t.Fatal("done before any signal")
	}
	interrupt(t)
	waitDone(t, "Quit after the first signal", s.Quit)
	if done(s.Force) {
		t.Fatal("Force done after one signal without a grace period")
	}
	interrupt(t)
	waitDone(t, "Force after the second signal", s.Force)
}

func TestGraceForces(t *testing.T) {
	s := Notify(context.Background(), 50*time.Millisecond)
	defer s.Stop()
	interrupt(t)
	waitDone(t, "Quit after the signal", s.Quit)
	waitDone(t, "Force after the grace period", s.Force)
}

func TestParentDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := Notify(ctx, 0)
	defer s.Stop()
	cancel()
	waitDone(t, "Quit after the parent", s.Quit)
	waitDone(t, "Force after the parent", s.Force)
}

func TestStopCancelsAndIsIdempotent(t *testing.T) {
	s := Notify(context.Background(), time.Hour)
	s.Stop()
	s.Stop()
	if !done(s.Quit) || !done(s.Force) {
		t.Error("contexts not done after Stop")
	}
}
