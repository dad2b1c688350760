package dpprobe

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/probe"
	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/stack"
)

// wscale is the least window scale shift that carries window.
func wscale(window uint32) uint8 {
	var k uint8
	for uint64(window) > uint64(0xffff)<<k && k < 14 {
		k++
	}
	return k
}

func (o *Options) keepAliveDefaults() error {
	if o.Conns < 0 || o.Timeout < 0 || o.LateRatio < 0 || o.LateRatio > 1 {
		return fmt.Errorf("%w: negative connections or timeout, or a late ratio outside 0..1", ErrOptions)
	}
	if uint64(o.Window) > 0xffff<<14 {
		return fmt.Errorf("%w: window %d above TCP's largest, %d", ErrOptions, o.Window, 0xffff<<14)
	}
	if o.Conns == 0 {
		o.Conns = 64
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	if o.LateRatio == 0 {
		o.LateRatio = 0.05
	}
	if o.Window == 0 {
		o.Window = 1 << 20
	}
	return nil
}

// keepAlive is one TPS trial's open loop: arrivals due by probe.Due, a
// FIFO of those due and not yet sent (consecutive arrival numbers, so no
// storage), idle users (records, a ring) and each busy user's arrival.
type keepAlive struct {
	rate       float64
	n          int
	start      int64 // the stack clock's start of the arrivals
	due, sent  int   // arrivals due so far; arrivals sent or expired
	late       int   // due arrivals noticed more than LagTolerance late
	idle       []uint32
	head, size int
	busy       []int64 // per record: the due time of its arrival, or -1
	inFlight   int
	ok, failed int64
	queued     int64 // expired in the queue, waiting for a connection
	lastEnd    int64
	smp        samples
	measuring  bool
	warmEnded  int
	lastTurn   int64 // the stack clock of the last turn
	maxGap     int64 // the longest time between two turns
}

func (k *keepAlive) push(rec uint32) {
	k.idle[(k.head+k.size)%len(k.idle)] = rec
	k.size++
}

func (k *keepAlive) pop() uint32 {
	rec := k.idle[k.head]
	k.head = (k.head + 1) % len(k.idle)
	k.size--
	return rec
}

// taskEnd is the stack's SetOnTaskEnd callback.
func (k *keepAlive) taskEnd(rec uint32, now int64, ok bool) {
	if int(rec) >= len(k.busy) {
		return
	}
	if due := k.busy[rec]; due >= 0 {
		k.busy[rec] = -1
		k.inFlight--
		k.lastEnd = max(k.lastEnd, now)
		if ok {
			k.ok++
			k.smp.rt = appendSample(k.smp.rt, time.Duration(now-due))
		} else {
			k.failed++
		}
	} else if !k.measuring {
		k.warmEnded++
	}
	if k.size < len(k.idle) {
		k.push(rec)
	}
}

func appendSample(rt []time.Duration, d time.Duration) []time.Duration {
	if len(rt) < 1<<20 {
		rt = append(rt, d)
	}
	return rt
}

// turn moves the arrivals due by now into the queue and sends the queue's
// head on idle users; arrivals that waited past timeout fail.
func (k *keepAlive) turn(s *stack.Stack, now int64, lag, timeout time.Duration) {
	if k.lastTurn > 0 {
		k.maxGap = max(k.maxGap, now-k.lastTurn)
	}
	k.lastTurn = now
	for k.due < k.n {
		d := k.start + int64(probe.Due(k.due, k.rate))
		if d > now {
			break
		}
		if now-d > int64(lag) {
			k.late++
		}
		k.due++
	}
	for k.sent < k.due {
		d := k.start + int64(probe.Due(k.sent, k.rate))
		if now-d > int64(timeout) {
			k.queued++
			k.sent++
			continue
		}
		if k.size == 0 {
			return
		}
		rec := k.pop()
		if !s.Wake(now, rec) {
			continue // not idle after all (stopped): dropped
		}
		k.busy[rec] = d
		k.inFlight++
		k.sent++
	}
}

// TPS runs a trial of HTTP transactions at rate per second for Duration on
// Conns keep-alive connections (users of one GET each, opened at OpenRate
// per second and answered once before the trial starts, their answers not
// counted). Open loop, as package capacity/probe's TPS: arrival i is due at
// probe.Due(i, rate) and goes on the longest idle connection when due; if
// all are busy it waits in a queue, and one that waited past Timeout fails
// ("queued": the device is slower than Conns divided by its latency; raise
// Conns to offer more). Latency counts from when each was due to its
// response's last byte, so queueing is not hidden. A connection the server
// closes (Connection: close, or after its keep-alive limit) is reopened by
// its next transaction, which is timed from the SYN. Achieved is the
// transactions answered with a 2xx per second of the trial, from its start
// to the last answer (at least the planned Duration). Generator limits:
// the port slice, frames the link could not send or its receive ring
// dropped (AF_PACKET, AF_XDP and DPDK count them), more than LateRatio of
// the arrivals noticed more than LagTolerance after they were due, or a
// polling loop that did not turn for more than LagTolerance (it fell
// behind, or the host descheduled it: it could not receive either), and
// the CPU.
func (p *Prober) TPS(ctx context.Context, rate float64) (capacity.Trial, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return capacity.Trial{}, fmt.Errorf("%w: rate %v must be a positive number", ErrOptions, rate)
	}
	t, _, err := p.keepAliveTrial(ctx, rate)
	return t, err
}

