package users

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/worker"
)

// Runtime runs a worker's users as connections of the data plane: it
// implements worker.Runtime on an engine.Engine of client stacks whose
// connection records run a stack.Program compiled from the scenario. Create
// it with New and give it to worker.Options.Runtime.
type Runtime struct {
	opts  Options
	sc    worker.Scenario
	plan  *plan
	links []link.Link
	wait  []engine.Waiter
	split [][2]uint16
	mss   int

	log  atomic.Pointer[slog.Logger]
	env  worker.RuntimeEnv
	fail failCounters // request failures by kind, for the heartbeat

	// mu guards the engine's life: Spawn (its setup, not its wait), Stop,
	// Close and SecondRound (to pick the engine) take it. Users and
	// Connections never do (heartbeats must not wait for a spawn).
	mu     sync.Mutex
	eng    *engine.Engine
	cancel context.CancelFunc
	done   chan error
	srv    server
	rows   []row
	cores  []*core // set before the engine starts; the cores read it
	closed bool

	engPtr   atomic.Pointer[engine.Engine] // eng, for readers without mu
	coresPtr atomic.Pointer[[]*core]       // cores, for readers without mu
	// targets counts the changes of the cores' targets (spawns, Stop): a
	// spawn whose targets were replaced stops waiting for them.
	targets atomic.Uint64

	namesMu sync.Mutex            // leaf
	names   []worker.RuntimeClass // the last spawn's targets, by name

	// spawnMu (leaf) guards spawns, the Spawn calls running, and
	// spawnIdle, closed when spawns drops to 0: a second round waits for
	// it.
	spawnMu   sync.Mutex
	spawns    int
	spawnIdle chan struct{}
}

// New checks the options and the scenario and returns a Runtime, or an
// error wrapping ErrOption or ErrRefused that names the class, task,
// request and field the data plane cannot run. It opens the links (Link on
// Interface, or Options.Links); the stacks and their connection tables are
// built at the first spawn, when the host is known.
func New(opts Options, sc worker.Scenario) (*Runtime, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	p, err := compile(&sc)
	if err != nil {
		return nil, err
	}
	split, err := engine.Split(opts.PortMin, opts.PortMax, opts.Cores)
	if err != nil {
		return nil, fmt.Errorf("users: %w: %w", ErrOption, err)
	}
	r := &Runtime{opts: opts, sc: sc, plan: p, split: split}
	r.log.Store(opts.Logger)
	open := opts.Links
	if open == nil {
		open = func(n int) ([]link.Link, []engine.Waiter, error) {
			return openLinks(opts.Link, opts.Interface, opts.DPDK, split, 0)
		}
		r.opts.LockThreads = true
	}
	r.links, r.wait, err = open(opts.Cores)
	if err != nil {
		return nil, fmt.Errorf("users: open the %s links: %w", opts.Link, err)
	}
	if len(r.links) != opts.Cores || (r.wait != nil && len(r.wait) != opts.Cores) {
		r.closeLinks()
		return nil, fmt.Errorf("users: %d links and %d waiters for %d cores: %w", len(r.links), len(r.wait), opts.Cores, ErrOption)
	}
	r.mss = r.links[0].MTU() - 40
	for _, l := range r.links[1:] {
		r.mss = min(r.mss, l.MTU()-40)
	}
	// Check the request sizes with every host known now (the master's
	// host is checked at its spawn), and the Program's limits.
	check := server{addr: netip.AddrPortFrom(netip.IPv4Unspecified(), 80), origin: "http://0.0.0.0", host: "0.0.0.0"}
	for i := range p.classes {
		if h := r.hostOf(i, ""); h != "" {
			srv, err := parseHost(fmt.Sprintf("class %q host", p.classes[i].name), h)
			if err == nil {
				_, err = r.program(&srv)
			}
			if err != nil {
				r.closeLinks()
				return nil, err
			}
			check = srv
		}
	}
	if err := r.checkProgram(&check); err != nil {
		r.closeLinks()
		return nil, err
	}
	return r, nil
}

