package dpprobe

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/stack"
)

func TestKeepAliveTrialsOverPipe(t *testing.T) {
	tests := []struct {
		name   string
		o      Options
		sc     stack.Config
		period time.Duration
		trial  func(p *Prober, ctx context.Context) (tr capacityTrial, err error)
		check  func(t *testing.T, tr capacityTrial, c stack.Counters)
	}{{
		name: "tps below the server's capacity",
		o:    Options{Duration: 400 * time.Millisecond, Conns: 8},
		trial: func(p *Prober, ctx context.Context) (capacityTrial, error) {
			tr, c, err := p.keepAliveTrial(ctx, 500)
			return capacityTrial{tr, c}, err
		},
		check: func(t *testing.T, tr capacityTrial, c stack.Counters) {
			// Achieved: the 200 answers over the trial's length (a busy
			// machine's slow turns stretch it, never shorten it).
			if tr.Attempted != 200 || tr.Failed != 0 || tr.GeneratorLimit != "" || tr.Achieved > 500.01 || tr.P50 <= 0 ||
				math.Abs(tr.Achieved*tr.Duration.Seconds()-200) > 1e-6 {
				t.Fatalf("%+v", tr.Trial)
			}
			// 8 opening GETs, then 200 on the same 8 connections.
			if c.HTTPRequests != 208 || c.SocketsOpened != 8 || c.Reconnects != 0 {
				t.Fatalf("counters %+v", c)
			}
		},
	}, {
		// One connection to a server that answers once per 10 ms: 100
		// transactions a second at most; offered 1,000, the queue's
		// arrivals wait past the 60 ms timeout and fail, and the latency
		// of those answered shows their wait.
		name: "tps queued behind a slow device", o: Options{Duration: 300 * time.Millisecond, Conns: 1, Timeout: 60 * time.Millisecond},
		period: 10 * time.Millisecond,
		trial: func(p *Prober, ctx context.Context) (capacityTrial, error) {
			tr, c, err := p.keepAliveTrial(ctx, 1000)
			return capacityTrial{tr, c}, err
		},
		check: func(t *testing.T, tr capacityTrial, c stack.Counters) {
			if tr.Attempted != 300 || tr.Errors["queued"] < 200 || tr.Failed < 200 || tr.GeneratorLimit != "" || tr.Achieved > 150 || tr.P95 < 20*time.Millisecond {
				t.Fatalf("%+v", tr.Trial)
			}
		},
	}, {
		// The server closes each connection after its response
		// (keep-alive off): every transaction reopens its connection.
		name: "tps on connections the server closes", o: Options{Duration: 300 * time.Millisecond, Conns: 4},
		sc: stack.Config{IdleTimeout: 5 * time.Millisecond},
		trial: func(p *Prober, ctx context.Context) (capacityTrial, error) {
			tr, c, err := p.keepAliveTrial(ctx, 50)
			return capacityTrial{tr, c}, err
		},
		check: func(t *testing.T, tr capacityTrial, c stack.Counters) {
			if tr.Attempted != 15 || tr.Failed != 0 || tr.GeneratorLimit != "" || c.Reconnects == 0 {
				t.Fatalf("%+v; reconnects %d", tr.Trial, c.Reconnects)
			}
		},
	}, {
		name: "throughput of 10 kB objects", o: Options{Duration: 400 * time.Millisecond, Conns: 8},
		sc: stack.Config{BodySize: 10000},
		trial: func(p *Prober, ctx context.Context) (capacityTrial, error) {
			tr, err := p.Throughput(ctx, 20, 10000)
			return capacityTrial{tr, stack.Counters{}}, err
		},
		check: func(t *testing.T, tr capacityTrial, _ stack.Counters) {
			// 20 Mbit/s of 10 kB objects: 250/s, 100 in 400 ms, 1 MB.
			// Achieved is the bytes over the trial's length (stretched
			// by a slow turn of this busy machine, never shortened).
			if tr.Attempted != 100 || tr.Failed != 0 || tr.Bytes != 100*10000 || tr.Achieved > 20.01 || tr.Achieved < 5 ||
				math.Abs(tr.Achieved-float64(tr.Bytes)*8/tr.Duration.Seconds()/1e6) > 1e-9 || tr.GeneratorLimit != "" {
				t.Fatalf("%+v", tr.Trial)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.LagTolerance = time.Second
			p := pipeProberServer(t, o, tt.sc, tt.period)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for i := range 2 { // the second trial on a new port slice
				tr, err := tt.trial(p, ctx)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("trial %d: %+v", i, tr.Trial)
				tt.check(t, tr, tr.c)
			}
		})
	}
}

func TestKeepAliveRefuses(t *testing.T) {
	a, _, _ := pipe.New(pipe.Config{Frames: 8})
	for _, o := range []Options{
		{Link: a, ClientIP: 1, ServerIP: 2, Conns: -1},
		{Link: a, ClientIP: 1, ServerIP: 2, Timeout: -1},
		{Link: a, ClientIP: 1, ServerIP: 2, LateRatio: 2},
		{Link: a, ClientIP: 1, ServerIP: 2, Window: 1 << 31},
	} {
		if _, err := New(o); !errors.Is(err, ErrOptions) {
			t.Errorf("New(%+v) = %v", o, err)
		}
	}
	p, err := New(Options{Link: a, ClientIP: 1, ServerIP: 2, PortMin: 10000, PortMax: 10003, Conns: 5})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, f := range []func() (capacityTrial, error){
		func() (capacityTrial, error) { tr, err := p.TPS(ctx, 0); return capacityTrial{Trial: tr}, err },
		func() (capacityTrial, error) {
			tr, err := p.Throughput(ctx, -1, 100)
			return capacityTrial{Trial: tr}, err
		},
		func() (capacityTrial, error) {
			tr, err := p.Throughput(ctx, 1, 0)
			return capacityTrial{Trial: tr}, err
		},
	} {
		if _, err := f(); !errors.Is(err, ErrOptions) {
			t.Errorf("err = %v; want ErrOptions", err)
		}
	}
	// More connections than client ports: a generator limit, no trial.
	tr, err := p.TPS(ctx, 100)
	if err != nil || tr.GeneratorLimit == "" || tr.Attempted != 0 {
		t.Fatalf("TPS with 5 connections on 4 ports: %+v, %v", tr, err)
	}
}

// capacityTrial is a trial with the client stack's counters at its end.
type capacityTrial struct {
	capacity.Trial
	c stack.Counters
}

// The open loop's bookkeeping on a fake clock, no connection idle: arrivals
// become due by probe.Due, those noticed late are counted, those queued
// past the timeout expire, and the longest gap between turns is kept.
func TestKeepAliveTurn(t *testing.T) {
	const ms = int64(time.Millisecond)
	k := &keepAlive{rate: 100, n: 50, idle: make([]uint32, 1), start: 1000 * ms}
	for _, tt := range []struct {
		now                  int64
		due, sent, late, exp int
		gap                  int64
	}{
		{now: 999 * ms}, // before the start
		{now: 1000 * ms, due: 1, gap: ms},
		{now: 1045 * ms, due: 5, late: 1, gap: 45 * ms},              // arrival 1 (10 ms) noticed 35 ms late
		{now: 1200 * ms, due: 21, sent: 10, late: 13, gap: 155 * ms}, // 5..16 late; 0..9 queued past 100 ms
		{now: 1210 * ms, due: 22, sent: 11, late: 13, gap: 155 * ms}, // 10 too
	} {
		k.turn(nil, tt.now, 30*time.Millisecond, 100*time.Millisecond)
		if k.due != tt.due || k.sent != tt.sent || k.late != tt.late || int(k.queued) != tt.sent || k.maxGap != tt.gap {
			t.Fatalf("at %v: due %d sent %d late %d queued %d gap %v; want %d %d %d %d %v", time.Duration(tt.now), k.due, k.sent, k.late, k.queued,
				time.Duration(k.maxGap), tt.due, tt.sent, tt.late, tt.sent, time.Duration(tt.gap))
		}
	}
}

// A loop that cannot keep within LagTolerance (1 ns here: every turn is
// later than that) strains the trial: a failure with it is the
// generator's, never the device's.
func TestKeepAlivePacingLimit(t *testing.T) {
	p := pipeProberServer(t, Options{Duration: 100 * time.Millisecond, Conns: 2, LagTolerance: time.Nanosecond}, stack.Config{}, 0)
	tr, err := p.TPS(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tr.GeneratorStrain, "pacing: ") || tr.GeneratorLimit != "" || tr.Attempted != 10 {
		t.Fatalf("%+v", tr)
	}
	// A strained trial that failed is the generator's, not the device's.
	tr.Failed = 1
	capacity.Criteria{}.Judge(&tr)
	if tr.Verdict != capacity.Invalid {
		t.Fatalf("a failed, strained trial judged %v: %s", tr.Verdict, tr.Reason)
	}
}
