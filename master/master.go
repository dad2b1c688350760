// Package master is cicada's Locust-compatible master: it binds Locust's
// ZeroMQ ROUTER port, registers Python Locust 2.x and cicada workers, tracks
// their liveness, dispatches users to them at the spawn rate (package
// master/dispatch), merges their statistics (package stats) and runs
// headless and autostarted tests with Locust's console tables, CSV files and
// log lines; Run returns a Result whose ExitCode is Locust's exit code.
//
// Behaviour follows locust/runners.py (MasterRunner) and locust/main.py of
// Locust 2.12.1, with HEAD's fixes, plus these deliberate differences:
//
//   - Every client_ready whose data is a string or -1 is acknowledged,
//     including Debian's python3-locust 2.12.1, whose version is "" (which
//     Locust's own master rejects as pre-2.0). Bad data is logged, never
//     fatal; no message from a worker can stop the master.
//   - Heartbeats are echoed (Locust ≥ 2.19 behaviour) only to workers that
//     understand them: version -1 (cicada, boomer), versions ≥ 2.19 and
//     unparsable non-empty versions, and adopted workers; and at most once
//     per Options.HeartbeatEchoInterval (20 s) per worker instead of for
//     every heartbeat: workers only check that one arrived within 60 s,
//     and the writes were the master's largest cost with many workers. Not to "" (the
//     Debian 2.12.1 package) nor to versions below 2.19, which would log
//     "Unknown message type" every second. A worker that never received a
//     master heartbeat never arms its 60 s master timeout, so not echoing
//     is always safe.
//   - A worker that heartbeats but is not registered (the master
//     restarted, or it was deleted after a partition) is adopted: a node is
//     created from its heartbeat instead of leaving a zombie. Workers that
//     sent client_stopped (until their client_ready) or quit are not
//     adopted.
//   - A worker that runs users while the master is ready or stopped
//     (adopted from its heartbeat, or a cicada worker that re-sent
//     client_ready after a reconnect: its master restarted) is sent stop
//     once, which brings it back ready through client_ready
//     (Locust lets it run, and a restarted headless master waits for a
//     ready worker forever). The requests in stats reports, and the
//     exceptions, of workers never sent a spawn are not merged: they belong
//     to a test this master did not start (Locust merges them). Those of a
//     worker that was sent a spawn are merged even after it left the nodes
//     (the report after its client_stopped carries the requests finished
//     since its last one).
//   - At exit the master waits for every live worker's final stats report
//     (its quit message, which follows the report, or a stats report after
//     quit was sent) up to Options.FinalReportTimeout, instead of Locust's
//     fixed 0.5 s, so no request goes uncounted; the exit code and the
//     summary come after that wait. CSV files are completed at exit.
//   - With a stop timeout (Options.StopTimeout), a quit (the run time's
//     end, a signal, Quit) stops the test first and quits once the workers
//     report no users, so in-flight tasks get the stop timeout as in Locust
//     standalone (a Locust master sends quit at once, and waits 0.5 s);
//     the workers stopped meanwhile owe a final report too.
//   - Options.Standalone (cicada standalone: the workers are the process's
//     own) logs as Locust standalone: no wait or registration lines,
//     "Ramping to N users", a Total-only connections table.
//   - A cicada worker whose class list lacks classes the master dispatches
//     is an ERROR in the master's log naming both lists (Locust's worker
//     fails in its own log only).
//   - When a deleted worker's users are re-dispatched, the split is sent at
//     once (a rebalance) instead of ramping the remaining workers down to
//     zero and back up as 2.12.1's fresh dispatcher does; the final split is
//     the same. Missing workers are not given users (HEAD's fix).
//   - Re-dispatches are coalesced: workers joining, healing, quitting or
//     going missing in a burst ask for one re-dispatch, which runs at the
//     end of the message or tick that asked, and then at most once per
//     quarter of Options.HeartbeatInterval. Locust re-dispatches once per
//     worker; each re-dispatch splits the users over the current workers,
//     so the final split is the same, with fewer intermediate spawn
//     messages (and "Sending spawn jobs" lines) on the way.
//   - A new Start replaces a ramp still in progress (2.12.1 runs them
//     concurrently), and a worker joining while the master waits for
//     reports after a ramp is given users at once.
//   - "The last worker quit" uses HEAD's condition (no ready, spawning or
//     running worker left).
//   - As HEAD, the end of a ramp is broadcast (spawning_complete with the
//     user count), but only to workers that know it (Locust ≥ 2.29,
//     cicada); a locustfile request (HEAD's -f -) is answered with an
//     error. A malformed message is logged and dropped; no reconnect is
//     sent (our decoder is stricter than Python's, so it would not help).
//   - User counts above dispatch.MaxUsers (10^7) and spawn rates outside
//     dispatch.MinSpawnRate to dispatch.MaxSpawnRate (10^-3 to 10^7 users
//     per second) are refused, by New (command line, load shapes) and
//     Start (the web UI's /swarm), with the bound in the message. Locust
//     accepts any count and runs out of memory placing it.
//   - Log lines caused by worker messages and liveness are limited to 20
//     per cause per second; the rest are counted, and the next line of the
//     cause, or a "Suppressed N similar log messages" line on the next
//     heartbeat tick, says how many. Exception messages from workers enter
//     the statistics at most 20 times per traceback per second (cicada
//     workers cap what they send as well). Locust logs and keeps every one
//     (a client_ready flood wrote 277 MB of log in 10 s).
//   - Workers that are gone (deleted, quit, stopped, or only heard of)
//     are forgotten after the time a missing worker is kept plus the stop
//     timeout, or sooner beyond 10,000 gone identities: their index, last
//     spawn timestamp, stop and quit marks and warnings; their connection
//     counters are folded into one "N gone workers" row. Locust keeps its
//     worker indexes for good. At most 1000 load generator warnings (16
//     kinds per worker) are kept.
//   - dispatch: 2.12.1 hangs for good when fixed_count classes are all full
//     on a ramp up after a ramp down; cicada skips full classes (see
//     package dispatch).
//
// Concurrency: one goroutine (the loop) owns all master state; the Router's
// goroutine decodes messages and hands them over in batches, and the
// control methods run closures on the loop. See LOCKS.md.
//
// Arrival rate (issue 13; rate.go, rateout.go): with Options.Rate the users
// are the in-flight cap and the master splits the rate among cicada
// workers (Python workers keep their user counts), re-splitting on joins,
// leaves and missing workers; the summary and PREFIX_rate.csv add the
// dropped iterations and the corrected percentiles. Locust has no rate.
package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/master/dispatch"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/stats"
)

