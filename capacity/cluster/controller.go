package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
)

// Errors of the Controller, wrapped with details.
var (
	// ErrOptions: options the controller cannot honour.
	ErrOptions = errors.New("cluster: invalid options")
	// ErrWait: the expected workers were not all ready in time.
	ErrWait = errors.New("cluster: workers not ready")
	// ErrWorker: a worker could not run a trial at all (its error).
	ErrWorker = errors.New("cluster: worker error")
)

// Defaults of Options' zero values.
const (
	DefaultWaitTimeout      = time.Minute
	DefaultHeartbeatTimeout = 10 * time.Second
	// echoInterval: the controller echoes a worker's heartbeat at most
	// this often, so a worker notices a vanished controller (its 60 s
	// master heartbeat timeout).
	echoInterval = 5 * time.Second
	// checkInterval is how often waits look at liveness and deadlines.
	checkInterval = 100 * time.Millisecond
)

// Options are a Controller's.
type Options struct {
	// Bind is the ROUTER endpoint ("tcp://*:5557", "tcp://127.0.0.1:0").
	Bind string
	// Workers is how many workers the trials run on (>= 1).
	Workers int
	// Test is the search's test, named in hello so that a worker whose
	// runtime does not run it refuses at once.
	Test string
	// WaitTimeout bounds Wait; if zero, DefaultWaitTimeout.
	WaitTimeout time.Duration
	// HeartbeatTimeout: a worker silent this long is lost; if zero,
	// DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration
	// Plain is the cluster secret's PLAIN authentication (nil: NULL).
	Plain *zmtp.PlainAuth
	// Logger gets the controller's log lines; if nil, discarded.
	Logger *slog.Logger
}

type node struct {
	id      string
	index   int64
	name    string // "worker N (id)" once picked
	ready   bool
	runtime string
	refused string
	gone    string // why the worker is lost
	seen    time.Time
	echoed  time.Time
	readyAt int // order of readiness
}

type pending struct {
	id      int64
	test    string
	workers []*node
	held    map[string]bool
	sentGo  bool
	results map[string]Result
}

// Controller is the bench search's side of a cluster: it waits for the
// workers and runs each trial across them.
type Controller struct {
	o   Options
	r   *zmtp.Router
	log *slog.Logger

	mu      sync.Mutex
	nodes   map[string]*node
	picked  []*node
	seq     int64
	nodeSeq int64
	readies int
	trial   *pending
	changed chan struct{}
	// malformed: the rate limit of the malformed-message warning.
	malformed malformedLog

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Listen binds the ROUTER port and starts serving workers.
func Listen(o Options) (*Controller, error) {
	if o.Workers < 1 {
		return nil, fmt.Errorf("%w: %d workers expected; at least 1", ErrOptions, o.Workers)
	}
	if o.WaitTimeout < 0 || o.HeartbeatTimeout < 0 {
		return nil, fmt.Errorf("%w: negative timeout", ErrOptions)
	}
	if o.WaitTimeout == 0 {
		o.WaitTimeout = DefaultWaitTimeout
	}
	if o.HeartbeatTimeout == 0 {
		o.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r, err := zmtp.Listen(o.Bind, zmtp.Options{Plain: o.Plain, MaxFrameSize: MaxMessage})
	if err != nil {
		return nil, fmt.Errorf("cluster: bind %s: %w", o.Bind, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Controller{o: o, r: r, log: log, nodes: map[string]*node{}, changed: make(chan struct{}), cancel: cancel}
	c.wg.Add(2)
	go func() { defer c.wg.Done(); c.recvLoop(ctx) }()
	go func() { defer c.wg.Done(); c.eventLoop(ctx) }()
	return c, nil
}

// Addr is the bound address.
func (c *Controller) Addr() net.Addr { return c.r.Addr() }

// notify wakes the waiters; c.mu held.
func (c *Controller) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Controller) send(id, typ string, data any) error {
	b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: "cicada-bench"})
	if err != nil {
		return fmt.Errorf("cluster: encode %s: %w", typ, err)
	}
	if err := c.r.Send(id, b); err != nil {
		return fmt.Errorf("cluster: send %s: %w", typ, err)
	}
	return nil
}

func (c *Controller) sendCustom(id, typ string, data map[string]any) error {
	return c.send(id, typ, &protocol.Custom{Data: data})
}

func (c *Controller) eventLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-c.r.Events():
			if !ok {
				return
			}
			if ev.Kind != zmtp.Disconnected {
				continue
			}
			c.mu.Lock()
			if n := c.nodes[ev.Identity]; n != nil && n.gone == "" {
				why := "disconnected"
				if ev.Err != nil && !errors.Is(ev.Err, io.EOF) {
					why += " (" + ev.Err.Error() + ")"
				}
				c.lose(n, why)
			}
			c.mu.Unlock()
		}
	}
}

