// Package dpprobe runs `cicada bench`'s trials on the userspace data plane
// (dataplane/stack over any dataplane/link): the same capacity.Trial as
// package capacity/probe's kernel-socket trials, for the same search, so
// that the two generators' figures stand side by side.
//
//	CPS         TCP/HTTP connections per second: each connects, sends one
//	            GET and closes (RFC 9411 7.2)
//	Concurrent  connections held, then the second round on each
//	            (RFC 3511 5.2, RFC 9411 7.5)
//	Teardown    held connections closed per second (RFC 3511 5.4)
//	TPS         HTTP transactions per second on Conns keep-alive
//	            connections, open loop (RFC 3511 5.7)
//	Throughput  Mbit/s of objects of one size on Conns keep-alive
//	            connections (RFC 3511 5.6, RFC 9411 7.3)
//
// Each trial builds a fresh client stack on the shared link with its own
// slice of Options' client ports (the cursor moves on, so a trial never
// reuses a 4-tuple of the previous one that a device may still track),
// polls it on the calling goroutine with its own clock, and leaves it with
// every connection closed (FIN). The next hop, resolved by ARP once, is
// handed to the next trials' stacks.
//
// TPS and Throughput follow package capacity/probe's pacing contract:
// arrival i is due at probe.Due(i, rate), is sent when due on an idle held
// connection (the stack's Wake; its users wait an hour between tasks
// otherwise), waits in a queue while every connection is busy, and its
// latency counts from when it was due, so queueing is not hidden. An
// arrival queued past Timeout fails ("queued"): the device is slower than
// Conns divided by its latency, which is the device's limit (raise Conns to
// offer more), not the generator's.
//
// Deliberate differences from the kernel trials: latency is the GET's
// response time (the stack times requests, not handshakes); a SYN the stack
// had to retransmit counts as a failed connection attempt in CPS (the
// device dropped it; the kernel trials' connect timeout, below the kernel's
// 1 s SYN retransmission, fails the same connection); the generator's
// limits checked are its port slice (a launch skipped because its record was
// in use, or a trial needing more ports than the range has), the pacer (all
// launches made within LagTolerance of the trial's end; for TPS and
// Throughput, at most LateRatio of the arrivals noticed more than
// LagTolerance late, and no turn of the polling loop more than LagTolerance
// after the last) and the CPU; TPS and Throughput also check the link
// (frames it could not send, or that its receive ring dropped: AF_PACKET,
// AF_XDP and DPDK count them). As in the kernel trials, the port slice and
// the link are hard limits (Trial.GeneratorLimit: the trial is invalid),
// the pacer and the CPU are strains (Trial.GeneratorStrain: a trial that
// failed with one is invalid, one that passed stands, the device having
// sustained what it achieved). The stack is a simpler receiver than the
// kernel's (see package dataplane/stack: its window and its handling of
// segments out of order): where it, not the device, bounds Throughput, the
// figure is the data plane's; compare with the kernel probe's in the same
// run (the lab tests do).
package dpprobe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/probe"
	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// ErrOptions is wrapped for options or loads that cannot be honoured.
var ErrOptions = errors.New("dpprobe: invalid options")

