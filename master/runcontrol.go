package master

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// Run control (Locust's start_automatic_run in locust/main.py): a headless
// master and an autostarted one wait for their workers in the same way and
// start the test (or the shape) in the same way; they differ only at the
// end of the run time. Both run on their own goroutine and drive the loop
// through call.

// headless runs the automatic start and quits after the run time.
func (m *Master) headless(ctx context.Context) {
	m.automaticRun(ctx, func() {
		m.mainLog.Info("--run-time limit reached, shutting down")
		m.call(m.beginQuit)
	})
}

// autostart runs the automatic start and, after the run time, stops the
// test and quits Options.Autoquit later (never when Autoquit is negative),
// as Locust's --autostart.
func (m *Master) autostart(ctx context.Context) {
	m.automaticRun(ctx, func() {
		m.mainLog.Info("--run-time limit reached, stopping test")
		stopCtx, cancel := context.WithTimeout(ctx, autostartStopWait)
		_ = m.Stop(stopCtx)
		cancel()
		if m.opts.Autoquit < 0 {
			m.mainLog.Info("--autoquit not specified, leaving web ui running indefinitely")
			return
		}
		t := time.NewTimer(m.opts.Autoquit)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-m.loopDone:
			return
		case <-t.C:
		}
		m.mainLog.Info("--autoquit time reached, shutting down")
		m.Quit()
	})
}

// autostartStopWait bounds the stop at the end of an autostarted run.
const autostartStopWait = 2 * time.Minute

// automaticRun waits for the workers, starts the test (or the shape) and,
// after Options.RunTime, calls atEnd (not when ctx is done or the loop has
// ended first).
func (m *Master) automaticRun(ctx context.Context, atEnd func()) {
	o := &m.opts
	if !m.waitReady(ctx) {
		return
	}
	if len(o.Stages) > 0 {
		m.call(m.startShape)
		return
	}
	m.call(func() {
		if err := m.start(int64(o.Users), o.SpawnRate); err != nil {
			m.log.Error("Cannot start the test: " + err.Error())
		}
	})
	if o.RunTime <= 0 {
		if !rateStagesEnd(o) { // those end the test themselves (rate.go)
			m.mainLog.Info("No run time limit set, use CTRL+C to interrupt")
		}
		return
	}
	m.mainLog.Info(fmt.Sprintf("Run time limit set to %s seconds", formatSeconds(o.RunTime)))
	timer := time.NewTimer(o.RunTime)
	defer timer.Stop()
	select {
	case <-timer.C:
		atEnd()
	case <-ctx.Done():
	case <-m.loopDone:
	}
}

// waitReady waits until Options.ExpectWorkers workers are ready and the
// user classes are known, logging every WaitLogInterval. It returns false
// when ctx is done or the loop ended first, and when
// Options.ExpectWorkersMaxWait expired: the master then quits, with
// Result.GaveUp.
func (m *Master) waitReady(ctx context.Context) bool {
	o := &m.opts
	begin := timeNow()
	// A distributed master checks every WaitLogInterval, as Locust's
	// checks every second (a restarted master lets reconnecting workers
	// report what they run first); standalone's own workers are polled
	// every waitPoll, so its test starts as soon as they are ready.
	poll := o.WaitLogInterval
	if o.Standalone {
		poll = min(waitPoll, poll)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	var logged time.Time
	for {
		var ready int
		var classes bool
		if !m.call(func() {
			ready = m.st.countState(protocol.StateReady)
			classes = len(m.st.run.classes) > 0
		}) {
			return false
		}
		if ready >= o.ExpectWorkers && classes {
			return true
		}
		if o.ExpectWorkersMaxWait > 0 && timeNow().Sub(begin) > o.ExpectWorkersMaxWait {
			m.rootLog.Error("Gave up waiting for workers to connect")
			m.call(func() {
				m.st.end.result.gaveUp = true
				m.beginQuit()
				m.st.end.done = true // no final reports: no test ran
			})
			return false
		}
		if now := timeNow(); now.Sub(logged) >= o.WaitLogInterval {
			logged = now
			switch {
			case o.Standalone:
			case ready >= o.ExpectWorkers:
				m.rootLog.Info("Waiting for workers to report their user classes")
			default:
				m.rootLog.Info(fmt.Sprintf("Waiting for workers to be ready, %d of %d connected", ready, o.ExpectWorkers))
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-m.loopDone:
			return false
		case <-t.C:
		}
	}
}

// waitPoll is the period of the readiness checks of waitReady.
const waitPoll = 10 * time.Millisecond

func formatSeconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprint(int64(d / time.Second))
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", d.Seconds()), "0"), ".")
}