// lose marks n lost; c.mu held.
func (c *Controller) lose(n *node, why string) {
	why = printable(why) // it may quote a worker's message
	n.gone = why
	if n.name != "" {
		c.log.Warn(n.name + " lost: " + why)
	}
	c.notify()
}

func (c *Controller) recvLoop(ctx context.Context) {
	for {
		id, frames, err := c.r.Recv(ctx)
		if err != nil {
			return
		}
		if len(frames) != 1 {
			continue
		}
		msg, err := protocol.Decode(frames[0])
		c.mu.Lock()
		if err != nil {
			if n := c.nodes[id]; n == nil || n.refused == "" {
				c.warnMalformed(id, err)
			}
			c.mu.Unlock()
			continue
		}
		c.handle(id, msg)
		c.mu.Unlock()
	}
}

// handle processes one message; c.mu held.
func (c *Controller) handle(id string, msg protocol.Message) {
	now := time.Now()
	n := c.nodes[id]
	if msg.Type == protocol.TypeClientReady {
		cr, _ := msg.Data.(*protocol.ClientReady)
		if n == nil || n.gone != "" {
			if n == nil && len(c.nodes) >= maxNodes && !c.evictGone() {
				return // a flood of live identities: bounded memory
			}
			c.nodeSeq++
			n = &node{id: id, index: c.nodeSeq - 1}
			c.nodes[id] = n
		}
		n.seen = now
		_ = c.send(id, protocol.TypeAck, &protocol.Ack{Index: n.index, Cicada: protocol.CicadaVersion})
		switch {
		case cr == nil:
		case !cr.VersionSkipCheck:
			v := ""
			if cr.Version != "" {
				v = fmt.Sprintf(" (version %q)", cr.Version)
			}
			n.refused = "a Python Locust worker" + v + " cannot run cicada bench trials; start cicada workers (cicada --worker --master-host ...)"
			c.log.Error("worker " + printable(id) + " refused: " + n.refused)
			// quit goes with its first heartbeat: Locust 2.12.1 ignores a
			// quit that arrives before its main loop runs.
		case n.name != "":
			// A picked worker that reconnected lost its trial state.
			c.lose(n, "it registered again (restarted or reconnected)")
		default:
			_ = c.sendCustom(id, TypeHello, EncodeHello(c.o.Test))
		}
		c.notify()
		return
	}
	if n == nil {
		return // unknown identity: a worker that never registered here
	}
	n.seen = now
	switch msg.Type {
	case protocol.TypeHeartbeat:
		if n.refused != "" {
			if now.Sub(n.echoed) >= echoInterval { // told to quit, at most every 5 s
				n.echoed = now
				_ = c.send(id, protocol.TypeQuit, nil)
			}
			return
		}
		if now.Sub(n.echoed) >= echoInterval {
			n.echoed = now
			_ = c.send(id, protocol.TypeHeartbeat, &protocol.MasterHeartbeat{})
		}
	case protocol.TypeQuit, protocol.TypeClientStopped:
		if n.gone == "" {
			c.lose(n, "it sent "+msg.Type)
		}
	case TypeReady:
		cu, _ := msg.Data.(*protocol.Custom)
		var r Ready
		var err error
		if cu == nil {
			err = fmt.Errorf("%w: %s: no data", ErrMessage, TypeReady)
		} else {
			r, err = DecodeReady(cu.Data)
		}
		switch {
		case err != nil:
			n.refused = err.Error()
		case r.Version != Version:
			n.refused = fmt.Sprintf("bench exchange version %d, this controller speaks %d", r.Version, Version)
		case r.Refuse != "":
			n.refused = r.Refuse
		}
		if n.refused != "" {
			c.log.Error("worker " + printable(id) + " refused: " + n.refused)
			_ = c.send(id, protocol.TypeQuit, nil)
			if n.name != "" && n.gone == "" { // picked: its trials cannot be trusted
				c.lose(n, "it refused the bench exchange: "+n.refused)
			}
		} else if !n.ready && n.name == "" {
			n.ready, n.runtime = true, r.Runtime
			c.readies++
			n.readyAt = c.readies
			if c.picked != nil {
				c.log.Info(fmt.Sprintf("worker %s ready (%s), but the search runs on the %d workers it started with: not used", printable(id), r.Runtime, len(c.picked)))
			} else {
				c.log.Info(fmt.Sprintf("worker %s ready (%s)", printable(id), r.Runtime))
			}
		}
		c.notify()
	case TypeHeld, TypeResult:
		c.onTrialMessage(n, msg)
	}
}