// inbound is one received message, decoded on the Router's goroutine (see inbox).
type inbound struct {
	id        string
	msg       protocol.Message
	err       error
	foreignID bool // msg.NodeID differs from id (compared while decoding, with both in cache)
}

// Master is a Locust master. Create it with New, then call Run once. The
// control and view methods (Start, Stop, Quit, ResetStats, Status,
// Snapshot, Addr) are safe for concurrent use.
type Master struct {
	opts    Options
	log     *slog.Logger // locust.runners
	mainLog *slog.Logger // locust.main
	rootLog *slog.Logger // root
	router  transport    // the ROUTER: *zmtp.Router outside tests
	stats   *stats.Stats
	out     *sink // console table and CSV files

	inbox    *inbox
	calls    chan func()
	quitReq  chan struct{}
	quitOnce sync.Once
	phase    atomic.Int32 // 0 new, 1 running, 2 done
	loopDone chan struct{}
	wg       sync.WaitGroup

	lastStatus atomic.Pointer[Status]
	connView   atomic.Pointer[connView] // published by the loop on its heartbeat ticks

	st loopState // owned by the loop goroutine

	thr thresholdWatch // Options.Thresholds (thresholds.go)
}

// New validates opts, binds the worker port and creates the CSV files.
// The caller must call Run (which releases both) or Close.
func New(opts Options) (*Master, error) { return newMaster(opts, listenZMTP) }

