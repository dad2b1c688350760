package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/diag"
	"github.com/cicada-load/cicada/internal/ratelimit"
	"github.com/cicada-load/cicada/internal/timespan"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/worker/httpc"
)

// Scenario is what a worker runs: its user classes and their defaults.
type Scenario struct {
	// Host is the default base URL of the users' HTTP clients, used when
	// neither the master nor the user class gives one.
	Host string
	// Classes are the user classes, matched by name against the master's
	// spawn messages. At least one is required; names must be unique.
	Classes []UserClass
	// HTTP configures every user's HTTP client.
	HTTP HTTPOptions
	// ExactClassNames turns off the single-class alias: a scenario with
	// one class then serves only that name, and other names are unknown
	// classes. Set for a locustfile that names its classes (package
	// locustfile), where another name is a class left out of the read.
	ExactClassNames bool
}

// Worker is a Locust worker: it joins a Locust (or cicada) master over
// ZeroMQ, runs the users the master asks for and reports their stats.
// Create it with New and run it with Run. Its methods are safe for
// concurrent use.
type Worker struct {
	opts    Options
	log     *slog.Logger
	nodeID  string
	classes []*compiledClass
	rec     *stats.Recorder
	env     *env
	cpu     cpuSampler

	running atomic.Bool
	dealer  atomic.Pointer[zmtp.Dealer] // set by Run
	pool    *pool
	exc     excLimiter
	repeats *ratelimit.Limiter // repeated log lines and exception messages, per cause

	maxUsers    int64  // the user ceiling; negative: none
	maxUsersWhy string // where maxUsers comes from, for messages

	rateMu sync.Mutex // SetRate and leaveRate (rate.go)

	customMu sync.RWMutex
	custom   map[string]MessageHandler

	conns     *httpc.Counters // every user's connection events
	diag      diagState       // controller goroutine only
	roundBusy atomic.Bool     // a second round runs
	bg        sync.WaitGroup  // background work (second rounds), waited for by Run

	// mu guards the fields below and the command queue.
	mu struct {
		sync.Mutex
		state         string
		registered    bool // acked since the last client_ready; gates spawning/heartbeat
		readyWanted   bool // false between client_stopped and the next client_ready
		readySent     bool // a client_ready awaits its ack
		everAcked     bool // the first ack arrived
		connected     bool // the DEALER has a connection
		hadConn       bool // a connection existed before (so Connected means "re")
		selfReconnect bool // the next reconnection follows our own Reconnect()
		ackIndex      int64
		// cicadaMaster: the master is cicada (its ack said so), so cicada's
		// own messages may be sent; a Python master would log each as unknown.
		cicadaMaster bool
		lastSpawnTS  float64
		lastMasterHB time.Time
		stopTimeout  time.Duration
		queue        []command
		unknownSeen  map[string]bool // unknown class names reported in this test
		quitting     bool
		warned       map[string]bool // self-diagnosis warning kinds already issued
	}
	wake  chan struct{} // controller wake-up, capacity 1
	acked chan struct{} // housekeeping wake-up on the first ack, capacity 1
	done  chan error    // the controller's quit result, capacity 1
}

