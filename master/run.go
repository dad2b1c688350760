package master

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/cicada-load/cicada/master/dispatch"
	"github.com/cicada-load/cicada/protocol"
)

// timeNow is the monotonic clock for waits and pacing (the Options clock
// only stamps statistics and spawn messages).
var timeNow = time.Now

func (m *Master) setState(s string) { m.st.run.state = s }

// ---- start and dispatch (Locust's MasterRunner.start) ----

// start begins a dispatch towards users at rate. Precondition: loop.
func (m *Master) start(users int64, rate float64) error {
	st := &m.st
	x := st.ix()
	x.pending = false // this dispatch covers any requested re-dispatch
	x.last = timeNow()
	st.ramp.spawnComplete = false
	st.ramp.target = users
	n := st.workerCount()
	if n == 0 {
		m.log.Warn("You can't start a distributed test before at least one worker processes has connected")
		return nil
	}
	if len(st.run.classes) == 0 {
		m.log.Warn("No user classes are known yet: pass them in the options, or wait for a worker to report its classes")
		return ErrNoUserClasses
	}
	if err := m.startRate(); err != nil {
		m.log.Error(err.Error())
		return err
	}
	st.ramp.rate = rate
	if st.ramp.disp == nil {
		var ids []string
		for _, id := range sortedIDs(st.reg.nodes) {
			if active(st.reg.nodes[id].state) {
				ids = append(ids, id)
			}
		}
		d, err := dispatch.New(ids, st.run.classes)
		if err != nil {
			return err
		}
		st.ramp.disp = d
	}
	if m.opts.Standalone {
		m.log.Info(fmt.Sprintf("Ramping to %d users at a rate of %.2f per second", users, rate))
	} else {
		m.log.Info(fmt.Sprintf("Sending spawn jobs of %d users at %.2f spawn rate to %d ready workers", users, rate, n))
	}
	if rate/float64(n) > 100 {
		m.log.Warn("Your selected spawn rate is very high (>100/worker), and this is known to sometimes cause issues. Do you really need to ramp up that fast?")
	}
	if st.run.state != protocol.StateRunning && st.run.state != protocol.StateSpawning {
		m.stats.Clear()
		st.run.startTime = timeNow()
	}
	m.setState(protocol.StateSpawning)
	if err := st.ramp.disp.NewDispatch(users, rate); err != nil {
		return err
	}
	st.ramp.stepping = true
	st.ramp.reportWait = false
	st.ramp.rampC = nil
	st.ramp.rampTimer.Stop()
	m.advanceRamp()
	return nil
}

// redispatch is Locust's self.start(self.target_user_count,
// self.spawn_rate) after a worker joined or left.
func (m *Master) redispatch() {
	st := &m.st
	if st.ramp.rate <= 0 {
		return
	}
	st.ix().count++
	if err := m.start(st.ramp.target, st.ramp.rate); err != nil {
		m.log.Debug("re-dispatch: " + err.Error())
	}
}

// redisp coalesces the re-dispatches asked for by workers joining, healing,
// quitting or going missing. Locust re-dispatches once per such worker,
// sending the whole split to every worker each time: when a thousand of
// ten thousand workers heal in one second, that is ten million spawn
// messages. Every re-dispatch recomputes the split from zero over the
// dispatcher's current workers (a rebalance), so doing one for a burst
// gives each worker the users Locust's last one would: the first request
// after a quiet window is served at once (at the end of the message or
// tick that made it), later ones at most once per coalescing window
// (HeartbeatInterval/4, the dispatch timer waking the loop).
type redisp struct {
	pending bool      // a re-dispatch was asked for and not done yet
	last    time.Time // when the last dispatch (start) began
	count   int       // re-dispatches done, for tests
}

// requestRedispatch asks for a re-dispatch, done by settleRedispatch.
// Precondition: loop.
func (m *Master) requestRedispatch() { m.st.ix().pending = true }

// coalesceWindow is the least time between two re-dispatches (the first
// request after a quiet period is served at once).
func (m *Master) coalesceWindow() time.Duration { return m.opts.HeartbeatInterval / 4 }

// settleRedispatch does a requested re-dispatch if the window since the
// last dispatch has passed, else arms the dispatch timer for its end. It
// runs at the end of every message and tick, and when that timer fires.
// Precondition: loop.
func (m *Master) settleRedispatch() {
	st := &m.st
	x := st.ix()
	if !x.pending {
		return
	}
	// A request stands while the test runs; stopTest and start clear it.
	if st.ramp.disp == nil || st.end.quitting || (st.run.state != protocol.StateRunning && st.run.state != protocol.StateSpawning) {
		x.pending = false
		return
	}
	if left := x.last.Add(m.coalesceWindow()).Sub(timeNow()); left > 0 {
		if st.ramp.rampC == nil { // no dispatch steps: the timer is free
			st.ramp.rampTimer.Reset(left)
			st.ramp.rampC = st.ramp.rampTimer.C
		}
		return
	}
	x.pending = false
	m.redispatch()
}

