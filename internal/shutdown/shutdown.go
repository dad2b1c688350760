// Package shutdown is the signal policy of cicada's programs (the cicada
// command and worker.Main): the first SIGINT or SIGTERM asks for a graceful
// quit, and a second one, or a grace period after the first, forces the
// exit.
//
// It imports only the standard library.
package shutdown

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Signals is a program's view of its shutdown signals, from Notify until
// Stop. Its contexts are safe for concurrent use.
type Signals struct {
	// Quit is done at the first SIGINT or SIGTERM (or when the parent
	// context is done): quit gracefully.
	Quit context.Context
	// Force is done at the second signal, grace after the first (when
	// grace > 0), or when the parent context is done: exit at once. It is
	// never done before Quit.
	Force context.Context

	stopOnce sync.Once
	stop     chan struct{}
	wg       sync.WaitGroup
	cancel   func()
}

// Notify starts listening for SIGINT and SIGTERM. A grace of zero or less
// means only a second signal forces. Call Stop to release the signals.
func Notify(parent context.Context, grace time.Duration) *Signals {
	quit, quitCancel := context.WithCancel(parent)
	force, forceCancel := context.WithCancel(parent)
	s := &Signals{Quit: quit, Force: force, stop: make(chan struct{})}
	s.cancel = func() { forceCancel(); quitCancel() }
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer signal.Stop(ch)
		select {
		case <-ch:
			quitCancel()
		case <-quit.Done(): // the parent is done: so is Force
			return
		case <-s.stop:
			return
		}
		var graceC <-chan time.Time
		if grace > 0 {
			t := time.NewTimer(grace)
			defer t.Stop()
			graceC = t.C
		}
		select {
		case <-ch:
		case <-graceC:
		case <-force.Done():
			return
		case <-s.stop:
			return
		}
		forceCancel()
	}()
	return s
}

// Stop releases the signals (they kill the process again) and cancels both
// contexts. It waits for the listening goroutine and may be called more
// than once.
func (s *Signals) Stop() {
	s.stopOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.cancel()
	})
}