// newMaster is New over the transport that listen returns (tests pass an
// in-memory one).
func newMaster(opts Options, listen listenFunc) (*Master, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	m := &Master{
		opts:     opts,
		log:      opts.Logger.With("logger", "locust.runners"),
		mainLog:  opts.Logger.With("logger", "locust.main"),
		rootLog:  opts.Logger.With("logger", "root"),
		inbox:    newInbox(),
		calls:    make(chan func()),
		quitReq:  make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	st, err := stats.NewWithOptions(stats.Options{Now: opts.Now, Logger: opts.Logger.With("logger", "locust.stats")})
	if err != nil {
		return nil, fmt.Errorf("master: %w", err)
	}
	m.stats = st
	if err := m.thr.init(&m.opts); err != nil {
		return nil, err
	}
	m.st.init(&m.opts)
	topts := opts.Transport
	topts.Handler = m.inbox
	if topts.PollInterval == 0 {
		topts.PollInterval = DefaultPollInterval
	}
	r, err := listen(opts.endpoint(), topts)
	if err != nil {
		port := strconv.Itoa(max(opts.BindPort, 0))
		if opts.BindHost != "*" {
			port = opts.BindHost + ":" + port
		}
		m.log.Error(fmt.Sprintf("The master port (%s) is busy or cannot be bound. Is another Locust or cicada master still running? (%v)", port, err))
		return nil, fmt.Errorf("%w %s: %w", ErrBind, port, err)
	}
	m.router = r
	if m.out, err = newSink(&m.opts, m.log); err != nil {
		r.Close()
		return nil, err
	}
	return m, nil
}

// Addr returns the address the worker port is bound to.
func (m *Master) Addr() net.Addr { return m.router.Addr() }

// Close releases the port and files of a Master whose Run was never called.
// It is not needed after Run.
func (m *Master) Close() error {
	if !m.phase.CompareAndSwap(0, 2) {
		return nil
	}
	close(m.loopDone)
	m.out.closeFiles()
	m.inbox.close()
	return m.router.Close()
}

// Run runs the master until the test ends (headless, or autostart with
// Autoquit), Quit is called or ctx is done, then waits for the workers'
// final reports, logs "Shutting down (exit code N)", prints the summary and
// completes the CSV files. It returns the run's Result, whose ExitCode is
// the process exit code as Locust computes it (Locust 2.12.1 locust/main.py,
// shutdown), and an error only when the
// master itself failed (ErrClosed when called twice, ErrCSV). Run may be
// called once.
func (m *Master) Run(ctx context.Context) (Result, error) {
	if !m.phase.CompareAndSwap(0, 1) {
		return Result{}, ErrClosed
	}
	m.out.start(m.goroutine)
	switch {
	case m.opts.Headless:
		m.goroutine("headless", func() { m.headless(ctx) })
	case m.opts.Autostart:
		m.goroutine("autostart", func() { m.autostart(ctx) })
	}

	m.startThresholds()
	m.loop(ctx)

	// The loop is done: no more state changes. Stop the outputs (frames
	// not yet written are dropped: the final one supersedes them), then
	// the transport (Close lingers to flush the quit messages).
	m.out.stop()
	m.inbox.close()
	closeErr := m.router.Close()
	m.wg.Wait()
	m.phase.Store(2)

	res := Result{
		GaveUp:          m.st.end.result.gaveUp,
		InternalError:   m.st.end.result.internalError,
		ExitCodeOnError: *m.opts.ExitCodeOnError,
	}
	final := m.frame()
	if res.GaveUp {
		m.out.finishCSV(final)
		return res, nil
	}
	res.Failures = len(final.snap.Errors) > 0 || len(final.snap.Exceptions) > 0
	cv := final.conns
	res.SecondRoundFailed = m.opts.SecondRound && (cv == nil || !cv.round.Passed())
	res.Thresholds, res.GeneratorLimited = m.finalThresholds(final.snap), generatorLimited(cv)
	m.mainLog.Info(fmt.Sprintf("Shutting down (exit code %d)", res.ExitCode()))
	csvErr := m.out.finishCSV(final)
	m.out.summary(final)
	if err := m.writeVerdicts(res); err != nil && csvErr == nil {
		csvErr = err
	}
	if closeErr != nil && !errors.Is(closeErr, zmtp.ErrClosed) {
		m.log.Debug("closing the worker port: " + closeErr.Error())
	}
	return res, csvErr
}

// goroutine starts a tracked, pprof-labelled goroutine.
func (m *Master) goroutine(name string, f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		pprof.Do(context.Background(), pprof.Labels("master", name), func(context.Context) { f() })
	}()
}