// advanceRamp sends the dispatch steps that are due and arms the timer for
// the next one. Precondition: loop.
func (m *Master) advanceRamp() {
	st := &m.st
	if st.ix().pending && !st.ramp.stepping {
		m.settleRedispatch() // the timer armed for a coalesced re-dispatch
		return
	}
	for st.ramp.stepping && st.ramp.disp != nil {
		if wait := st.ramp.disp.Wait(); wait > 0 {
			if left := st.ramp.lastPaced.Add(wait).Sub(timeNow()); left > 0 {
				st.ramp.rampTimer.Reset(left)
				st.ramp.rampC = st.ramp.rampTimer.C
				return
			}
		}
		begin := timeNow()
		step, ok := st.ramp.disp.Next()
		if !ok {
			st.ramp.stepping = false
			m.dispatchDone()
			return
		}
		if !step.Rebalance {
			st.ramp.lastPaced = begin
		}
		m.sendStep(step.Users)
	}
}

// sendStep sends one spawn message per worker of the step, each with a
// timestamp larger than any previous one for that worker.
func (m *Master) sendStep(users dispatch.Mapping) {
	st := &m.st
	var host *string
	if st.run.host != "" {
		h := st.run.host
		host = &h
	}
	stopTimeout := m.opts.StopTimeout.Seconds()
	ids := make([]string, 0, len(users))
	var total int64
	for id, cs := range users {
		ids = append(ids, id)
		for _, n := range cs {
			total += n
		}
	}
	sort.Strings(ids)
	now := float64(m.opts.Now().UnixNano()) / 1e9
	for _, id := range ids {
		if nd := st.reg.nodes[id]; nd != nil {
			nd.stopSent = false // a later orphaning is stopped again
		}
		ts := now
		if last := st.reg.lastTS[id]; ts <= last {
			ts = math.Nextafter(last, math.Inf(1))
		}
		st.reg.lastTS[id] = ts
		m.send(id, protocol.TypeSpawn, &protocol.Spawn{
			Timestamp:        ts,
			UserClassesCount: users[id],
			Host:             host,
			StopTimeout:      &stopTimeout,
			ParsedOptions:    m.opts.ParsedOptions,
		})
	}
	m.log.Debug(fmt.Sprintf("Sending spawn messages for %d total users to %d worker(s)", total, len(ids)))
}

// dispatchDone starts the wait for the workers' reports after the last
// step (Locust waits up to 1 s for user_count == target).
func (m *Master) dispatchDone() {
	st := &m.st
	m.armRate()
	st.ramp.reportWait = true
	st.ramp.reportDue = timeNow().Add(m.opts.ReportWait)
	m.checkReportWait()
}

func (m *Master) checkReportWait() {
	st := &m.st
	if !st.ramp.reportWait {
		return
	}
	reached := st.userCount() == st.ramp.target
	if !reached && timeNow().Before(st.ramp.reportDue) {
		return
	}
	st.ramp.reportWait = false
	prefix := "All users spawned"
	if !reached {
		prefix = "Spawning is complete and report waittime is expired, but not all reports received from workers"
	}
	if st.run.state == protocol.StateSpawning {
		m.setState(protocol.StateRunning)
	}
	if m.opts.ResetStats {
		m.log.Info("Resetting stats")
		m.stats.Reset()
		clear(m.st.rate.dropped)
	}
	st.ramp.spawnComplete = true
	m.log.Info(fmt.Sprintf("%s: %s", prefix, formatClasses(st.reportedClasses())))
	// Locust ≥ 2.29 tells the workers the ramp is over (they fire their
	// spawning_complete event then, e.g. for --reset-stats).
	for _, id := range sortedIDs(st.reg.nodes) {
		if st.reg.nodes[id].headMsgs {
			m.send(id, protocol.TypeSpawningComplete, &protocol.MasterSpawningComplete{UserCount: st.ramp.target})
		}
	}
	m.startSecondRound()
}

// ---- stop and quit ----