func (c *Controller) onTrialMessage(n *node, msg protocol.Message) {
	p := c.trial
	cu, _ := msg.Data.(*protocol.Custom)
	if p == nil || cu == nil || !slices.Contains(p.workers, n) {
		return
	}
	if msg.Type == TypeHeld {
		id, _, err := DecodeID(TypeHeld, cu.Data)
		if err == nil && id == p.id {
			p.held[n.id] = true
			c.notify()
		}
		return
	}
	r, err := DecodeResult(cu.Data)
	if err != nil {
		c.lose(n, "its result did not decode: "+err.Error())
		return
	}
	if err := consistent(p.test, r.Trial); err != nil && r.ID == p.id {
		c.lose(n, "its result is inconsistent: "+err.Error())
		return
	}
	if r.ID == p.id {
		p.results[n.id] = r
		c.notify()
	}
}

// Wait waits, at most Options.WaitTimeout, until Options.Workers workers
// answered hello, and picks them (the first ready) for every trial. Python
// workers and workers that refuse are sent quit and not counted.
func (c *Controller) Wait(ctx context.Context) error {
	deadline := time.NewTimer(c.o.WaitTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	last := -1
	for {
		c.mu.Lock()
		var ready []*node
		for _, n := range c.nodes {
			if n.ready && n.gone == "" && n.refused == "" {
				ready = append(ready, n)
			}
		}
		if len(ready) >= c.o.Workers {
			slices.SortFunc(ready, func(a, b *node) int { return a.readyAt - b.readyAt })
			c.picked = ready[:c.o.Workers]
			for i, n := range c.picked {
				n.name = fmt.Sprintf("worker %d (%s)", i+1, printable(n.id))
			}
			c.mu.Unlock()
			c.log.Info(fmt.Sprintf("All %d workers ready: starting the search", c.o.Workers))
			return nil
		}
		changed := c.changed
		if len(ready) != last {
			last = len(ready)
			c.log.Info(fmt.Sprintf("Waiting for workers to be ready, %d of %d ready", len(ready), c.o.Workers))
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: waiting for workers: %w", ctx.Err())
		case <-deadline.C:
			return c.waitError(len(ready))
		case <-tick.C:
		case <-changed:
		}
	}
}

func (c *Controller) waitError(ready int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var refused, silent []string
	for _, n := range c.nodes {
		switch {
		case n.refused != "":
			refused = append(refused, printable(n.id)+": "+n.refused)
		case !n.ready && n.gone == "":
			silent = append(silent, printable(n.id))
		}
	}
	slices.Sort(refused)
	slices.Sort(silent)
	msg := fmt.Sprintf("%d of %d expected workers ready after %v", ready, c.o.Workers, c.o.WaitTimeout)
	if len(refused) > 0 {
		msg += "; refused: " + strings.Join(refused, "; ")
	}
	if len(silent) > 0 {
		msg += "; connected without answering the bench hello (not a cicada worker with bench support): " + strings.Join(silent, ", ")
	}
	if n := c.r.AuthRefusals(); n > 0 {
		msg += fmt.Sprintf("; %d connections refused by the cluster secret (ZMTP PLAIN: a missing or different secret)", n)
	}
	return fmt.Errorf("%w: %s", ErrWait, msg)
}

// Workers returns the picked workers' names and runtimes, after Wait.
func (c *Controller) Workers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.picked))
	for i, n := range c.picked {
		out[i] = n.name + ", " + n.runtime
	}
	return out
}