// Options configure a Prober.
type Options struct {
	// Link carries the client stacks' frames; Waiter, if set, is waited on
	// when a turn had nothing to do (an afpacket or afxdp link).
	Link   link.Link
	Waiter engine.Waiter
	// ClientIP, ServerIP and Gateway (0: resolve ServerIP) are IPv4
	// addresses in host order, as stack.Config's; ServerPort, if zero, 80.
	ClientIP, ServerIP, Gateway uint32
	ServerPort                  uint16
	// Host is the Host header; Path the GET's path (if empty, "/").
	Host, Path string
	// PortMin..PortMax are the client ports the trials take slices of; if
	// both zero, 10000..60000.
	PortMin, PortMax uint16
	// Duration is a rate trial's length; if zero, 2 s.
	Duration time.Duration
	// RetransmitTimeout and MaxRetries bound a connection that gets no
	// answer (stack.Config's); if zero, 300 ms and 1.
	RetransmitTimeout time.Duration
	MaxRetries        int
	// OpenRate is the Concurrent trial's launch rate; if zero, 2,000/s.
	OpenRate float64
	// Grace bounds a trial's wait for its last answers after the launches;
	// if zero, 5 s.
	Grace time.Duration
	// CPUBusy is the share of one core (the polling goroutine's) above
	// which the process counts as saturated, a generator strain; if zero,
	// 0.95. A test that polls its own server stack in the process raises it.
	CPUBusy float64
	// LagTolerance: a rate trial whose last launch came later than this
	// after its planned end is a generator strain; if zero, 50 ms.
	LagTolerance time.Duration
	// Conns, Timeout and LateRatio are the TPS and Throughput trials'
	// (see TPS); if zero, 64, 5 s and 0.05.
	Conns     int
	Timeout   time.Duration
	LateRatio float64
	// Window is the client stacks' receive window in bytes, scaled
	// (RFC 7323) when the server scales too; if zero, 1 MiB. The stack
	// keeps no received data (it counts bytes), so a large window costs
	// nothing, and a window must not be what limits a throughput trial:
	// the receiver's window over the round trip bounds each connection.
	// (Lab, 16 connections of 64 KiB objects, no device limit: 65,535
	// bytes 1.85 Gbit/s and 1 MiB 4 in separate runs; in one later run
	// 2.2 and 2.3 beside kernel sockets' 2.7.)
	Window uint32
	// KeepSamples sets each Trial's Samples (a cluster worker ships them
	// as a histogram), as probe.Options.KeepSamples.
	KeepSamples bool
	// Held, if set, is called by Concurrent once its connections are open,
	// before the second round (a cluster's barrier), while the stack keeps
	// being polled; an error ends the trial: its connections are stopped
	// and Concurrent returns the error.
	Held func(ctx context.Context) error
}

// Prober runs data-plane trials; not safe for concurrent use (one link,
// polled by the calling goroutine).
type Prober struct {
	o    Options
	next uint16
	hop  wire.MAC
	has  bool
}

// New checks o and returns a Prober.
func New(o Options) (*Prober, error) {
	if o.Link == nil || o.ClientIP == 0 || o.ServerIP == 0 {
		return nil, fmt.Errorf("%w: a link, a client and a server address are required", ErrOptions)
	}
	if o.PortMin == 0 && o.PortMax == 0 {
		o.PortMin, o.PortMax = 10000, 60000
	}
	if o.PortMin == 0 || o.PortMin > o.PortMax {
		return nil, fmt.Errorf("%w: client ports %d-%d", ErrOptions, o.PortMin, o.PortMax)
	}
	if o.Duration < 0 || o.RetransmitTimeout < 0 || o.Grace < 0 || o.LagTolerance < 0 || o.OpenRate < 0 || o.MaxRetries < 0 || o.CPUBusy < 0 {
		return nil, fmt.Errorf("%w: negative duration, timeout, rate or retries", ErrOptions)
	}
	if o.ServerPort == 0 {
		o.ServerPort = 80
	}
	if o.Path == "" {
		o.Path = "/"
	}
	if o.Duration == 0 {
		o.Duration = 2 * time.Second
	}
	if o.RetransmitTimeout == 0 {
		o.RetransmitTimeout = 300 * time.Millisecond
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 1
	}
	if o.OpenRate == 0 {
		o.OpenRate = 2000
	}
	if o.Grace == 0 {
		o.Grace = 5 * time.Second
	}
	if o.CPUBusy == 0 {
		o.CPUBusy = 0.95
	}
	if o.LagTolerance == 0 {
		o.LagTolerance = 50 * time.Millisecond
	}
	if err := o.keepAliveDefaults(); err != nil {
		return nil, err
	}
	return &Prober{o: o, next: o.PortMin}, nil
}