// stopTest is Locust's MasterRunner.stop. With sendStop it sends stop to
// every worker and returns a channel closed when they report no users (or
// on timeout); otherwise nil. Precondition: loop.
func (m *Master) stopTest(sendStop bool) chan struct{} {
	st := &m.st
	switch st.run.state {
	case protocol.StateReady, protocol.StateStopped, protocol.StateStopping:
		return nil
	}
	m.log.Debug("Stopping...")
	st.run.finalClasses = st.reportedClasses() // Locust's final_user_classes_count
	m.setState(protocol.StateStopping)
	if st.run.shapeCancel != nil {
		st.run.shapeCancel()
		st.run.shapeCancel = nil
	}
	m.stopRate()
	st.ramp.disp = nil
	st.ix().pending = false
	st.ramp.stepping = false
	st.ramp.reportWait = false
	st.ramp.rampC = nil
	st.ramp.rampTimer.Stop()
	if !sendStop {
		return nil
	}
	for _, id := range sortedIDs(st.reg.nodes) {
		m.send(id, protocol.TypeStop, nil)
	}
	done := make(chan struct{})
	st.end.stopWaiters = append(st.end.stopWaiters, done)
	st.end.stopDue = timeNow().Add(m.opts.StopTimeout + m.opts.StopWait)
	m.checkStopWaiters()
	return done
}

func (m *Master) checkStopWaiters() {
	st := &m.st
	if len(st.end.stopWaiters) == 0 {
		return
	}
	if st.userCount() != 0 {
		if timeNow().Before(st.end.stopDue) {
			return
		}
		m.log.Error("Timeout waiting for all workers to stop")
	}
	for _, c := range st.end.stopWaiters {
		close(c)
	}
	st.end.stopWaiters = nil
	if st.end.quitAfterStop {
		st.end.quitAfterStop = false
		m.beginQuit()
	}
}

// finalReport tracks one worker's final stats at exit. Its fields change
// only through finalStats, finalQuit and finalGone, which keep finalIndex.
type finalReport struct {
	stats   bool // a stats report arrived after quit was sent
	statsAt time.Time
	quit    bool // its quit arrived (it follows the final report)
	gone    bool // deleted as dead meanwhile
}

// finalIndex counts the final reports still awaited, so that checkFinal,
// which runs after every message while quitting, does not scan them all.
type finalIndex struct {
	open     int       // neither quit, gone nor a stats report
	inGrace  int       // a stats report, neither quit nor gone
	graceEnd time.Time // when the grace of the in-grace reports ends: their latest statsAt + FinalReportGrace,
	exact    bool      // … exactly (else a bound from above: some in-grace report has since quit or gone)
}

// waiting reports whether f may still hold up the exit: neither its quit
// arrived nor was it deleted (a stats report holds it up only for the
// grace).
func (f *finalReport) waiting() bool { return !f.quit && !f.gone }

func (m *Master) finalStats(f *finalReport) {
	fx := &m.st.ix().final
	f.stats = true
	f.statsAt = timeNow()
	if !f.waiting() {
		return
	}
	fx.open--
	end := f.statsAt.Add(m.opts.FinalReportGrace)
	if fx.inGrace == 0 {
		fx.graceEnd, fx.exact = end, true
	} else if end.After(fx.graceEnd) {
		fx.graceEnd = end // still exact if it was
	}
	fx.inGrace++
}

func (m *Master) finalQuit(f *finalReport) {
	m.finalSettle(f)
	f.quit = true
}

func (m *Master) finalGone(f *finalReport) {
	m.finalSettle(f)
	f.gone = true
}

// finalSettle uncounts f, which is about to be quit or gone.
func (m *Master) finalSettle(f *finalReport) {
	if !f.waiting() {
		return
	}
	fx := &m.st.ix().final
	if f.stats {
		fx.inGrace--
		fx.exact = false
	} else {
		fx.open--
	}
}

// checkFinalIndex recounts finalIndex (tests). Precondition: loop.
func (s *loopState) checkFinalIndex() error {
	fx := &s.ix().final
	var open, inGrace int
	for _, f := range s.end.final {
		switch {
		case !f.waiting():
		case f.stats:
			inGrace++
		default:
			open++
		}
	}
	if open != fx.open || inGrace != fx.inGrace {
		return fmt.Errorf("final reports open %d, in grace %d; recount %d, %d", fx.open, fx.inGrace, open, inGrace)
	}
	return nil
}