// Deadline is the longest a trial of test at load (the whole cluster's)
// with o may take before its missing results make it invalid: the trial's
// own bounds (opening connections Window at a time, each within the
// connect timeout and timeout; the trial time; the hold) and 30 s of slack.
func Deadline(test string, load float64, o ProbeOptions, workers int) time.Duration {
	// In float64 nanoseconds, clamped: durations near the int64 limit
	// (a hostile or absurd option) must not wrap to a deadline in the past.
	ns := func(d time.Duration) float64 { return float64(d) }
	base := ns(o.Duration) + 2*ns(o.Timeout) + ns(o.ConnectTimeout) + ns(30*time.Second)
	window := float64(max(o.Window, 1))
	perWorker := math.Ceil(load / float64(max(workers, 1)))
	rounds := func(n float64) float64 {
		r := math.Ceil(n / window)
		if r > 1e6 {
			r = 1e6
		}
		per := ns(o.ConnectTimeout) + 2*ns(o.Timeout)
		if o.TLS != nil { // the handshake, bounded by ConnectTimeout too
			per += ns(o.ConnectTimeout)
		}
		return r * per
	}
	d := base
	switch test {
	case "concurrent":
		d += ns(o.Hold) + 2*rounds(perWorker)
	case "teardown":
		d += rounds(perWorker * o.Duration.Seconds())
	}
	if !(d < math.MaxInt64) { // NaN too
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}

// Trial runs one trial of test at load across the picked workers: each
// gets its share (Split; tps and throughput also their share of
// o.Conns), the results are merged (Merge). A lost worker makes the trial
// invalid (Trial.GeneratorLimit "worker N (id) lost: ..."), as it does
// every later one. An error: ctx ended, or a worker could not run the
// trial (ErrWorker; ErrWorkerOptions when a worker cannot honour its
// options).
func (c *Controller) Trial(ctx context.Context, test string, load float64, integer bool, o ProbeOptions) (capacity.Trial, error) {
	c.mu.Lock()
	if len(c.picked) == 0 {
		c.mu.Unlock()
		return capacity.Trial{}, fmt.Errorf("%w: Trial before Wait", ErrOptions)
	}
	if t, lost := c.lostTrial(c.picked, ""); lost {
		c.mu.Unlock()
		return t, nil
	}
	shares := Split(load, len(c.picked), integer)
	conns := SplitCount(o.Conns, len(c.picked))
	c.seq++
	p := &pending{id: c.seq, test: test, held: map[string]bool{}, results: map[string]Result{}}
	type out struct {
		n    *node
		spec TrialSpec
	}
	var outs []out
	for i, n := range c.picked {
		if shares[i] <= 0 {
			continue
		}
		po := o
		if test == "tps" || test == "throughput" {
			if conns[i] < 1 {
				c.mu.Unlock()
				return capacity.Trial{}, fmt.Errorf("%w: %d keep-alive connections over %d workers: at least one each", ErrOptions, o.Conns, len(c.picked))
			}
			po.Conns = conns[i]
		}
		p.workers = append(p.workers, n)
		outs = append(outs, out{n, TrialSpec{ID: p.id, Test: test, Load: shares[i], Probe: po}})
	}
	c.trial = p
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.trial = nil
		c.mu.Unlock()
	}()
	for _, x := range outs {
		if err := c.sendCustom(x.n.id, TypeTrial, EncodeTrial(x.spec)); err != nil {
			c.mu.Lock()
			if x.n.gone == "" {
				c.lose(x.n, err.Error())
			}
			c.mu.Unlock()
		}
	}
	deadline := time.Now().Add(Deadline(test, load, o, len(c.picked)))
	tick := time.NewTicker(checkInterval)
	defer tick.Stop()
	for {
		c.mu.Lock()
		now := time.Now()
		for _, n := range p.workers {
			if n.gone == "" && now.Sub(n.seen) > c.o.HeartbeatTimeout {
				c.lose(n, fmt.Sprintf("no message for %v (heartbeat timeout)", now.Sub(n.seen).Round(time.Millisecond)))
			}
			if _, done := p.results[n.id]; n.gone == "" && !done && now.After(deadline) {
				c.lose(n, fmt.Sprintf("no result within the trial's deadline (%v)", Deadline(test, load, o, len(c.picked))))
			}
		}
		if t, lost := c.lostTrial(p.workers, " during the trial"); lost {
			c.abort(p)
			c.mu.Unlock()
			return t, nil
		}
		if test == "concurrent" && !p.sentGo && p.allHeld() {
			p.sentGo = true
			for _, n := range p.workers {
				_ = c.sendCustom(n.id, TypeGo, EncodeID(p.id, false))
			}
		}
		if len(p.results) == len(p.workers) {
			parts := make([]Part, 0, len(p.workers))
			var errs []string
			werr := ErrWorker
			for _, n := range p.workers {
				r := p.results[n.id]
				if r.Error != "" {
					errs = append(errs, n.name+": "+r.Error)
				}
				if r.Options {
					werr = ErrWorkerOptions
				}
				parts = append(parts, Part{Worker: n.name, Result: r})
			}
			c.mu.Unlock()
			if len(errs) > 0 {
				return capacity.Trial{}, fmt.Errorf("%w: %s", werr, strings.Join(errs, "; "))
			}
			return Merge(parts)
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			c.mu.Lock()
			c.abort(p)
			c.mu.Unlock()
			return capacity.Trial{}, fmt.Errorf("cluster: trial stopped: %w", ctx.Err())
		case <-changed:
		case <-tick.C:
		}
	}
}

