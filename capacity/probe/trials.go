package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"time"

	"github.com/cicada-load/cicada/capacity"
)

func badLoad(what string, v float64) error {
	return fmt.Errorf("%w: %s %v must be a positive number", ErrOptions, what, v)
}

// finish applies the checks every rate trial shares, the CPU and then the
// pacer's lateness (the symptom of a CPU-bound generator, or of a stall):
// both are strains (capacity.Trial.GeneratorStrain), which invalidate the
// trial if it failed and not if it passed.
func (p *Prober) finish(t *capacity.Trial, w *watch, issued, late int) {
	if t.GeneratorLimit != "" {
		return
	}
	if t.GeneratorStrain = w.cpuLimit(); t.GeneratorStrain != "" {
		return
	}
	if issued > 0 && float64(late) > p.o.LateRatio*float64(issued) {
		t.GeneratorStrain = fmt.Sprintf("pacing: %d of %d arrivals issued more than %v late", late, issued, p.o.LagTolerance)
	}
}

func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("probe: trial stopped: %w", err)
	}
	return nil
}

// CPS runs a trial of new connections at rate per second for Duration: each
// connects, with HTTP does one GET with Connection: close and reads to the
// server's close, else closes at once. Achieved is the connections that
// succeeded per second of the trial; latency is from when each was due to its
// connect (TCP) or its response (HTTP).
func (p *Prober) CPS(ctx context.Context, rate float64) (capacity.Trial, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return capacity.Trial{}, badLoad("rate", rate)
	}
	n, err := BoundedArrivals("rate", rate, p.o.Duration)
	if err != nil {
		return capacity.Trial{}, err
	}
	if !p.o.HTTP {
		// Each closes first and leaves a port in TIME_WAIT.
		if why := p.preflight(n); why != "" {
			return capacity.Trial{GeneratorLimit: why}, nil
		}
	}
	capN := p.o.MaxInFlight
	if room := p.fdRoom(); room >= 0 && room-32 < capN {
		capN = max(room-32, 1)
	}
	var rec recorder
	sem := make(chan struct{}, capN)
	var wg sync.WaitGroup
	w := p.startWatch()
	start := time.Now()
	issued, late := pace(n, rate, start, p.o.LagTolerance, ctx.Done(), func(_ int, due time.Time) {
		select {
		case sem <- struct{}{}:
		default:
			rec.limit(fmt.Sprintf("in flight: %d connections awaiting the device already (open files or --max-in-flight)", capN))
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p.connectOnce(ctx, due, &rec)
		}()
	})
	wg.Wait()
	d := max(Due(n, rate), time.Since(start))
	t := p.trial(&rec, d)
	t.Achieved = float64(t.Attempted-t.Failed) / d.Seconds()
	p.finish(&t, w, issued, late)
	return t, ctxErr(ctx)
}

func (p *Prober) connectOnce(ctx context.Context, due time.Time, rec *recorder) {
	if !p.o.HTTP {
		c, err := p.dial(ctx)
		if err != nil {
			rec.fail(err)
			return
		}
		rec.ok(time.Since(due), 0)
		_ = c.Close()
		return
	}
	h, err := p.connect(ctx, rec)
	if err != nil {
		rec.fail(err)
		return
	}
	c := h.c
	nb, err := p.do(ctx, h, p.reqC)
	lat := time.Since(due)
	if err != nil {
		_ = c.SetLinger(0)
		_ = c.Close()
		rec.fail(err)
		return
	}
	// Let the server close first (TIME_WAIT on its side), within the
	// timeout (or until ctx ends).
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(longAgo) })
	if ctx.Err() == nil {
		_, _ = io.Copy(io.Discard, h.br)
	}
	stop()
	_ = c.Close()
	rec.ok(lat, nb)
}

// TPS runs a trial of HTTP transactions at rate per second for Duration on
// Conns keep-alive connections: each transaction goes to the next free
// connection; one that waited past Timeout for a free connection fails as a
// timeout. Achieved is the transactions that succeeded per second of the
// trial; latency is from when each was due to its response's last byte.
func (p *Prober) TPS(ctx context.Context, rate float64) (capacity.Trial, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return capacity.Trial{}, badLoad("rate", rate)
	}
	n, err := BoundedArrivals("rate", rate, p.o.Duration)
	if err != nil {
		return capacity.Trial{}, err
	}
	return p.tps(ctx, n, func(i int) time.Duration { return Due(i, rate) })
}