// checkProgram has the stack compile the Program for srv on a one-record
// stack over a pipe of the links' MTU, so that what the stack refuses
// (weights, counts, wait values beyond its limits) is refused by New,
// not at the first spawn.
func (r *Runtime) checkProgram(srv *server) error {
	rp, err := r.program(srv)
	if err != nil {
		return err
	}
	mtu := r.mss + 40
	a, _, err := pipe.New(pipe.Config{Frames: 2, MTU: mtu, FrameSize: mtu + 14})
	if err != nil {
		return fmt.Errorf("users: check the program: %w", err)
	}
	server := ip4(r.opts.ClientIP) + uint32(r.opts.ClientIPs) // any address outside the client range
	if server == 0 {
		server = ip4(r.opts.ClientIP) - 1
	}
	_, err = stack.New(stack.Config{Mode: stack.Client, Link: a, ClientIP: ip4(r.opts.ClientIP), ClientIPs: 1,
		PortMin: r.opts.PortMin, PortMax: r.opts.PortMin, ServerIP: server, Program: &rp.prog})
	if err != nil {
		return refused("scenario", "%v", err)
	}
	return nil
}

// MaxUsers returns the most users the runtime holds (Options.MaxUsers or
// the tuple space): the worker's Options.MaxUsers.
func (r *Runtime) MaxUsers() int64 { return r.opts.MaxUsers }

// hostOf returns the effective host of class i: the master's, the
// class's, the scenario's.
func (r *Runtime) hostOf(i int, master string) string {
	switch {
	case master != "":
		return master
	case r.plan.classes[i].host != "":
		return r.plan.classes[i].host
	}
	return r.sc.Host
}

// row is one stats row: a Locust entry (method, name) for requests with
// the same URL and checks, so that failure texts follow from the row.
type row struct {
	method, name, url string
	accept            []uint16
}

// program builds the stack Program for srv and its stats rows, refusing
// requests larger than one segment.
func (r *Runtime) program(srv *server) (*rowsProgram, error) {
	p := r.plan
	out := &rowsProgram{}
	type key struct{ method, name, url, accept string }
	byKey := map[key]int{}
	for i := range p.requests {
		pr := &p.requests[i]
		raw := p.raw(srv, pr)
		if len(raw) > r.mss {
			return nil, refused(pr.where, "the request is %d bytes; the data plane sends a request as one segment of at most %d bytes (MSS)", len(raw), r.mss)
		}
		k := key{pr.method, pr.name, srv.url(pr), fmt.Sprint(pr.accept)}
		st, ok := byKey[k]
		if !ok {
			st = len(out.rows)
			byKey[k] = st
			out.rows = append(out.rows, row{method: pr.method, name: pr.name, url: k.url, accept: pr.accept})
		}
		out.prog.Requests = append(out.prog.Requests, stack.ProgramRequest{Raw: raw, Stat: st, Accept: pr.accept})
	}
	if len(out.rows) > stack.MaxStatsRows {
		return nil, refused("scenario", "%d distinct request rows; the data plane keeps at most %d", len(out.rows), stack.MaxStatsRows)
	}
	for _, c := range p.classes {
		pc := stack.ProgramClass{OnStart: c.onStart, Sequential: c.sequential, Wait: waitOf(c.wait)}
		for _, t := range c.tasks {
			w := t.weight
			if c.sequential {
				w = 1
			}
			pc.Tasks = append(pc.Tasks, stack.ProgramTask{Weight: w, Requests: t.requests})
		}
		out.prog.Classes = append(out.prog.Classes, pc)
	}
	return out, nil
}

type rowsProgram struct {
	prog stack.Program
	rows []row
}

func waitOf(w worker.WaitSpec) stack.Wait {
	switch w.Kind {
	case worker.WaitConstant:
		return stack.Wait{Kind: stack.WaitConstant, Min: w.Min}
	case worker.WaitBetween:
		lo, hi := min(w.Min, w.Max), max(w.Min, w.Max)
		return stack.Wait{Kind: stack.WaitBetween, Min: lo, Max: hi}
	case worker.WaitConstantPacing:
		return stack.Wait{Kind: stack.WaitConstantPacing, Min: w.Min}
	case worker.WaitConstantThroughput:
		return stack.Wait{Kind: stack.WaitConstantThroughput, PerSecond: w.PerSecond}
	}
	return stack.Wait{Kind: stack.WaitConstant}
}

// Start implements worker.Runtime.
func (r *Runtime) Start(env worker.RuntimeEnv) error {
	if env.Recorder == nil {
		return fmt.Errorf("users: no stats recorder: %w", ErrOption)
	}
	r.env = env
	if env.Logger != nil && r.opts.workerLogger {
		r.log.Store(env.Logger.With("runtime", "dataplane"))
	}
	return nil
}