// allHeld: every worker holds its connections, or has ended its trial
// without reaching the barrier (a generator limit found before opening).
func (p *pending) allHeld() bool {
	for _, n := range p.workers {
		if _, done := p.results[n.id]; !p.held[n.id] && !done {
			return false
		}
	}
	return true
}

// lostTrial is the invalid trial of the first lost worker among ws; c.mu
// held.
func (c *Controller) lostTrial(ws []*node, when string) (capacity.Trial, bool) {
	for _, n := range ws {
		if n.gone != "" {
			return capacity.Trial{GeneratorLimit: n.name + " lost" + when + ": " + n.gone}, true
		}
	}
	return capacity.Trial{}, false
}

// abort tells p's live workers to give the trial up; c.mu held.
func (c *Controller) abort(p *pending) {
	for _, n := range p.workers {
		if n.gone == "" {
			_ = c.sendCustom(n.id, TypeAbort, EncodeID(p.id, true))
		}
	}
}

// TrialFunc is Trial as the search's capacity.TrialFunc.
func (c *Controller) TrialFunc(test string, integer bool, o ProbeOptions) capacity.TrialFunc {
	return func(ctx context.Context, load float64) (capacity.Trial, error) {
		return c.Trial(ctx, test, load, integer, o)
	}
}

// Close sends quit to every worker still connected, waits (Options'
// linger of the transport) for it to go out, and closes the port.
func (c *Controller) Close() error {
	c.mu.Lock()
	for _, n := range c.nodes {
		if n.gone == "" {
			_ = c.send(n.id, protocol.TypeQuit, nil)
			n.gone = "sent quit" // its disconnection is expected, not a loss
		}
	}
	c.mu.Unlock()
	err := c.r.Close()
	c.cancel()
	c.wg.Wait()
	if err != nil {
		return fmt.Errorf("cluster: close: %w", err)
	}
	return nil
}