// tps runs n transactions, arrival i due dueOf(i) after the start; the
// trial's planned length is dueOf(n).
func (p *Prober) tps(ctx context.Context, n int, dueOf func(i int) time.Duration) (capacity.Trial, error) {
	if why := p.preflight(p.o.Conns); why != "" {
		return capacity.Trial{GeneratorLimit: why}, nil
	}
	tickets := make(chan ticket, n)
	var rec recorder
	if len(p.o.Mix) > 0 {
		rec.mix = make([]capacity.MixCount, len(p.o.Mix))
		for k, e := range p.o.Mix {
			rec.mix[k].Size = e.Size
		}
	}
	var wg sync.WaitGroup
	w := p.startWatch()
	start := time.Now()
	end := start.Add(dueOf(n) + p.o.Timeout)
	for range p.o.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.transact(ctx, tickets, end, &rec)
		}()
	}
	issued, late := paceBy(n, dueOf, start, p.o.LagTolerance, ctx.Done(), func(i int, due time.Time) {
		k := -1
		if len(p.o.Mix) > 0 {
			k = p.o.Mix.EntryOf(i)
		}
		tickets <- ticket{due, k}
	})
	close(tickets)
	wg.Wait()
	d := max(dueOf(n), time.Since(start))
	t := p.trial(&rec, d)
	t.Achieved = float64(t.Attempted-t.Failed) / d.Seconds()
	p.finish(&t, w, issued, late)
	return t, ctxErr(ctx)
}

var errQueued = fmt.Errorf("probe: waited past the timeout for a free connection: %w", os.ErrDeadlineExceeded)

// ticket is one TPS arrival: when it is due, and its Options.Mix entry
// (-1: no mix, Path).
type ticket struct {
	due time.Time
	k   int
}

// transact is one keep-alive connection's loop over tickets.
func (p *Prober) transact(ctx context.Context, tickets <-chan ticket, end time.Time, rec *recorder) {
	var h *httpConn
	defer func() {
		if h != nil {
			_ = h.c.Close()
		}
	}()
	for tk := range tickets {
		if time.Since(tk.due) > p.o.Timeout || time.Now().After(end) || ctx.Err() != nil {
			rec.failMix(tk.k, errQueued)
			continue
		}
		if h == nil {
			var err error
			if h, err = p.connect(ctx, rec); err != nil {
				rec.failMix(tk.k, err)
				continue
			}
		}
		req := p.req
		if tk.k >= 0 {
			req = p.mixReqs[tk.k]
		}
		nb, err := p.do(ctx, h, req)
		if err != nil {
			rec.failMix(tk.k, err)
			_ = h.c.SetLinger(0)
			_ = h.c.Close()
			h = nil
			continue
		}
		rec.okMix(tk.k, time.Since(tk.due), nb)
	}
}

// Throughput runs TPS at the rate that offers mbps megabits per second of
// objects of size bytes (the path must serve that size, such as the built-in
// target's /bytes/N), or with Options.Mix of the mix's mean size (size is
// then unused). Achieved is the body bytes received in Mbit/s.
func (p *Prober) Throughput(ctx context.Context, mbps float64, size int) (capacity.Trial, error) {
	if !(mbps > 0) || math.IsInf(mbps, 0) {
		return capacity.Trial{}, badLoad("throughput", mbps)
	}
	var (
		t   capacity.Trial
		err error
	)
	if len(p.o.Mix) > 0 {
		n, dueOf := p.o.Mix.schedule(mbps*1e6/8, p.o.Duration)
		t, err = p.tps(ctx, n, dueOf)
	} else {
		if size <= 0 {
			return capacity.Trial{}, fmt.Errorf("%w: object size %d must be positive", ErrOptions, size)
		}
		t, err = p.TPS(ctx, mbps*1e6/8/float64(size))
	}
	if t.Duration > 0 {
		t.Achieved = float64(t.Bytes) * 8 / t.Duration.Seconds() / 1e6
	}
	return t, err
}

// open opens n connections with at most Window connects in flight, each
// with an HTTP GET when HTTP is set, recording each open (latency from its
// connect's start). Failed opens leave nil.
func (p *Prober) open(ctx context.Context, n int, rec *recorder) []*httpConn {
	conns := make([]*httpConn, n)
	sem := make(chan struct{}, p.o.Window)
	var wg sync.WaitGroup
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t0 := time.Now()
			h, err := p.connect(ctx, rec)
			if err != nil {
				rec.fail(err)
				return
			}
			c := h.c
			var nb int64
			if p.o.HTTP {
				if nb, err = p.do(ctx, h, p.req); err != nil {
					_ = c.SetLinger(0)
					_ = c.Close()
					rec.fail(err)
					return
				}
			}
			rec.ok(time.Since(t0), nb)
			conns[i] = h
		}()
	}
	wg.Wait()
	return conns
}

