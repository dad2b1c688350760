package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/probe"
	"github.com/cicada-load/cicada/diag"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/worker"
)

// errAborted: the controller gave the trial up (another worker was lost).
var errAborted = errors.New("cluster: trial aborted by the controller")

// Sender sends a custom message to the controller (worker.Worker's
// SendMessage).
type Sender interface {
	SendMessage(typ string, data any) error
}

// AgentOptions are an Agent's.
type AgentOptions struct {
	// Runtime names the worker's runtime in its ready answer; if empty,
	// RuntimeKernel.
	Runtime string
	// Refuse, when set, is the worker's reason not to run bench trials,
	// sent in its ready answer.
	Refuse string
	// Tests, if set, are the tests the worker runs; a hello naming another
	// is refused in the ready answer.
	Tests []string
	// Trial, if set, builds a trial of spec on the worker's own runtime
	// (a data plane) instead of package probe's kernel sockets; held is
	// the concurrent test's barrier, for its Held hook.
	Trial func(spec TrialSpec, held func(context.Context) error) (capacity.TrialFunc, error)
	// TLS builds the tls.Config of a trial's TLSOptions for the target
	// addr (IP:port), as the standalone bench does; nil: the worker runs
	// no HTTPS trials (it answers an options error). Trial's runtime
	// runs neither HTTPS nor mixes: such trials get an options error.
	TLS func(o TLSOptions, addr string) (*tls.Config, error)
	// Limits is the probe's limits reader (tests); nil: diag.ReadLimits.
	Limits func() (diag.Limits, error)
	// Logger gets the agent's log lines; if nil, discarded.
	Logger *slog.Logger
	// Connected, if set, tells whether the worker is connected to (and
	// registered with) its controller; a trial during which it stays
	// false for ConnectionGrace (if zero, DefaultConnectionGrace) is
	// stopped (watchdog.go).
	Connected       func() bool
	ConnectionGrace time.Duration
}

// Agent is a worker's side of the bench exchange: it answers hello and
// runs one trial at a time with package probe, until ctx ends.
type Agent struct {
	ctx  context.Context
	o    AgentOptions
	send Sender
	log  *slog.Logger

	mu  sync.Mutex
	cur *agentRun
	wg  sync.WaitGroup

	// tlsKey and tlsCfg: the last trial's TLS configuration, kept for the
	// next trial of the same options (its session cache with it, so that
	// --tls-resume resumes across trials as a standalone search does).
	tlsMu  sync.Mutex
	tlsKey string
	tlsCfg *tls.Config
}

type agentRun struct {
	id     int64
	cancel context.CancelFunc
	goCh   chan bool // the go message's abort flag

	aborted atomic.Bool
}