// New validates the scenario and returns a Worker ready to Run.
func New(opts Options, sc Scenario) (*Worker, error) {
	opts = opts.withDefaults()
	if len(sc.Classes) == 0 {
		return nil, fmt.Errorf("%w: no user classes", ErrScenario)
	}
	w := &Worker{
		opts:   opts,
		log:    opts.Logger.With("node", opts.NodeID),
		nodeID: opts.NodeID,
		custom: make(map[string]MessageHandler),
		wake:   make(chan struct{}, 1),
		acked:  make(chan struct{}, 1),
		done:   make(chan error, 1),
	}
	seen := make(map[string]bool)
	for i := range sc.Classes {
		uc := sc.Classes[i] // copy: the caller keeps its own
		if seen[uc.Name] {
			return nil, fmt.Errorf("%w: duplicate user class %q", ErrScenario, uc.Name)
		}
		seen[uc.Name] = true
		cc, err := compileClass(&uc)
		if err != nil {
			return nil, err
		}
		cc.idx = i
		w.classes = append(w.classes, cc)
	}
	if len(opts.SourceIPs) > 0 {
		if err := diag.CheckSourceIPs(opts.SourceIPs); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
	}
	rec, err := stats.NewRecorderWithOptions(stats.Options{Now: opts.Now, Logger: w.log.With("logger", "locust.stats")})
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.rec = rec
	httpOpts := sc.HTTP
	if httpOpts.Counters == nil {
		httpOpts.Counters = new(httpc.Counters)
	}
	w.conns = httpOpts.Counters
	w.env = &env{rec: w.rec, log: w.log, onExc: w.reportException, httpOpts: httpOpts, defHost: sc.Host}
	w.env.configs.sources = opts.SourceIPs
	w.env.worker = w
	w.pool = newPool(w.env, w.classes)
	w.pool.exact = sc.ExactClassNames
	w.exc.rate = opts.ExceptionRate
	w.maxUsers, w.maxUsersWhy = userCeiling(opts.MaxUsers)
	w.repeats = ratelimit.New(opts.RepeatInterval, maxRepeatCauses)
	w.mu.state = protocol.StateReady
	w.mu.readyWanted = true
	w.mu.stopTimeout = opts.StopTimeout
	w.mu.ackIndex = -1
	return w, nil
}

// NodeID returns the worker's id (its ZeroMQ identity).
func (w *Worker) NodeID() string { return w.nodeID }

// Index returns the index the master gave in its last ack, or -1.
func (w *Worker) Index() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.ackIndex
}

// State returns the state the worker reports in its heartbeats: protocol.StateReady,
// protocol.StateSpawning or protocol.StateRunning.
func (w *Worker) State() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.state
}

// Registered reports whether the master has acknowledged the worker's
// latest client_ready (and no stop has unregistered it since).
func (w *Worker) Registered() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.registered
}

// UserCount returns the running users per class and their total.
func (w *Worker) UserCount() (map[string]int64, int64) {
	return w.userCounts()
}

// Quit asks a running worker to leave the cluster as a Python worker does on
// Ctrl-C: it stops its users, sends a final stats report and quit, and Run
// returns nil. It returns at once; it does nothing if Run is not running.
func (w *Worker) Quit() {
	w.enqueue(command{kind: cmdQuit})
}

// Run connects to the master and serves it until the master sends quit,
// Quit is called, the master stops sending heartbeats (ErrMasterTimeout),
// the first ack does not come (ErrNoAck) or ctx is done. After a quit it
// returns nil. When ctx is done the worker drops out abruptly, like a killed
// process: users are interrupted and no quit is sent; Run returns ctx.Err().
// Run may be called once.
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	endpoint := "tcp://" + net.JoinHostPort(w.opts.MasterHost, strconv.Itoa(w.opts.MasterPort))
	d, err := zmtp.Dial(endpoint, w.nodeID, w.opts.Transport)
	if err != nil {
		return fmt.Errorf("worker: connect to master: %w", err)
	}
	runCtx, cancelUsers := context.WithCancel(context.WithoutCancel(ctx))
	w.env.runCtx = runCtx // before any user starts: users start from the controller
	if rt := w.opts.Runtime; rt != nil {
		err := rt.Start(RuntimeEnv{Recorder: w.rec, Logger: w.log, Exception: w.reportException})
		if err != nil {
			cancelUsers()
			_ = d.Close()
			_ = rt.Close()
			return fmt.Errorf("worker: start the runtime: %w", err)
		}
	}
	w.dealer.Store(d)
	w.log.Info("worker starting", "master", endpoint, "classes", len(w.classes), "max_users", w.maxUsers)

	loopCtx, stopLoops := context.WithCancel(ctx)
	var wg sync.WaitGroup
	fail := make(chan error, 2)
	wg.Add(3)
	go func() { defer wg.Done(); w.recvLoop(loopCtx) }()
	go func() { defer wg.Done(); w.housekeeping(loopCtx, fail) }()
	go func() { defer wg.Done(); w.controller(loopCtx) }()

	// client_ready goes out on the Connected event (see onEvent).

	var result error
	select {
	case <-ctx.Done():
		result = ctx.Err()
		w.log.Warn("worker context done: dropping out without quit")
	case result = <-w.done:
	case result = <-fail:
		if errors.Is(result, ErrMasterTimeout) {
			// Locust: a worker without master heartbeats quits.
			w.quitNow()
		}
	}

	// Teardown: interrupt whatever still runs (and whatever the controller
	// might still be starting).
	b := w.pool.close()
	b.start()
	b.wait(0, w.opts.ForceWait, nil)
	cancelUsers()
	w.bg.Wait()
	if !w.pool.waitIdle(w.opts.ForceWait) {
		w.log.Warn("some user tasks did not return after being interrupted", "users", w.pool.nLive.Load())
	}
	stopLoops()
	_ = d.Close()
	wg.Wait()
	if rt := w.opts.Runtime; rt != nil {
		// After the controller ended: no Spawn or Stop runs any more.
		if err := rt.Close(); err != nil {
			w.log.Warn("closing the runtime failed", "err", err)
		}
	}
	w.log.Info("worker stopped", "result", result)
	return result
}