// Concurrent opens n connections (Window connects in flight, an HTTP GET on
// each when HTTP is set), holds them for Hold, then runs the second round:
// an HTTP GET on every held connection (RFC 3511 section 5.2; the target
// must speak HTTP/1.1 even for bare TCP). Achieved is the connections held;
// every held connection is then reset.
func (p *Prober) Concurrent(ctx context.Context, load float64) (capacity.Trial, error) {
	n := int(load)
	if n < 1 || math.IsInf(load, 0) || math.IsNaN(load) {
		return capacity.Trial{}, badLoad("connections", load)
	}
	if why := p.preflight(n); why != "" {
		return capacity.Trial{GeneratorLimit: why}, nil
	}
	var rec recorder
	w := p.startWatch()
	start := time.Now()
	conns := p.open(ctx, n, &rec)
	defer func() {
		for _, h := range conns {
			if h != nil {
				_ = h.c.SetLinger(0)
				_ = h.c.Close()
			}
		}
	}()
	held := 0
	for _, h := range conns {
		if h != nil {
			held++
		}
	}
	if p.o.Held != nil && ctx.Err() == nil {
		if err := p.o.Held(ctx); err != nil {
			return capacity.Trial{}, fmt.Errorf("probe: concurrent: %w", err)
		}
	}
	if p.o.Hold > 0 {
		tm := time.NewTimer(p.o.Hold)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
		}
	}
	var second, secondFailed int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, p.o.Window)
	for _, h := range conns {
		if h == nil || ctx.Err() != nil {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := p.do(ctx, h, p.req)
			mu.Lock()
			second++
			if err != nil {
				secondFailed++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	t := p.trial(&rec, time.Since(start))
	t.Achieved = float64(held)
	t.SecondRound, t.SecondRoundFailed = second, secondFailed
	if t.GeneratorLimit == "" {
		t.GeneratorStrain = w.cpuLimit()
	}
	return t, ctxErr(ctx)
}

var errNoClose = errors.New("probe: the server did not close")

// Teardown opens rate*Duration connections (Window connects in flight, an
// HTTP GET on each when HTTP is set), then closes them at rate per second:
// each sends its FIN and waits, at most Timeout, for the server's. A
// connection that could not be opened counts as failed. Achieved is the
// closes completed per second; latency is from the FIN to the server's FIN.
func (p *Prober) Teardown(ctx context.Context, rate float64) (capacity.Trial, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return capacity.Trial{}, badLoad("rate", rate)
	}
	if p.o.TLS != nil {
		return capacity.Trial{}, fmt.Errorf("%w: teardown is not run over TLS", ErrOptions)
	}
	n, err := BoundedArrivals("rate", rate, p.o.Duration)
	if err != nil {
		return capacity.Trial{}, err
	}
	if why := p.preflight(n); why != "" {
		return capacity.Trial{GeneratorLimit: why}, nil
	}
	var setup recorder
	conns := p.open(ctx, n, &setup)
	var rec recorder
	var wg sync.WaitGroup
	w := p.startWatch()
	start := time.Now()
	issued, late := pace(n, rate, start, p.o.LagTolerance, ctx.Done(), func(i int, _ time.Time) {
		h := conns[i]
		if h == nil {
			rec.fail(errNotOpened)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			err := p.closeOne(ctx, h)
			if err != nil {
				rec.fail(err)
				return
			}
			rec.ok(time.Since(t0), 0)
		}()
	})
	wg.Wait()
	for _, h := range conns[issued:] {
		if h != nil {
			_ = h.c.SetLinger(0)
			_ = h.c.Close()
		}
	}
	d := max(Due(n, rate), time.Since(start))
	t := p.trial(&rec, d)
	t.Achieved = float64(t.Attempted-t.Failed) / d.Seconds()
	if setup.generator != "" {
		t.GeneratorLimit = setup.generator
	}
	p.finish(&t, w, issued, late)
	return t, ctxErr(ctx)
}

var errNotOpened = fmt.Errorf("probe: connection not opened: %w", io.ErrUnexpectedEOF)

func (p *Prober) closeOne(ctx context.Context, h *httpConn) error {
	defer h.c.Close()
	stop, err := p.arm(ctx, h.c)
	if err != nil {
		return err
	}
	defer stop()
	if err := h.c.CloseWrite(); err != nil {
		return fmt.Errorf("probe: FIN: %w", err)
	}
	var buf [512]byte
	for {
		_, err := h.br.Read(buf[:])
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("%w: %w", errNoClose, err)
			}
			return fmt.Errorf("probe: close: %w", err)
		}
	}
}
