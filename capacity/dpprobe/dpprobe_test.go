package dpprobe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

const clientIP, serverIP = 198<<24 | 18<<16 | 1, 198<<24 | 18<<16 | 1<<8 | 1

// pipeProber is a Prober over an in-process pipe to a server stack polled
// on its own goroutine until the test ends.
func pipeProber(t *testing.T, o Options) *Prober {
	t.Helper()
	return pipeProberServer(t, o, stack.Config{}, 0)
}

// pipeProberServer is pipeProber with the server stack's body size and
// keep-alive from sc, its loop polling every period (0: as fast as it can).
func pipeProberServer(t *testing.T, o Options, sc stack.Config, period time.Duration) *Prober {
	t.Helper()
	a, b, err := pipe.New(pipe.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Mode, sc.Link, sc.ClientIP, sc.ServerIP, sc.PortMin, sc.PortMax = stack.Server, b, clientIP, serverIP, 10000, 60000
	if sc.IdleTimeout == 0 {
		sc.IdleTimeout = time.Hour
	}
	srv, err := stack.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "server stack", 30*time.Second, func(ctx context.Context) {
		if period == 0 {
			_ = (&engine.Loop{Stack: srv}).Run(ctx)
			return
		}
		t0 := time.Now()
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				for srv.Poll(int64(time.Since(t0))) > 0 {
				}
			}
		}
	})
	o.Link, o.ClientIP, o.ServerIP, o.CPUBusy = a, clientIP, serverIP, 100
	if o.RetransmitTimeout == 0 { // no spurious SYN retransmission on a busy machine
		o.RetransmitTimeout = 2 * time.Second
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTrialsOverPipe(t *testing.T) {
	p := pipeProber(t, Options{Duration: 300 * time.Millisecond, LagTolerance: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 { // the second trials reuse the resolved next hop
		tr, err := p.CPS(ctx, 200)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Attempted != 60 || tr.Failed != 0 || tr.GeneratorLimit != "" || tr.Achieved < 50 || tr.Achieved > 201 || tr.P50 <= 0 {
			t.Fatalf("CPS %d: %+v", i, tr)
		}
		tr, err = p.Concurrent(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Attempted != 100 || tr.Failed != 0 || tr.Achieved != 100 || tr.SecondRound != 100 || tr.SecondRoundFailed != 0 || tr.GeneratorLimit != "" {
			t.Fatalf("Concurrent %d: %+v", i, tr)
		}
	}
}

func TestPortsAreAGeneratorLimit(t *testing.T) {
	p := pipeProber(t, Options{PortMin: 10000, PortMax: 10049})
	tr, err := p.Concurrent(context.Background(), 51)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tr.GeneratorLimit, "ports: 51 connections need 51 client ports") || tr.Attempted != 0 {
		t.Fatalf("%+v", tr)
	}
}

func TestPortSlices(t *testing.T) {
	p := &Prober{o: Options{PortMin: 100, PortMax: 199}, next: 100}
	for _, tt := range []struct {
		n      int
		lo, hi uint16
	}{{40, 100, 139}, {40, 140, 179}, {40, 100, 139}, {60, 140, 199}, {1, 100, 100}, {100, 100, 199}, {100, 100, 199}} {
		lo, hi, why := p.ports(tt.n)
		if lo != tt.lo || hi != tt.hi || why != "" {
			t.Fatalf("ports(%d) = %d-%d %q; want %d-%d", tt.n, lo, hi, why, tt.lo, tt.hi)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	a, _, _ := pipe.New(pipe.Config{Frames: 8})
	for _, o := range []Options{
		{},
		{Link: a, ClientIP: 1},
		{Link: a, ClientIP: 1, ServerIP: 2, PortMin: 10, PortMax: 5},
		{Link: a, ClientIP: 1, ServerIP: 2, Duration: -1},
	} {
		if _, err := New(o); !errors.Is(err, ErrOptions) {
			t.Errorf("New(%+v) = %v", o, err)
		}
	}
	p, err := New(Options{Link: a, ClientIP: 1, ServerIP: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CPS(context.Background(), 0); !errors.Is(err, ErrOptions) {
		t.Errorf("CPS(0) = %v", err)
	}
	if _, err := p.Concurrent(context.Background(), 0.5); !errors.Is(err, ErrOptions) {
		t.Errorf("Concurrent(0.5) = %v", err)
	}
	// A load whose arrivals do not fit a trial is refused, never wrapped
	// into a trial of one arrival.
	for _, rate := range []float64{1e12, 1e300} {
		for name, trial := range map[string]func(context.Context, float64) (capacity.Trial, error){"CPS": p.CPS, "Teardown": p.Teardown, "TPS": p.TPS} {
			if tr, err := trial(context.Background(), rate); !errors.Is(err, ErrOptions) {
				t.Errorf("%s(%g) = %+v, %v; want ErrOptions", name, rate, tr, err)
			}
		}
	}
}

func TestTeardownOverPipe(t *testing.T) {
	p := pipeProber(t, Options{Duration: 300 * time.Millisecond, LagTolerance: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := p.Teardown(ctx, 200)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Attempted != 60 || tr.Failed != 0 || tr.GeneratorLimit != "" || tr.Achieved < 50 || tr.Achieved > 201 {
		t.Fatalf("Teardown: %+v", tr)
	}
}