// ports takes n client ports from the cursor, or names the generator limit.
func (p *Prober) ports(n int) (lo, hi uint16, limit string) {
	size := int(p.o.PortMax) - int(p.o.PortMin) + 1
	if n > size {
		return 0, 0, fmt.Sprintf("ports: %d connections need %d client ports, the range %d-%d has %d", n, n, p.o.PortMin, p.o.PortMax, size)
	}
	if int(p.next)+n-1 > int(p.o.PortMax) {
		p.next = p.o.PortMin
	}
	lo, hi = p.next, p.next+uint16(n-1)
	if int(hi) == int(p.o.PortMax) {
		p.next = p.o.PortMin
	} else {
		p.next = hi + 1
	}
	return lo, hi, ""
}

// samples collects response times from OnResponse.
type samples struct {
	rt     []time.Duration
	status [2]int64 // 2xx, other
}

func (s *samples) add(status int, rt time.Duration) {
	if status >= 200 && status < 300 {
		s.status[0]++
	} else {
		s.status[1]++
	}
	if len(s.rt) < 1<<20 {
		s.rt = append(s.rt, rt)
	}
}

func (s *samples) fill(t *capacity.Trial) {
	slices.Sort(s.rt)
	pct := func(q float64) time.Duration {
		if len(s.rt) == 0 {
			return 0
		}
		k := int(math.Ceil(q/100*float64(len(s.rt)))) - 1
		return s.rt[min(max(k, 0), len(s.rt)-1)]
	}
	t.P50, t.P95, t.P99 = pct(50), pct(95), pct(99)
	if len(s.rt) > 0 {
		t.Max = s.rt[len(s.rt)-1]
	}
}

// heldProgram is one user class: a GET, then an hour's wait on the
// connection.
func (p *Prober) heldProgram() *stack.Program {
	return &stack.Program{
		Requests: []stack.ProgramRequest{{Raw: stack.BuildRequest("GET", p.o.Path, p.host(), nil)}},
		Classes: []stack.ProgramClass{{Tasks: []stack.ProgramTask{{Weight: 1, Requests: []int{0}}},
			Wait: stack.Wait{Kind: stack.WaitConstant, Min: time.Hour}}},
	}
}

// newStack builds a trial's client stack on ports lo..hi; smp, if set,
// collects its responses' times.
func (p *Prober) newStack(lo, hi uint16, prog *stack.Program, smp *samples) (*stack.Stack, error) {
	cfg := stack.Config{Mode: stack.Client, Link: p.o.Link, ClientIP: p.o.ClientIP, ServerIP: p.o.ServerIP, ServerPort: p.o.ServerPort,
		Gateway: p.o.Gateway, PortMin: lo, PortMax: hi, RetransmitTimeout: p.o.RetransmitTimeout, MaxRetries: p.o.MaxRetries,
		IdleTimeout: p.o.Timeout, Window: p.o.Window, WScale: wscale(p.o.Window), Program: prog}
	if smp != nil {
		cfg.OnResponse = smp.add
	}
	if prog == nil {
		cfg.Request = stack.BuildRequest("GET", p.o.Path, p.host(), nil)
	}
	s, err := stack.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("dpprobe: client stack: %w", err)
	}
	if p.has {
		s.SetNextHop(p.hop)
	}
	return s, nil
}

func (p *Prober) host() string {
	if p.o.Host != "" {
		return p.o.Host
	}
	ip := p.o.ServerIP
	return fmt.Sprintf("%d.%d.%d.%d", ip>>24, ip>>16&0xff, ip>>8&0xff, ip&0xff)
}

// poll runs s until done holds, ctx ends or the deadline passes (false).
func (p *Prober) poll(ctx context.Context, s *stack.Stack, t0 time.Time, deadline time.Time, turn func(now int64) bool) bool {
	for {
		now := int64(time.Since(t0))
		rx := s.Poll(now)
		if turn(now) {
			return true
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false
		}
		if rx == 0 {
			if p.o.Waiter != nil {
				p.o.Waiter.Wait(time.Millisecond) // at most: a frame ends the wait
			} else {
				runtime.Gosched()
			}
		}
	}
}