// beginQuit is Locust's quit: stop without sending stop, send quit to every
// worker, then wait for their final reports. Precondition: loop.
func (m *Master) beginQuit() {
	st := &m.st
	if st.end.quitting {
		return
	}
	if m.opts.StopTimeout > 0 && !st.end.stopThenQuit {
		// In-flight tasks get the stop timeout whatever ends the run (run
		// time, signal, Quit), as in Locust standalone, whose quit stops
		// the users first: stop, then quit when the workers report no
		// users or StopTimeout+StopQuitGrace later. A second quit request
		// quits at once.
		st.end.stopThenQuit = true
		if done := m.stopTest(true); done != nil {
			st.end.quitAfterStopped = true
			st.end.stopDue = timeNow().Add(m.opts.StopTimeout + m.opts.StopQuitGrace)
			st.end.quitAfterStop = true
			m.checkStopWaiters()
			return
		}
	}
	st.end.quitting = true
	m.stopTest(false)
	st.end.final = make(map[string]*finalReport)
	st.ix().final = finalIndex{}
	for _, id := range sortedIDs(st.reg.nodes) {
		nd := st.reg.nodes[id]
		m.log.Debug(fmt.Sprintf("Sending quit message to worker %s (index %d)", id, m.index(id)))
		m.send(id, protocol.TypeQuit, nil)
		if nd.state != protocol.StateMissing {
			st.end.final[id] = &finalReport{}
			st.ix().final.open++
		}
	}
	for id := range st.reg.stopped {
		m.send(id, protocol.TypeQuit, nil) // stopping workers have no users left
		if st.end.quitAfterStopped {
			// Stopped by this quit's stop: their last requests may come
			// with the final report (a Python worker sends none at stop).
			st.end.final[id] = &finalReport{}
			st.ix().final.open++
		}
	}
	st.end.finalDue = timeNow().Add(m.opts.FinalReportTimeout)
	if len(st.end.final) > 0 {
		m.log.Debug(fmt.Sprintf("Waiting up to %v for the final stats of %d workers", m.opts.FinalReportTimeout, len(st.end.final)))
	}
	m.checkFinal()
}

func (m *Master) checkFinal() {
	st := &m.st
	if !st.end.quitting || st.end.done {
		return
	}
	now := timeNow()
	if now.Before(st.end.finalDue) && !m.finalSettled(now) {
		return // O(1) for most messages: see finalIndex
	}
	var missing []string
	for id, f := range st.end.final {
		if f.quit || f.gone || (f.stats && now.Sub(f.statsAt) >= m.opts.FinalReportGrace) {
			continue
		}
		missing = append(missing, id)
	}
	if len(missing) > 0 && now.Before(st.end.finalDue) {
		return
	}
	sort.Strings(missing)
	for _, id := range missing {
		m.log.Warn(fmt.Sprintf("Worker %s (index %d) sent no final stats report within %v: its last requests are not counted", id, m.index(id), m.opts.FinalReportTimeout))
	}
	if st.run.state == protocol.StateStopping {
		m.setState(protocol.StateStopped)
	}
	st.end.done = true
}

// finalSettled reports whether no final report is awaited any more.
func (m *Master) finalSettled(now time.Time) bool {
	st := &m.st
	fx := &st.ix().final
	if fx.open > 0 {
		return false
	}
	if fx.inGrace == 0 {
		return true
	}
	if !fx.exact {
		var end time.Time
		for _, f := range st.end.final {
			if f.waiting() && f.stats {
				if e := f.statsAt.Add(m.opts.FinalReportGrace); e.After(end) {
					end = e
				}
			}
		}
		fx.graceEnd, fx.exact = end, true
	}
	return !now.Before(fx.graceEnd)
}

// startShape starts the load shape goroutine. Precondition: loop.
func (m *Master) startShape() {
	st := &m.st
	if st.run.shapeCancel != nil {
		m.log.Info("There is an ongoing shape test running. Editing is disabled")
		return
	}
	m.log.Info("Shape test starting. User count and spawn rate are ignored for this type of load test")
	ctx, cancel := context.WithCancel(context.Background())
	st.run.shapeCancel = cancel
	m.goroutine("shape", func() { m.shape(ctx) })
}

// shape evaluates the stages every ShapeTick and starts a new dispatch when
// the stage changes; after the last stage the headless master quits, else
// the test stops. A stage change replaces a ramp still in progress.
func (m *Master) shape(ctx context.Context) {
	m.log.Info("Shape worker starting")
	begin := timeNow()
	last := -1
	t := time.NewTicker(m.opts.ShapeTick)
	defer t.Stop()
	for {
		elapsed := timeNow().Sub(begin)
		i := sort.Search(len(m.opts.Stages), func(i int) bool { return elapsed < m.opts.Stages[i].Duration })
		if i == len(m.opts.Stages) {
			m.log.Info("Shape test stopping")
			m.call(func() {
				if ctx.Err() != nil {
					return
				}
				m.st.run.shapeCancel = nil
				if m.opts.Headless {
					m.mainLog.Info("--run-time limit reached, shutting down")
					m.beginQuit()
				} else {
					m.stopTest(true)
				}
			})
			return
		}
		if i != last {
			s := m.opts.Stages[i]
			m.log.Info(fmt.Sprintf("Shape test updating to %d users at %.2f spawn rate", s.Users, s.SpawnRate))
			m.call(func() {
				if ctx.Err() != nil {
					return
				}
				if err := m.start(int64(s.Users), s.SpawnRate); err != nil {
					m.log.Error("Shape test: " + err.Error())
				}
			})
			last = i
		}
		select {
		case <-ctx.Done():
			return
		case <-m.loopDone:
			return
		case <-t.C:
		}
	}
}
