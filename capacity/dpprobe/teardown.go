package dpprobe

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/probe"
	"github.com/cicada-load/cicada/dataplane/engine"
)

// Teardown opens rate*Duration users (OpenRate per second, one GET each,
// then held), then stops them at rate per second: each sends its FIN, most
// recently opened first. A FIN the stack had to retransmit counts as a
// failed close (the device dropped it), as does a user not opened or not
// closed within Grace after the trial. Achieved is the closes completed per
// second of the closing phase; the stack does not time closes, so the
// trial has no latency.
func (p *Prober) Teardown(ctx context.Context, rate float64) (capacity.Trial, error) {
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
	s, err := p.newStack(lo, hi, p.heldProgram(), &smp)
	if err != nil {
		return capacity.Trial{}, err
	}
	t0 := time.Now()
	if err := p.resolve(ctx, s, t0); err != nil {
		return capacity.Trial{}, err
	}
	l := engine.Launcher{Rate: p.o.OpenRate, Total: n}
	ramp := time.Duration(float64(n) / p.o.OpenRate * float64(time.Second))
	p.poll(ctx, s, t0, time.Now().Add(ramp+p.o.Grace), func(now int64) bool {
		l.Launch(s, now)
		c := s.Counters()
		return l.Launched() == n && answered(&c) >= uint64(n)
	})
	opened := s.Counters()
	held := int(opened.SocketsCurrent)
	cpu0, cpuOK := cpuTime()
	start := time.Now()
	planned := time.Duration(float64(held) / rate * float64(time.Second))
	stopped := 0
	var lastStop time.Time
	p.poll(ctx, s, t0, start.Add(planned+p.o.Grace), func(now int64) bool {
		if due := min(held, int(time.Since(start).Seconds()*rate)+1); due > stopped {
			stopped += s.StopClass(now, 0, due-stopped)
			if stopped >= held && lastStop.IsZero() {
				lastStop = time.Now()
			}
		}
		c := s.Counters()
		return stopped >= held && c.SocketsCurrent == 0
	})
	elapsed := max(time.Since(start), planned)
	c := s.Counters()
	closed := int64(c.SocketsClosed - opened.SocketsClosed)
	notClosed := int64(c.SocketsCurrent)
	retrans := int64(c.RetransFin - opened.RetransFin)
	t := capacity.Trial{Duration: elapsed, Attempted: int64(n)}
	t.Failed = min(int64(n), int64(n-held)+notClosed+retrans)
	t.Achieved = float64(max(closed-retrans, 0)) / elapsed.Seconds()
	t.Errors = map[string]int64{}
	for k, v := range map[string]int64{"not-opened": int64(n - held), "not-closed": notClosed, "fin-retransmitted": retrans} {
		if v > 0 {
			t.Errors[k] = v
		}
	}
	switch {
	case opened.LaunchSkipped > 0:
		t.GeneratorLimit = fmt.Sprintf("ports: %d launches skipped, their records still in use", opened.LaunchSkipped)
	case !lastStop.IsZero() && lastStop.Sub(start) > planned+p.o.LagTolerance:
		t.GeneratorStrain = fmt.Sprintf("pacing: the last close %v after the phase's start (planned %v)", lastStop.Sub(start).Round(time.Millisecond), planned)
	default:
		t.GeneratorStrain = p.cpuLimit(cpu0, cpuOK, start)
	}
	if err := ctx.Err(); err != nil {
		return t, fmt.Errorf("dpprobe: trial stopped: %w", err)
	}
	return t, nil
}