// ---- sending ----

// send encodes and queues one message. Errors are logged, never fatal.
func (w *Worker) send(typ string, data any) {
	b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: w.nodeID})
	if err != nil {
		w.logRepeated(slog.LevelError, causeEncode+" "+typ, "cannot encode message", "type", typ, "err", err)
		return
	}
	if err := w.dealer.Load().Send(b); err != nil {
		w.logRepeated(slog.LevelWarn, causeSendFailed, "cannot send message to master", "type", typ, "err", err)
	}
}

// sendGated sends a message that a Python master only accepts from a
// registered worker (Locust 2.12.1 locust/runners.py,
// MasterRunner.client_listener looks the sender of spawning and
// spawning_complete up in self.clients); it is dropped otherwise.
func (w *Worker) sendGated(typ string, data any) {
	w.mu.Lock()
	ok := w.mu.registered
	w.mu.Unlock()
	if !ok {
		w.log.Debug("not registered with the master: message not sent", "type", typ)
		return
	}
	w.send(typ, data)
}

// sendReady sends client_ready with -1 (skip the version check), which
// every Locust 2.x master acknowledges.
func (w *Worker) sendReady() {
	w.mu.Lock()
	if !w.mu.readyWanted {
		w.mu.Unlock()
		return
	}
	w.mu.readySent = true
	w.mu.Unlock()
	w.send(protocol.TypeClientReady, &protocol.ClientReady{VersionSkipCheck: true})
}

func (w *Worker) sendStats() {
	counts, total := w.userCounts()
	w.send(protocol.TypeStats, w.rec.Report(counts, total))
}

func (w *Worker) sendHeartbeat() {
	w.mu.Lock()
	ok := w.mu.registered && w.mu.connected
	state := w.mu.state
	w.mu.Unlock()
	if !ok {
		return
	}
	w.send(protocol.TypeHeartbeat, &protocol.Heartbeat{
		State:       state,
		CPUUsage:    w.cpu.sample(time.Now()),
		MemoryUsage: processRSS(),
		Connections: w.connCounters(),
	})
	w.checkGeneratorErrors()
}

// ---- receiving ----

func (w *Worker) recvLoop(ctx context.Context) {
	for {
		frames, err := w.dealer.Load().Recv(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, zmtp.ErrClosed) {
				w.log.Error("receive from master failed", "err", err)
			}
			return
		}
		if len(frames) == 0 {
			continue
		}
		msg, err := protocol.Decode(frames[0])
		if err != nil {
			w.logRepeated(slog.LevelWarn, causeMalformed, "ignoring malformed message from master", "err", err, "bytes", len(frames[0]))
			continue
		}
		w.handle(msg)
	}
}