// build (re)builds the stacks and the engine for srv. Precondition: r.mu
// held and no engine running.
func (r *Runtime) build(srv server) error {
	rp, err := r.program(&srv)
	if err != nil {
		return err
	}
	start := time.Now()
	ecores := make([]engine.Core, r.opts.Cores)
	r.cores = make([]*core, r.opts.Cores)
	for k := range ecores {
		cfg := stack.Config{
			Mode:      stack.Client,
			Link:      r.links[k],
			ClientIP:  ip4(r.opts.ClientIP),
			ClientIPs: r.opts.ClientIPs,
			PortMin:   r.split[k][0], PortMax: r.split[k][1],
			ServerIP:    ip4(srv.addr.Addr()),
			ServerPort:  srv.addr.Port(),
			IdleTimeout: r.plan.timeout,
			Program:     &rp.prog,
		}
		if r.opts.Gateway.IsValid() {
			cfg.Gateway = ip4(r.opts.Gateway)
		}
		if inRange(cfg.ServerIP, cfg.ClientIP, cfg.ClientIPs) {
			return refused("host", "server %v inside the client range %v + %d", srv.addr.Addr(), r.opts.ClientIP, r.opts.ClientIPs)
		}
		s, err := stack.New(cfg)
		if err != nil {
			return fmt.Errorf("users: core %d: %w", k, err)
		}
		ecores[k] = engine.Core{Stack: s}
		if r.wait != nil {
			ecores[k].Waiter = r.wait[k]
		}
		r.cores[k] = newCore(r, k, len(rp.prog.Classes), len(rp.rows))
	}
	r.rows = rp.rows
	r.srv = srv
	r.log.Load().Info("data plane stacks built", "server", srv.addr, "cores", r.opts.Cores,
		"records", r.opts.tupleSpace(), "took", time.Since(start).Round(time.Millisecond))
	eng, err := engine.New(engine.Config{
		Cores: ecores, LockThreads: r.opts.LockThreads,
		Tick: r.tick, Every: r.every,
	})
	if err != nil {
		return fmt.Errorf("users: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	r.eng, r.cancel, r.done = eng, cancel, done
	r.engPtr.Store(eng)
	cores := r.cores
	r.coresPtr.Store(&cores)
	return nil
}

// stopEngine ends the engine (its last Every flushes the stats).
// Precondition: r.mu held.
func (r *Runtime) stopEngine() {
	if r.eng == nil {
		return
	}
	r.cancel()
	if err := <-r.done; err != nil {
		r.log.Load().Warn("the data plane engine ended with an error", "err", err)
	}
	r.eng = nil
	r.engPtr.Store(nil)
}

// Spawn implements worker.Runtime: the stacks are built when the first
// spawn fixes the host (rebuilt if a later spawn changes it, after its
// users stopped); each class's count is spread over the cores, and each
// core's Tick launches toward its share at Options.ConnectRate and stops
// its surplus with StopClass. A Stop, a Close or another spawn while it
// waits ends it at once with an error (ErrOption) naming the users reached.
func (r *Runtime) Spawn(ctx context.Context, s worker.RuntimeSpawn) error {
	r.beginSpawn()
	defer r.endSpawn()
	want, gen, err := r.startSpawn(ctx, s)
	if err != nil || want == nil {
		return err
	}
	// Wait (without r.mu) until each class has exactly its users:
	// launched (open or opening), the surplus stopping.
	cores := *r.coresPtr.Load()
	eng := r.engPtr.Load()
	t := time.NewTicker(DefaultPoll)
	defer t.Stop()
	var last int64 = -1
	progress := time.Now()
	for {
		var have, total, dist int64
		for cl, n := range want {
			u := classUsers(cores, cl)
			have += u
			total += n
			dist += max(u-n, n-u)
		}
		if dist == 0 {
			return nil
		}
		if r.targets.Load() != gen {
			// Stop or a later spawn replaced these targets.
			return fmt.Errorf("users: %d of %d users when a Stop or another spawn replaced the spawn's targets: %w",
				have, total, ErrOption)
		}
		if cur := r.engPtr.Load(); cur == nil || cur != eng {
			// Close (or another spawn's rebuild) stopped the engine
			// these counts come from: they will not move again.
			return fmt.Errorf("users: %d of %d users when the engine stopped (Close) during the spawn: %w",
				have, total, ErrOption)
		}
		if dist != last {
			last, progress = dist, time.Now()
		} else if time.Since(progress) > spawnStall {
			return r.stalled(ctx, have, total)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// beginSpawn counts a Spawn call running.
func (r *Runtime) beginSpawn() {
	r.spawnMu.Lock()
	defer r.spawnMu.Unlock()
	if r.spawns == 0 {
		r.spawnIdle = make(chan struct{})
	}
	r.spawns++
}

// endSpawn counts a Spawn call ended.
func (r *Runtime) endSpawn() {
	r.spawnMu.Lock()
	defer r.spawnMu.Unlock()
	r.spawns--
	if r.spawns == 0 {
		close(r.spawnIdle)
	}
}

// awaitSpawns waits until no Spawn call runs, or ctx is done.
func (r *Runtime) awaitSpawns(ctx context.Context) error {
	r.spawnMu.Lock()
	idle := r.spawnIdle
	busy := r.spawns > 0
	r.spawnMu.Unlock()
	if !busy {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stalled explains a spawn that launched no user for SpawnStall.
func (r *Runtime) stalled(ctx context.Context, have, total int64) error {
	var unresolved atomic.Int64
	if eng := r.engPtr.Load(); eng != nil {
		_ = eng.Do(ctx, func(_ int, s *stack.Stack, _ int64) {
			if !s.Resolved() {
				unresolved.Add(1)
			}
		})
	}
	hop := "the server " + r.Server().Addr().String()
	if r.opts.Gateway.IsValid() {
		hop = "the gateway " + r.opts.Gateway.String()
	}
	if unresolved.Load() > 0 {
		return fmt.Errorf("users: %d of %d users after %v without progress: %s does not answer ARP, so no user can connect (the cores keep trying)",
			have, total, spawnStall, hop)
	}
	return fmt.Errorf("users: %d of %d users after %v without progress: every connection record is taken (users reconnecting hold theirs)",
		have, total, spawnStall)
}

// spawnStall is SpawnStall; tests shorten it.
var spawnStall = SpawnStall

// startSpawn (re)builds the engine if the host needs it and hands the
// cores their targets, which it returns (nil: nothing to wait for).
func (r *Runtime) startSpawn(ctx context.Context, s worker.RuntimeSpawn) ([]int64, uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, 0, fmt.Errorf("users: spawn after Close: %w", ErrOption)
	}
	host, any := "", false
	want := make([]int64, len(r.plan.classes))
	for _, c := range s.Classes {
		if c.Class < 0 || c.Class >= len(want) {
			return nil, 0, fmt.Errorf("users: spawn of class index %d; the scenario has %d: %w", c.Class, len(want), ErrOption)
		}
		if c.Users <= 0 {
			continue
		}
		want[c.Class] += c.Users
		h := r.hostOf(c.Class, s.Host)
		if any && h != host {
			return nil, 0, refused("spawn", "classes with different hosts (%q, %q): the data plane serves one server address", host, h)
		}
		host, any = h, true
	}
	var total int64
	for _, n := range want {
		total += n
	}
	if total > r.opts.MaxUsers {
		// The worker clamps to MaxUsers; a caller that does not would
		// wait SpawnStall for records that do not exist.
		return nil, 0, refused("spawn", "%d users; this runtime holds at most %d (MaxUsers, at most client IPs × ports)", total, r.opts.MaxUsers)
	}
	r.namesMu.Lock()
	r.names = append(r.names[:0], s.Classes...)
	r.namesMu.Unlock()
	if any {
		srv, err := parseHost("spawn host", host)
		if err != nil {
			return nil, 0, err
		}
		if r.eng == nil || srv != r.srv {
			if r.eng != nil {
				r.log.Load().Info("the host changed: stopping the users and rebuilding the stacks", "from", r.srv.origin, "to", srv.origin)
				if err := r.setTargets(ctx, nil); err != nil {
					return nil, 0, err
				}
				r.drain(ctx, s.Grace)
				r.stopEngine()
			}
			if err := r.build(srv); err != nil {
				return nil, 0, err
			}
		}
	}
	if r.eng == nil {
		return nil, 0, nil // no users wanted, none running
	}
	if err := r.setTargets(ctx, want); err != nil {
		return nil, 0, err
	}
	return want, r.targets.Load(), nil
}

// setTargets hands each core its share of want (nil: zero for every
// class). Precondition: r.mu held.
func (r *Runtime) setTargets(ctx context.Context, want []int64) error {
	r.targets.Add(1)
	shares := shareOut(want, len(r.cores), len(r.plan.classes))
	err := r.eng.Do(ctx, func(k int, _ *stack.Stack, _ int64) {
		copy(r.cores[k].target, shares[k])
	})
	if err != nil {
		return fmt.Errorf("users: set the cores' targets: %w", err)
	}
	return nil
}

// shareOut spreads each class's count of want (nil: all zero) over n
// cores: equal shares, the remainders on consecutive cores, each class's
// starting where the previous class's ended, so that no core gets more than
// one user above an equal split of the total.
func shareOut(want []int64, n, classes int) [][]int {
	shares := make([][]int, n)
	for k := range shares {
		shares[k] = make([]int, classes)
	}
	nn := int64(n)
	offset := int64(0)
	for cl, w := range want {
		for k := range nn {
			share := w / nn
			if (k-offset+nn)%nn < w%nn {
				share++
			}
			shares[k][cl] = int(share)
		}
		offset = (offset + w%nn) % nn
	}
	return shares
}

// classUsers returns class cl's users over the cores.
func classUsers(cores []*core, cl int) int64 {
	var n int64
	for _, c := range cores {
		n += c.users[cl].Load()
	}
	return n
}

// drain waits until the cores hold no connection, up to grace, then
// flushes the stats. Precondition: r.mu held, engine running.
func (r *Runtime) drain(ctx context.Context, grace time.Duration) {
	deadline := time.Now().Add(grace)
	t := time.NewTicker(DefaultPoll)
	defer t.Stop()
wait:
	for {
		var open atomic.Uint64
		if err := r.eng.Do(ctx, func(_ int, s *stack.Stack, _ int64) {
			c := s.Counters()
			open.Add(c.SocketsCurrent)
		}); err != nil || open.Load() == 0 {
			break
		}
		if !time.Now().Before(deadline) {
			r.log.Load().Info("connections still open after the stop grace; they finish in the background",
				"open", open.Load(), "grace", grace)
			break
		}
		select {
		case <-ctx.Done():
			break wait
		case <-t.C:
		}
	}
	r.flush(ctx)
}

// flush records every core's stats rows now.
func (r *Runtime) flush(ctx context.Context) {
	if r.eng == nil {
		return
	}
	_ = r.eng.Do(ctx, func(k int, s *stack.Stack, now int64) { r.cores[k].record(s) })
}

// Stop implements worker.Runtime: every user stops (a user awaiting a
// response finishes it, bounded by the HTTP timeout), the cores' open
// connections are awaited up to grace, and the stats are flushed into the
// recorder so that the worker's next report holds every finished request.
func (r *Runtime) Stop(grace time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.namesMu.Lock()
	r.names = r.names[:0]
	r.namesMu.Unlock()
	if r.eng == nil {
		return
	}
	ctx := context.Background()
	if err := r.setTargets(ctx, nil); err != nil {
		r.log.Load().Warn("stop", "err", err)
		return
	}
	r.drain(ctx, grace)
}

// Users implements worker.Runtime: the users per class name of the last
// spawn. Names that share a scenario class (a single-class scenario
// serving several names) get its users in spawn order up to their
// targets, the last of them any surplus.
func (r *Runtime) Users() map[string]int64 {
	r.namesMu.Lock()
	names := slices.Clone(r.names)
	r.namesMu.Unlock()
	out := make(map[string]int64, len(names))
	var cores []*core
	if p := r.coresPtr.Load(); p != nil {
		cores = *p
	}
	left := make([]int64, len(r.plan.classes))
	if len(cores) > 0 {
		for cl := range left {
			left[cl] = classUsers(cores, cl)
		}
	}
	lastOf := make(map[int]int, len(names)) // class -> its last name's index
	for i, c := range names {
		lastOf[c.Class] = i
	}
	for i, c := range names {
		n := min(left[c.Class], max(c.Users, 0))
		if lastOf[c.Class] == i {
			n = left[c.Class]
		}
		out[c.Name] += n
		left[c.Class] -= n
	}
	return out
}

// Connections implements worker.Runtime: the engine's summed counters (at
// most a second old) in the heartbeat's shape. Open and Established are
// both the open records (the stack does not tell connecting ones apart);
// Connects counts opened connections, Reconnects the users' new
// connections after a broken one; Closes: "error" the failed ones,
// "client" the rest; ConnectErrors and Errors the failures by kind.
func (r *Runtime) Connections() *protocol.ConnCounters {
	eng := r.engPtr.Load()
	cc := &protocol.ConnCounters{}
	if eng != nil {
		c, _ := eng.Counters()
		cc.Open = int64(c.SocketsCurrent)
		cc.Established = int64(c.SocketsCurrent)
		cc.Connects = int64(c.SocketsOpened)
		cc.Reconnects = int64(c.Reconnects)
		if c.SocketsClosed > 0 {
			cc.Closes = map[string]int64{}
			if c.SocketsFailed > 0 {
				cc.Closes["error"] = int64(c.SocketsFailed)
			}
			if c.SocketsClosed > c.SocketsFailed {
				cc.Closes["client"] = int64(c.SocketsClosed - c.SocketsFailed)
			}
		}
	}
	r.fail.into(cc)
	return cc
}

// Second-round failure kinds (worker.SecondRoundResult.Errors).
const (
	roundLost    = "connection lost before the round's request (connect failed, closed by the peer, or stopped)"
	roundFailed  = "request failed or its status not accepted"
	roundNoTime  = "no answer in time"
	roundSpawned = "the spawn did not end within the round's timeout"
)

// SecondRound implements worker.Runtime: every user sends its last request
// again on the connection it holds (the stacks' SecondRound). A round that
// arrives while a spawn runs (or the stacks are being built) first waits
// for the spawn to end, bounded by ctx, so that it takes in every user the
// spawn asked for. Users waiting between tasks send at once, busy and
// connecting ones when their task ends; it waits (bounded by ctx) until
// each user is counted: Reused (answered on its connection, accepted) or
// Failed, by kind in Errors (lost before the request could go, the request
// failed or not accepted, no answer in time). Reconnected is always 0: a
// second-round request never opens a connection (a user without one is
// lost).
func (r *Runtime) SecondRound(ctx context.Context) (worker.SecondRoundResult, error) {
	res := worker.SecondRoundResult{Errors: map[string]int64{}}
	if err := r.awaitSpawns(ctx); err != nil {
		var n int64
		for _, u := range r.Users() {
			n += u
		}
		res.Users, res.Failed = n, n
		if n > 0 {
			res.Errors[roundSpawned] = n
		}
		return res, fmt.Errorf("users: second round: waiting for the spawn: %w", err)
	}
	eng := r.engPtr.Load()
	if eng == nil {
		return res, nil
	}
	var taken, ok0, failed0, lost0 atomic.Uint64
	if err := eng.Do(ctx, func(_ int, s *stack.Stack, now int64) {
		c := s.Counters()
		ok0.Add(c.SecondRoundOK)
		failed0.Add(c.SecondRoundFailed)
		lost0.Add(c.SecondRoundLost)
		taken.Add(uint64(s.SecondRound(now)))
	}); err != nil {
		return res, fmt.Errorf("users: second round: %w", err)
	}
	res.Users = int64(taken.Load())
	t := time.NewTicker(DefaultPoll)
	defer t.Stop()
	var lost int64
	for {
		var ok, failed, lostN atomic.Uint64
		err := eng.Do(ctx, func(_ int, s *stack.Stack, _ int64) {
			c := s.Counters()
			ok.Add(c.SecondRoundOK)
			failed.Add(c.SecondRoundFailed)
			lostN.Add(c.SecondRoundLost)
		})
		if err == nil {
			res.Reused = int64(ok.Load() - ok0.Load())
			res.Failed = int64(failed.Load() - failed0.Load())
			lost = int64(lostN.Load() - lost0.Load())
		}
		if err == nil && res.Reused+res.Failed >= res.Users {
			break
		}
		if err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-t.C:
				continue
			}
		}
		roundErrors(&res, lost)
		missing := res.Users - res.Reused - res.Failed
		res.Failed += missing
		res.Errors[roundNoTime] += missing
		return res, fmt.Errorf("users: second round: %w", err)
	}
	roundErrors(&res, lost)
	return res, nil
}

// roundErrors fills res.Errors from its Failed, lost of them before their
// request went.
func roundErrors(res *worker.SecondRoundResult, lost int64) {
	if lost > 0 {
		res.Errors[roundLost] = lost
	}
	if n := res.Failed - lost; n > 0 {
		res.Errors[roundFailed] = n
	}
}

// Close implements worker.Runtime: it stops the engine (its last Every
// records the stats) and closes the links.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.stopEngine()
	return r.closeLinks()
}

func (r *Runtime) closeLinks() error {
	var errs []error
	for _, l := range r.links {
		if c, ok := l.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Server returns the server address of the stacks (invalid before the
// first spawn).
func (r *Runtime) Server() netip.AddrPort {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.srv.addr
}