// call runs f on the loop and waits for it. It returns false, without
// running f, when the loop is not running.
func (m *Master) call(f func()) bool {
	if m.phase.Load() != 1 {
		return false
	}
	done := make(chan struct{})
	select {
	case m.calls <- func() { f(); close(done) }:
	case <-m.loopDone:
		return false
	}
	<-done
	return true
}

// Quit ends the test and the master: workers are sent quit, their final
// reports awaited, and Run returns. It does not wait for that.
func (m *Master) Quit() {
	m.quitOnce.Do(func() { close(m.quitReq) })
}

// Start starts a test with users users at spawnRate users per second, or
// re-ramps a running one, as Locust's web UI "swarm" does. host, if not
// nil, replaces the target host. With a load shape configured (Stages),
// the shape is started instead and users and spawnRate are ignored. Start
// returns once the first dispatch step is sent; the ramp continues in the
// background and a later Start replaces it. Without workers it logs
// Locust's warning and returns nil. A user count or spawn rate beyond the
// dispatcher's ceilings (dispatch.MaxUsers, dispatch.MinSpawnRate,
// dispatch.MaxSpawnRate) is refused with ErrBadUserCount or
// ErrBadSpawnRate, a host without a scheme (CheckHost) with ErrHostScheme.
func (m *Master) Start(users int, spawnRate float64, host *string) error {
	if err := dispatch.CheckUsers(int64(users)); err != nil {
		return err
	}
	if err := dispatch.CheckRate(spawnRate); err != nil {
		return err
	}
	if host != nil {
		if err := CheckHost(*host); err != nil {
			return err
		}
	}
	var err error
	if !m.call(func() {
		if host != nil {
			m.st.run.host = *host
		}
		if len(m.opts.Stages) > 0 {
			m.startShape()
			return
		}
		err = m.start(int64(users), spawnRate)
	}) {
		return ErrClosed
	}
	return err
}

// Stop stops the test: workers are sent stop, and Stop returns when they
// report no users (or StopTimeout+StopWait later), or when ctx is done.
// Stopping an idle master is not an error.
func (m *Master) Stop(ctx context.Context) error {
	var done chan struct{}
	if !m.call(func() { done = m.stopTest(true) }) {
		return ErrClosed
	}
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-m.loopDone:
		return nil
	}
}

// ResetStats zeroes the statistics and clears errors and exceptions
// (Locust's /stats/reset).
func (m *Master) ResetStats() {
	m.stats.Reset()
	m.stats.ClearExceptions()
	m.call(func() { clear(m.st.rate.dropped) }) // the per-worker drops too (rate.go)
}

// Snapshot returns an immutable view of the merged statistics.
func (m *Master) Snapshot() *stats.Snapshot { return m.stats.Snapshot() }

// Status returns the master's current state and workers. The result is
// owned by the caller. It is served by the loop, which never blocks on the
// network, and is a static view before Run and after it returns.
func (m *Master) Status() Status {
	var s Status
	if m.call(func() { s = m.st.status(&m.opts) }) {
		return s
	}
	if p := m.lastStatus.Load(); p != nil {
		return p.clone()
	}
	return Status{State: protocol.StateReady, Host: m.opts.Host, Shape: len(m.opts.Stages) > 0, Classes: append([]UserClass(nil), m.opts.UserClasses...)}
}

// ---- the loop ----