// handle processes one message from the master. It never blocks for long:
// spawn, stop and quit go to the controller.
func (w *Worker) handle(msg protocol.Message) {
	switch msg.Type {
	case protocol.TypeAck:
		w.onAck(msg)
	case protocol.TypeHeartbeat:
		w.mu.Lock()
		w.mu.lastMasterHB = time.Now()
		w.mu.Unlock()
	case protocol.TypeSpawn:
		w.onSpawn(msg)
	case protocol.TypeStop:
		w.logRepeated(slog.LevelInfo, causeStop, "stop message from master")
		w.leaveRate()
		w.enqueue(command{kind: cmdStop})
	case protocol.TypeQuit:
		w.logRepeated(slog.LevelInfo, causeQuit, "quit message from master: shutting down")
		w.enqueue(command{kind: cmdQuit})
	case protocol.TypeReconnect:
		w.logRepeated(slog.LevelWarn, causeReconnect, "reconnect message from master: resetting the connection")
		w.mu.Lock()
		w.mu.selfReconnect = true
		w.mu.Unlock()
		w.dealer.Load().Reconnect()
	case protocol.TypeSpawningComplete:
		w.log.Debug("master finished spawning", "data", fmt.Sprint(msg.Data))
	case protocol.TypeCicadaSecondRound:
		w.onSecondRound()
	case protocol.TypeCicadaRate:
		w.onRate(msg)
	case protocol.TypeUpdateUserClass, protocol.TypeLocustfile:
		w.logRepeated(slog.LevelWarn, causeUnsupported+" "+msg.Type, "message type not supported by this worker; ignored", "type", msg.Type)
	default:
		w.onCustom(msg)
	}
}

func (w *Worker) onAck(msg protocol.Message) {
	w.mu.Lock()
	if a, ok := msg.Data.(*protocol.Ack); ok && a != nil {
		w.mu.ackIndex = a.Index
		w.mu.cicadaMaster = a.Cicada != ""
	}
	if !w.mu.readySent {
		w.mu.Unlock()
		w.log.Debug("ack without a pending client_ready; ignored")
		return
	}
	first := !w.mu.everAcked
	w.mu.readySent = false
	w.mu.registered = true
	w.mu.everAcked = true
	idx := w.mu.ackIndex
	w.mu.Unlock()
	w.log.Info("registered with the master", "index", idx)
	if first {
		select {
		case w.acked <- struct{}{}:
		default:
		}
	}
}

func (w *Worker) onSpawn(msg protocol.Message) {
	s, ok := msg.Data.(*protocol.Spawn)
	if !ok || s == nil {
		w.logRepeated(slog.LevelError, causeSpawnData, "spawn message without valid data; ignored", "data", fmt.Sprintf("%T", msg.Data))
		return
	}
	if err := checkSpawnTimestamp(s.Timestamp, time.Now()); err != nil {
		// Refused before "spawning": the worker keeps its users and state.
		w.reportProblem(causeSpawnTimestamp, err.Error(),
			"spawn: the message's timestamp cannot order it after earlier spawns; the spawn was ignored\n",
			"timestamp", s.Timestamp)
		return
	}
	w.sendGated(protocol.TypeSpawning, nil)
	w.mu.Lock()
	if s.Timestamp <= w.mu.lastSpawnTS {
		last := w.mu.lastSpawnTS
		w.mu.Unlock()
		w.logRepeated(slog.LevelInfo, causeSpawnOld, "discarding spawn message with an older or equal timestamp", "timestamp", s.Timestamp, "last", last)
		return
	}
	w.mu.lastSpawnTS = s.Timestamp
	if s.StopTimeout != nil && *s.StopTimeout >= 0 {
		w.mu.stopTimeout = timespan.FromSeconds(*s.StopTimeout)
	} else {
		w.mu.stopTimeout = w.opts.StopTimeout
	}
	newTest := w.mu.state != protocol.StateRunning && w.mu.state != protocol.StateSpawning
	w.mu.state = protocol.StateSpawning
	// The host before the command: the controller may run the spawn (and
	// read masterHost) as soon as it is queued.
	if s.Host != nil {
		h := *s.Host
		w.env.masterHost.Store(&h)
	}
	w.enqueueLocked(command{kind: cmdSpawn, spawn: s, newTest: newTest})
	w.mu.Unlock()
	if newTest {
		w.rec.Clear()
		w.mu.Lock()
		w.mu.unknownSeen = nil
		w.mu.Unlock()
	}
	w.log.Debug("spawn", "users", s.UserClassesCount, "new_test", newTest)
}

// maxUsersFix says how to raise the user ceiling.
const maxUsersFix = "raise the open-files limit (ulimit -n), or set --max-users (cicada --worker, worker.Main; Options.MaxUsers)"