// barrier calls Options.Held, polling s meanwhile.
func (p *Prober) barrier(ctx context.Context, s *stack.Stack, t0 time.Time) error {
	if p.o.Held == nil || ctx.Err() != nil {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- p.o.Held(ctx) }()
	var err error
	p.poll(context.WithoutCancel(ctx), s, t0, time.Now().Add(24*time.Hour), func(int64) bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	if err != nil {
		return fmt.Errorf("dpprobe: concurrent: %w", err)
	}
	return nil
}

// resolve polls s until its next hop is known (bounded), and keeps it.
func (p *Prober) resolve(ctx context.Context, s *stack.Stack, t0 time.Time) error {
	if s.Resolved() {
		return nil
	}
	if !p.poll(ctx, s, t0, time.Now().Add(3*time.Second), func(int64) bool { return s.Resolved() }) {
		return fmt.Errorf("dpprobe: the next hop did not answer ARP within 3 s")
	}
	p.hop, _ = s.NextHop()
	p.has = true
	return nil
}

func answered(c *stack.Counters) uint64 {
	return c.HTTP2xx + c.HTTPOther + c.HTTPErrors + c.SocketsFailed
}

// CPS runs a trial of rate connections per second for Duration, each one GET
// then closed by the client.
func (p *Prober) CPS(ctx context.Context, rate float64) (capacity.Trial, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return capacity.Trial{}, fmt.Errorf("%w: rate %v must be a positive number", ErrOptions, rate)
	}
	n, err := probe.BoundedArrivals("rate", rate, p.o.Duration)
	if err != nil {
		return capacity.Trial{}, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	lo, hi, why := p.ports(n)
	if why != "" {
		return capacity.Trial{GeneratorLimit: why}, nil
	}
	var smp samples
	s, err := p.newStack(lo, hi, nil, &smp)
	if err != nil {
		return capacity.Trial{}, err
	}
	t0 := time.Now()
	if err := p.resolve(ctx, s, t0); err != nil {
		return capacity.Trial{}, err
	}
	cpu0, cpuOK := cpuTime()
	l := engine.Launcher{Rate: rate, Total: n}
	planned := time.Duration(float64(n) / rate * float64(time.Second))
	var start, lastLaunch time.Time
	ok := p.poll(ctx, s, t0, time.Now().Add(planned+p.o.Grace), func(now int64) bool {
		if start.IsZero() {
			start = time.Now()
		}
		if l.Launched() < n && l.Launch(s, now) > 0 && l.Launched() == n {
			lastLaunch = time.Now()
		}
		c := s.Counters()
		return l.Launched() == n && answered(&c) >= uint64(n)
	})
	elapsed := max(time.Since(start), planned)
	// Let the last connections close (bounded), so the device sees them go.
	p.poll(ctx, s, t0, time.Now().Add(p.o.Grace), func(int64) bool { c := s.Counters(); return c.SocketsCurrent == 0 })
	c := s.Counters()
	t := capacity.Trial{Duration: elapsed, Attempted: int64(n), Bytes: int64(c.BytesIn)}
	failed := int64(c.SocketsFailed + c.HTTPOther + c.HTTPErrors + c.RetransSyn)
	if !ok {
		failed = max(failed, int64(n)-int64(c.HTTP2xx))
	}
	t.Failed = min(failed, int64(n))
	t.Achieved = float64(c.HTTP2xx) / elapsed.Seconds()
	t.Errors = errorKinds(&c, n-int(c.HTTP2xx))
	smp.fill(&t)
	if p.o.KeepSamples {
		t.Samples = smp.rt
	}
	switch {
	case c.LaunchSkipped > 0:
		t.GeneratorLimit = fmt.Sprintf("ports: %d launches skipped, their records still in use", c.LaunchSkipped)
	case l.Launched() < n || (!lastLaunch.IsZero() && lastLaunch.Sub(start) > planned+p.o.LagTolerance):
		t.GeneratorStrain = fmt.Sprintf("pacing: %d of %d launched, the last %v after the trial's start (planned %v)", l.Launched(), n, lastLaunch.Sub(start).Round(time.Millisecond), planned)
	default:
		t.GeneratorStrain = p.cpuLimit(cpu0, cpuOK, start)
	}
	if err := ctx.Err(); err != nil {
		return t, fmt.Errorf("dpprobe: trial stopped: %w", err)
	}
	return t, nil
}

func errorKinds(c *stack.Counters, notOK int) map[string]int64 {
	m := map[string]int64{}
	add := func(k string, v uint64) {
		if v > 0 {
			m[k] = int64(v)
		}
	}
	add("failed", c.SocketsFailed)
	add("syn-retransmitted", c.RetransSyn)
	add("http-status", c.HTTPOther)
	add("http-error", c.HTTPErrors)
	add("reset", c.RstIn)
	if len(m) == 0 && notOK > 0 {
		m["unanswered"] = int64(notOK)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// Concurrent opens n users (OpenRate per second), each one GET then an hour's
// wait on its connection, runs the second round on every one, then stops
// them all (FIN).
func (p *Prober) Concurrent(ctx context.Context, load float64) (capacity.Trial, error) {
	n := int(load)
	if n < 1 || math.IsNaN(load) || math.IsInf(load, 0) {
		return capacity.Trial{}, fmt.Errorf("%w: connections %v must be a positive number", ErrOptions, load)
	}
	lo, hi, why := p.ports(n)
	if why != "" {
		return capacity.Trial{GeneratorLimit: why}, nil
	}
	var smp samples
	s, err := p.newStack(lo, hi, p.heldProgram(), &smp)
	if err != nil {
		return capacity.Trial{}, err
	}
	t0 := time.Now()
	if err := p.resolve(ctx, s, t0); err != nil {
		return capacity.Trial{}, err
	}
	cpu0, cpuOK := cpuTime()
	start := time.Now()
	l := engine.Launcher{Rate: p.o.OpenRate, Total: n}
	ramp := time.Duration(float64(n) / p.o.OpenRate * float64(time.Second))
	p.poll(ctx, s, t0, time.Now().Add(ramp+p.o.Grace), func(now int64) bool {
		l.Launch(s, now)
		c := s.Counters()
		return l.Launched() == n && answered(&c) >= uint64(n)
	})
	first := s.Counters()
	if err := p.barrier(ctx, s, t0); err != nil {
		p.poll(context.WithoutCancel(ctx), s, t0, time.Now().Add(p.o.Grace), func(now int64) bool {
			s.StopClass(now, 0, n)
			c := s.Counters()
			return c.SocketsCurrent == 0
		})
		return capacity.Trial{}, err
	}
	sent, began := 0, false
	p.poll(ctx, s, t0, time.Now().Add(p.o.Grace), func(now int64) bool {
		if !began {
			sent, began = s.SecondRound(now), true
		}
		c := s.Counters()
		return c.SecondRoundOK+c.SecondRoundFailed >= uint64(sent)
	})
	second := s.Counters()
	stopped := false
	p.poll(ctx, s, t0, time.Now().Add(p.o.Grace), func(now int64) bool {
		if !stopped {
			s.StopClass(now, 0, n)
			stopped = true
		}
		c := s.Counters()
		return c.SocketsCurrent == 0
	})
	held := int64(second.SecondRoundOK)
	t := capacity.Trial{Duration: time.Since(start), Attempted: int64(n), Achieved: float64(held), Bytes: int64(second.BytesIn)}
	t.Failed = max(int64(n)-int64(first.HTTP2xx), 0)
	// Users the round did not reach (none held, or its answers late)
	// failed it.
	t.SecondRound = int64(n)
	t.SecondRoundFailed = int64(n) - held
	t.Errors = errorKinds(&first, int(t.Failed))
	smp.fill(&t)
	if p.o.KeepSamples {
		t.Samples = smp.rt
	}
	if first.LaunchSkipped > 0 {
		t.GeneratorLimit = fmt.Sprintf("ports: %d launches skipped, their records still in use", first.LaunchSkipped)
	} else {
		t.GeneratorStrain = p.cpuLimit(cpu0, cpuOK, start)
	}
	if err := ctx.Err(); err != nil {
		return t, fmt.Errorf("dpprobe: trial stopped: %w", err)
	}
	return t, nil
}