func (m *Master) loop(ctx context.Context) {
	defer close(m.loopDone)
	st := &m.st
	tick := time.NewTicker(m.opts.HeartbeatInterval)
	defer tick.Stop()
	house := time.NewTicker(houseInterval(m.opts.ReportWait))
	defer house.Stop()
	st.ramp.rampTimer = time.NewTimer(time.Hour)
	st.ramp.rampTimer.Stop()
	defer st.ramp.rampTimer.Stop()
	tableC, csvC, stopTicks := m.out.tickers()
	defer stopTicks()
	if tableC != nil {
		m.out.offerTable(m.frame()) // the first table at once
	}
	events := m.router.Events()
	ctxDone := ctx.Done()
	quitReq := m.quitReq
	var batch []inbound
	for !st.end.done {
		select {
		case <-m.inbox.ready:
			batch = m.inbox.take(batch)
			for i := range batch {
				if st.end.done {
					batch[i].release()
					continue
				}
				m.handleSafely(&batch[i])
			}
			clear(batch)
		case f := <-m.calls:
			m.safely("call", f)
		case <-tick.C:
			m.safely("heartbeat tick", m.liveness)
		case <-house.C:
			m.safely("housekeeping", m.housekeeping)
		case <-tableC:
			m.out.offerTable(m.frame())
		case <-csvC:
			m.out.offerCSV(m.frame())
		case <-st.ramp.rampC:
			st.ramp.rampC = nil
			m.safely("dispatch", m.advanceRamp)
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			m.transportEvent(ev)
		case <-ctxDone:
			ctxDone = nil
			m.beginQuit()
		case <-quitReq:
			quitReq = nil
			m.beginQuit()
		}
	}
	m.publishConns()
	s := st.status(&m.opts)
	m.lastStatus.Store(&s)
}

// houseInterval is the period of deadline checks (report, stop and final
// waits): fine enough for a short ReportWait.
func houseInterval(reportWait time.Duration) time.Duration {
	return min(max(reportWait/10, 5*time.Millisecond), 50*time.Millisecond)
}

// safely runs f, logging a panic instead of crashing the master (Locust's
// "unhandled exception in a greenlet", which makes the exit code 2).
func (m *Master) safely(what string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			m.st.end.result.internalError = true
			m.log.Error(fmt.Sprintf("Unhandled error in the master (%s): %v", what, r))
		}
	}()
	f()
}

// handleSafely is safely for one message, without a closure per message.
func (m *Master) handleSafely(in *inbound) {
	defer func() {
		if r := recover(); r != nil {
			m.st.end.result.internalError = true
			m.log.Error(fmt.Sprintf("Unhandled error in the master (message): %v", r))
		}
	}()
	m.handle(*in)
}

func (m *Master) transportEvent(ev zmtp.Event) {
	switch ev.Kind {
	case zmtp.Connected:
		m.log.Debug(fmt.Sprintf("Connection from %s (%v)", ev.Identity, ev.Remote))
	case zmtp.Disconnected:
		m.log.Debug(fmt.Sprintf("Connection of %s closed (%v)", ev.Identity, ev.Err))
	}
}

// housekeeping checks the deadlines of the report, stop and final waits.
func (m *Master) housekeeping() {
	m.checkReportWait()
	m.checkStopWaiters()
	m.checkFinal()
	m.checkSecondRound()
}

// ---- sending ----

func (m *Master) send(id, typ string, data any) {
	b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: id})
	if err != nil {
		m.log.Error(fmt.Sprintf("Cannot encode %s for worker %s: %v", typ, id, err))
		return
	}
	if err := m.router.Send(id, b); err != nil {
		m.logf(slog.LevelDebug, "send", "Sending %s to worker %s: %v", typ, id, err)
	}
}

func (m *Master) index(id string) int {
	if i, ok := m.st.reg.indexes[id]; ok {
		return i
	}
	i := m.st.reg.nextIdx
	m.st.reg.nextIdx++
	m.st.reg.indexes[id] = i
	m.st.noteGone(id) // an id heard of but not (yet) a node is forgotten in time
	return i
}

// sortedIDs returns the node ids in a stable order.
func sortedIDs(nodes map[string]*node) []string {
	ids := make([]string, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