// usersPerFile is the default user ceiling per open file allowed: users
// up to the limit can all connect, and up to twice the limit the failures
// (EMFILE) still tell the story; far beyond it a worker only grows.
const usersPerFile = 2

// userCeiling resolves Options.MaxUsers: the most users a spawn may ask of
// this worker (negative: no ceiling), and where that number comes from.
func userCeiling(opt int64) (int64, string) {
	switch {
	case opt > 0:
		return opt, "its MaxUsers setting"
	case opt < 0:
		return -1, "no ceiling"
	}
	if l, _ := diag.ReadLimits(); l.OpenFiles > 0 && l.OpenFiles <= math.MaxInt64/usersPerFile {
		return usersPerFile * l.OpenFiles, fmt.Sprintf("%d× its open-files limit (RLIMIT_NOFILE %d): each HTTP user holds one connection", usersPerFile, l.OpenFiles)
	}
	return DefaultMaxUsers, "DefaultMaxUsers: its open-files limit is unknown or unlimited"
}

// MaxSpawnClockSkew is how far ahead of the worker's clock a spawn's
// timestamp (the master's clock) may be. Spawns are ordered by their
// timestamps, and one far in the future would make the worker discard every
// later spawn as older: such a spawn is refused with an ERROR and an
// exception to the master, and so is a timestamp that is not a finite
// positive number.
const MaxSpawnClockSkew = time.Hour

// checkSpawnTimestamp returns an error wrapping ErrBadSpawn when ts (Unix
// seconds) cannot order a spawn: not finite, not positive, or more than
// MaxSpawnClockSkew after now.
func checkSpawnTimestamp(ts float64, now time.Time) error {
	switch {
	case math.IsNaN(ts) || math.IsInf(ts, 0):
		return fmt.Errorf("%w: timestamp %v is not a finite number", ErrBadSpawn, ts)
	case ts <= 0:
		return fmt.Errorf("%w: timestamp %v is not after 1970", ErrBadSpawn, ts)
	}
	limit := float64(now.Add(MaxSpawnClockSkew).UnixNano()) / 1e9
	if ts > limit {
		return fmt.Errorf("%w: timestamp %.3f is %s ahead of this worker's clock (at most %v allowed): check the clocks of the master's and the worker's hosts",
			ErrBadSpawn, ts, aheadString(ts-limit+MaxSpawnClockSkew.Seconds()), MaxSpawnClockSkew)
	}
	return nil
}

// aheadString formats a positive number of seconds, huge ones included.
func aheadString(sec float64) string {
	if sec < float64(math.MaxInt64/int64(time.Second)) {
		return time.Duration(sec * float64(time.Second)).Round(time.Second).String()
	}
	return fmt.Sprintf("%.3g s", sec)
}

// ---- housekeeping: heartbeats, stats, registration, liveness ----

func (w *Worker) housekeeping(ctx context.Context, fail chan<- error) {
	hb := time.NewTicker(w.opts.HeartbeatInterval)
	defer hb.Stop()
	ready := time.NewTicker(w.opts.ConnectInterval)
	defer ready.Stop()
	var statsC <-chan time.Time
	var connectDeadline <-chan time.Time
	if w.opts.ConnectTimeout > 0 {
		t := time.NewTimer(w.opts.ConnectTimeout)
		defer t.Stop()
		connectDeadline = t.C
	}
	events := w.dealer.Load().Events()
	lastTick := time.Now() // of the heartbeat ticker, for checkMaster
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.acked:
			connectDeadline = nil
			st := time.NewTicker(w.opts.StatsInterval)
			defer st.Stop()
			statsC = st.C
			w.sendStats()
			w.sendHeartbeat()
		case <-statsC:
			w.sendStats()
		case <-hb.C:
			w.sendHeartbeat()
			w.flushRepeated()
			now := time.Now()
			err := w.checkMaster(now, lastTick)
			lastTick = now
			if err != nil {
				fail <- err
				return
			}
		case <-ready.C:
			w.mu.Lock()
			resend := !w.mu.registered && w.mu.readyWanted && w.mu.connected
			w.mu.Unlock()
			if resend {
				w.log.Debug("no ack yet: sending client_ready again")
				w.sendReady()
			}
		case <-connectDeadline:
			fail <- fmt.Errorf("%w after %v", ErrNoAck, w.opts.ConnectTimeout)
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			w.onEvent(ev)
		}
	}
}