// Throughput runs TPS at the rate that offers mbps megabits per second of
// objects of size bytes (Path must serve that size, as the target's
// /bytes/N does). Achieved is the response bodies' bytes received during
// the trial in Mbit/s of its length (as package capacity/probe's).
func (p *Prober) Throughput(ctx context.Context, mbps float64, size int) (capacity.Trial, error) {
	if !(mbps > 0) || math.IsInf(mbps, 0) {
		return capacity.Trial{}, fmt.Errorf("%w: throughput %v must be a positive number", ErrOptions, mbps)
	}
	if size <= 0 {
		return capacity.Trial{}, fmt.Errorf("%w: object size %d must be positive", ErrOptions, size)
	}
	t, _, err := p.keepAliveTrial(ctx, mbps*1e6/8/float64(size))
	if t.Duration > 0 {
		t.Achieved = float64(t.Bytes) * 8 / t.Duration.Seconds() / 1e6
	}
	return t, err
}

// keepAliveTrial runs TPS's trial and also returns the client stack's
// counters at its end (for tests).
func (p *Prober) keepAliveTrial(ctx context.Context, rate float64) (capacity.Trial, stack.Counters, error) {
	conns := p.o.Conns
	lo, hi, why := p.ports(conns)
	if why != "" {
		return capacity.Trial{GeneratorLimit: why}, stack.Counters{}, nil
	}
	n, err := probe.BoundedArrivals("rate", rate, p.o.Duration)
	if err != nil {
		return capacity.Trial{}, stack.Counters{}, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	s, err := p.newStack(lo, hi, p.heldProgram(), nil) // timed from due by taskEnd
	if err != nil {
		return capacity.Trial{}, stack.Counters{}, err
	}
	k := &keepAlive{rate: rate, n: n, idle: make([]uint32, s.Conns()), busy: make([]int64, s.Conns())}
	for i := range k.busy {
		k.busy[i] = -1
	}
	s.SetOnTaskEnd(k.taskEnd)
	t0 := time.Now()
	if err := p.resolve(ctx, s, t0); err != nil {
		return capacity.Trial{}, stack.Counters{}, err
	}
	// Open the connections, each answered once (or failed) before the
	// trial starts.
	l := engine.Launcher{Rate: p.o.OpenRate, Total: conns}
	ramp := time.Duration(float64(conns) / p.o.OpenRate * float64(time.Second))
	p.poll(ctx, s, t0, time.Now().Add(ramp+p.o.Grace), func(now int64) bool {
		l.Launch(s, now)
		return l.Launched() == conns && k.warmEnded >= conns
	})
	opened := s.Counters()
	var st stack.Stats
	s.TakeStats(&st) // the opening GETs' bytes are not the trial's
	st.Reset()
	drops0, dropsOK := rxDrops(p.o.Link)
	cpu0, cpuOK := cpuTime()
	start := time.Now()
	k.measuring = true
	k.start = int64(start.Sub(t0))
	planned := probe.Due(n, rate)
	ok := p.poll(ctx, s, t0, start.Add(planned+p.o.Timeout+p.o.Grace), func(now int64) bool {
		k.turn(s, now, p.o.LagTolerance, p.o.Timeout)
		return k.sent == n && k.inFlight == 0
	})
	end := time.Now()
	if k.lastEnd > 0 {
		end = t0.Add(time.Duration(k.lastEnd))
	}
	elapsed := max(end.Sub(start), planned)
	s.TakeStats(&st)
	c := s.Counters()
	drops1, _ := rxDrops(p.o.Link)
	p.stopAll(ctx, s, t0)
	unsent := int64(n - k.sent)
	t := capacity.Trial{Duration: elapsed, Attempted: int64(n), Achieved: float64(k.ok) / elapsed.Seconds()}
	for _, r := range st.Rows {
		t.Bytes += int64(r.ContentBytes)
	}
	t.Failed = min(int64(n), k.failed+k.queued+unsent+int64(k.inFlight))
	t.Errors = map[string]int64{}
	for key, v := range map[string]int64{"queued": k.queued, "unsent": unsent, "unanswered": int64(k.inFlight), "http-status": int64(c.HTTPOther - opened.HTTPOther),
		"http-error": int64(c.HTTPErrors - opened.HTTPErrors), "reset": int64(c.RstIn - opened.RstIn), "failed": int64(c.SocketsFailed - opened.SocketsFailed)} {
		if v > 0 {
			t.Errors[key] = v
		}
	}
	if k.failed > 0 && len(t.Errors) == 0 {
		t.Errors["failed"] = k.failed
	}
	if len(t.Errors) == 0 {
		t.Errors = nil
	}
	k.smp.fill(&t)
	if p.o.KeepSamples {
		t.Samples = k.smp.rt
	}
	switch {
	case opened.LaunchSkipped > 0:
		t.GeneratorLimit = fmt.Sprintf("ports: %d launches skipped, their records still in use", opened.LaunchSkipped)
	case c.DropNoTxBuffer+c.DropTxRefused > opened.DropNoTxBuffer+opened.DropTxRefused:
		t.GeneratorLimit = fmt.Sprintf("link: %d frames not sent (no transmit buffer, or refused)", c.DropNoTxBuffer+c.DropTxRefused-opened.DropNoTxBuffer-opened.DropTxRefused)
	case dropsOK && drops1 > drops0:
		t.GeneratorLimit = fmt.Sprintf("link: %d received frames dropped by the generator's receive ring (it did not keep up)", drops1-drops0)
	case k.due > 0 && float64(k.late) > p.o.LateRatio*float64(k.due):
		t.GeneratorStrain = fmt.Sprintf("pacing: %d of %d arrivals noticed more than %v late", k.late, k.due, p.o.LagTolerance)
	case k.maxGap > int64(p.o.LagTolerance):
		t.GeneratorStrain = fmt.Sprintf("pacing: the polling loop stalled for %v (more than %v; the host descheduled it)", time.Duration(k.maxGap).Round(time.Millisecond), p.o.LagTolerance)
	case !ok && ctx.Err() == nil && k.due < n:
		t.GeneratorStrain = fmt.Sprintf("pacing: %d of %d arrivals due by the trial's deadline", k.due, n)
	default:
		t.GeneratorStrain = p.cpuLimit(cpu0, cpuOK, start)
	}
	if err := ctx.Err(); err != nil {
		return t, c, fmt.Errorf("dpprobe: trial stopped: %w", err)
	}
	return t, c, nil
}

// stopAll stops every user of s (FIN) and polls until their connections
// closed, at most Grace.
func (p *Prober) stopAll(ctx context.Context, s *stack.Stack, t0 time.Time) {
	stopped := false
	p.poll(ctx, s, t0, time.Now().Add(p.o.Grace), func(now int64) bool {
		if !stopped {
			s.StopClass(now, 0, s.Users(0))
			stopped = true
		}
		c := s.Counters()
		return c.SocketsCurrent == 0
	})
}