// NewAgent returns an Agent sending through s; its trials end with ctx.
func NewAgent(ctx context.Context, s Sender, o AgentOptions) *Agent {
	if o.Runtime == "" {
		o.Runtime = RuntimeKernel
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Agent{ctx: ctx, o: o, send: s, log: log}
}

// Register installs the agent's handlers on w.
func (a *Agent) Register(w *worker.Worker) error {
	for _, typ := range []string{TypeHello, TypeTrial, TypeGo, TypeAbort} {
		if err := w.RegisterMessage(typ, func(_ *worker.Worker, msg protocol.Message) { a.Handle(msg) }); err != nil {
			return fmt.Errorf("cluster: register %s: %w", typ, err)
		}
	}
	return nil
}

// Wait waits for the trial in progress, if any, to end.
func (a *Agent) Wait() { a.wg.Wait() }

// Handle processes one message from the controller; it never blocks.
func (a *Agent) Handle(msg protocol.Message) {
	cu, _ := msg.Data.(*protocol.Custom)
	var data any
	if cu != nil {
		data = cu.Data
	}
	switch msg.Type {
	case TypeHello:
		refuse := a.o.Refuse
		test, err := DecodeHello(data)
		switch {
		case err != nil:
			refuse = err.Error()
		case refuse == "" && a.o.Tests != nil && test != "" && !slices.Contains(a.o.Tests, test):
			refuse = fmt.Sprintf("%s does not run the %s test (it runs %s)", a.o.Runtime, test, strings.Join(a.o.Tests, ", "))
		}
		a.log.Info("joined a cicada bench controller", "test", test, "runtime", a.o.Runtime, "refuse", refuse)
		a.reply(TypeReady, EncodeReady(Ready{Version: Version, Runtime: a.o.Runtime, Refuse: refuse}))
	case TypeTrial:
		a.onTrial(data)
	case TypeGo, TypeAbort:
		id, abort, err := DecodeID(msg.Type, data)
		if err != nil {
			a.log.Warn("bench message dropped", "error", err)
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.cur == nil || a.cur.id != id {
			return
		}
		if msg.Type == TypeAbort {
			abort = true
			a.cur.aborted.Store(true)
			a.cur.cancel()
		}
		select {
		case a.cur.goCh <- abort:
		default:
		}
	}
}

func (a *Agent) reply(typ string, data map[string]any) {
	if err := a.send.SendMessage(typ, data); err != nil {
		a.log.Warn("bench answer not sent", "type", typ, "error", err)
	}
}

func (a *Agent) onTrial(data any) {
	spec, err := DecodeTrial(data)
	if err != nil {
		a.reply(TypeResult, EncodeResult(Result{ID: spec.ID, Error: err.Error()}))
		return
	}
	if a.o.Refuse != "" {
		a.reply(TypeResult, EncodeResult(Result{ID: spec.ID, Error: a.o.Refuse}))
		return
	}
	a.mu.Lock()
	if a.cur != nil {
		busy := a.cur.id
		a.mu.Unlock()
		a.reply(TypeResult, EncodeResult(Result{ID: spec.ID, Error: fmt.Sprintf("busy with trial %d", busy)}))
		return
	}
	ctx, cancelCause := context.WithCancelCause(a.ctx)
	cancel := func() { cancelCause(nil) }
	r := &agentRun{id: spec.ID, cancel: cancel, goCh: make(chan bool, 1)}
	a.cur = r
	a.wg.Add(2)
	a.mu.Unlock()
	go func() { defer a.wg.Done(); a.watchdog(ctx, cancelCause) }()
	go func() {
		defer a.wg.Done()
		res := a.run(ctx, spec, r)
		if cause := context.Cause(ctx); errors.Is(cause, errControllerGone) && res.Error != "" {
			res.Error = cause.Error() + ": " + res.Error
		}
		cancel()
		a.mu.Lock()
		a.cur = nil
		a.mu.Unlock()
		a.reply(TypeResult, EncodeResult(res))
	}()
}

// trialFunc is spec's trial on the worker's runtime.
func (a *Agent) trialFunc(spec TrialSpec, held func(context.Context) error) (capacity.TrialFunc, error) {
	if a.o.Tests != nil && !slices.Contains(a.o.Tests, spec.Test) {
		return nil, fmt.Errorf("%s does not run the %s test", a.o.Runtime, spec.Test)
	}
	if a.o.Trial != nil {
		if spec.Probe.TLS != nil || len(spec.Probe.Mix) > 0 {
			return nil, optionsError{fmt.Errorf("%s runs neither HTTPS (-H https://) nor traffic mixes (--mix)", a.o.Runtime)}
		}
		return a.o.Trial(spec, held)
	}
	po := spec.Probe.probe()
	if spec.Probe.TLS != nil {
		if a.o.TLS == nil {
			return nil, optionsError{errors.New("this worker cannot build TLS configurations")}
		}
		c, err := a.tlsConfig(*spec.Probe.TLS, spec.Probe.Addr)
		if err != nil {
			return nil, optionsError{err}
		}
		po.TLS = c
	}
	po.Limits = a.o.Limits
	if spec.Test == "concurrent" {
		po.Held = held
	}
	p, err := probe.New(po)
	if err != nil {
		return nil, optionsError{fmt.Errorf("cluster: probe: %w", err)}
	}
	fn, err := p.TrialFunc(spec.Test, spec.Probe.ObjectSize)
	if err != nil {
		return nil, optionsError{fmt.Errorf("cluster: probe: %w", err)}
	}
	return fn, nil
}

// tlsConfig is o's configuration for addr: the last one when o and addr
// are the last trial's, else a new one from AgentOptions.TLS.
func (a *Agent) tlsConfig(o TLSOptions, addr string) (*tls.Config, error) {
	key := fmt.Sprintf("%q %#v", addr, o)
	a.tlsMu.Lock()
	defer a.tlsMu.Unlock()
	if a.tlsCfg != nil && a.tlsKey == key {
		return a.tlsCfg, nil
	}
	c, err := a.o.TLS(o, addr)
	if err != nil {
		return nil, err
	}
	a.tlsKey, a.tlsCfg = key, c
	return c, nil
}

// ProbeOptions converts o to the probe's options.
func (o ProbeOptions) probe() probe.Options {
	return probe.Options{Addr: o.Addr, Host: o.Host, Path: o.Path, HTTP: o.HTTP, Duration: o.Duration, ConnectTimeout: o.ConnectTimeout,
		Timeout: o.Timeout, Conns: o.Conns, Window: o.Window, Hold: o.Hold, CPUBusy: o.CPUBusy, LagTolerance: o.LagTolerance, Mix: o.Mix, KeepSamples: true}
}

// optionsError is a trial's options the worker cannot honour (Result.Options).
type optionsError struct{ err error }

func (e optionsError) Error() string { return e.err.Error() }
func (e optionsError) Unwrap() error { return e.err }

func (a *Agent) run(ctx context.Context, spec TrialSpec, r *agentRun) Result {
	held := func(ctx context.Context) error {
		a.reply(TypeHeld, EncodeID(spec.ID, false))
		select {
		case abort := <-r.goCh:
			if abort {
				return errAborted
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("cluster: waiting for the second round: %w", ctx.Err())
		}
	}
	fn, err := a.trialFunc(spec, held)
	if err != nil {
		return Result{ID: spec.ID, Error: err.Error(), Options: errors.As(err, new(optionsError))}
	}
	a.log.Info("bench trial", "id", spec.ID, "test", spec.Test, "load", spec.Load, "https", spec.Probe.TLS != nil, "mix", spec.Probe.Mix.String())
	t, err := fn(ctx, spec.Load)
	res := Result{ID: spec.ID, Latency: Histogram(t.Samples)}
	t.Samples = nil
	res.Trial = t
	if err != nil {
		res.Error = err.Error()
		if r.aborted.Load() {
			res.Error = errAborted.Error() + ": " + res.Error
		}
	}
	return res
}