// checkMaster returns ErrMasterTimeout when a master that sends heartbeats
// stopped doing so. now is the time of this heartbeat tick, lastTick that
// of the previous one: a gap between them far longer than the ticker's
// interval means the worker itself did not run (SIGSTOP, a paused VM, a
// starved host), and the master's heartbeats of that time may still be on
// their way. The master then gets a fresh MasterHeartbeatTimeout from now
// instead of being declared gone on the worker's first tick after resuming.
func (w *Worker) checkMaster(now, lastTick time.Time) error {
	if w.opts.MasterHeartbeatTimeout < 0 {
		return nil
	}
	paused := now.Sub(lastTick) > pauseGap(w.opts.HeartbeatInterval, w.opts.MasterHeartbeatTimeout)
	w.mu.Lock()
	last := w.mu.lastMasterHB
	if paused && !last.IsZero() && last.Before(now) {
		w.mu.lastMasterHB = now
	}
	w.mu.Unlock()
	if last.IsZero() {
		return nil
	}
	if paused {
		w.log.Warn("the worker did not run for a while (stopped or paused?): the master gets a fresh heartbeat timeout",
			"gap", now.Sub(lastTick).Round(time.Millisecond), "timeout", w.opts.MasterHeartbeatTimeout)
		return nil
	}
	if since := now.Sub(last); since > w.opts.MasterHeartbeatTimeout {
		w.log.Error("no heartbeat from the master: quitting", "since", since.Round(time.Second))
		return fmt.Errorf("%w for %v", ErrMasterTimeout, since.Round(time.Second))
	}
	return nil
}

// pauseGap is the gap between two heartbeat ticks (of the given interval)
// beyond which the worker counts itself as having been paused: a quarter of
// the master heartbeat timeout, and at least three intervals.
func pauseGap(interval, timeout time.Duration) time.Duration {
	return max(3*interval, timeout/4)
}

// onEvent tracks the connection. After a lost connection the worker
// registers again (client_ready), so that a restarted master finds it: a
// Python worker never does this and stays a zombie (Locust 2.12.1
// locust/runners.py: WorkerRunner sends client_ready at start, in
// connect_to_master, and after a stop, never after a lost connection, and
// reconnect only resets the socket).
func (w *Worker) onEvent(ev zmtp.Event) {
	switch ev.Kind {
	case zmtp.Connected:
		w.mu.Lock()
		w.mu.connected = true
		re := w.mu.hadConn
		w.mu.hadConn = true
		self := w.mu.selfReconnect
		w.mu.selfReconnect = false
		if re && !self {
			// The master may be a new process that does not know us.
			w.mu.registered = false
			w.mu.readySent = false
		}
		need := w.mu.readyWanted && !w.mu.registered
		w.mu.Unlock()
		w.log.Info("connected to master", "remote", fmt.Sprint(ev.Remote), "reconnect", re)
		if need {
			w.sendReady()
		}
	case zmtp.Disconnected:
		w.mu.Lock()
		w.mu.connected = false
		self := w.mu.selfReconnect
		if !self {
			// Gate spawning/spawning_complete until the master (perhaps a
			// new one) has acknowledged us again.
			w.mu.registered = false
		}
		w.mu.Unlock()
		w.log.Warn("lost the connection to the master", "err", ev.Err)
	}
}

// ---- exceptions ----

// reportException sends an exception message, within the rate limit.
func (w *Worker) reportException(msg, traceback string) {
	if !w.exc.allow(time.Now()) {
		return
	}
	w.send(protocol.TypeException, &protocol.Exception{Msg: msg, Traceback: traceback})
}

// excLimiter is a per-second cap on exception messages.
type excLimiter struct {
	mu      sync.Mutex
	rate    int
	second  int64
	n       int
	dropped int64
}

// takeDropped returns the exceptions dropped since the last call.
func (l *excLimiter) takeDropped() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.dropped
	l.dropped = 0
	return n
}

func (l *excLimiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := now.Unix()
	if s != l.second {
		l.second, l.n = s, 0
	}
	l.n++
	if l.n > l.rate {
		l.dropped++
		return false
	}
	return true
}
