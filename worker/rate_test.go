package worker

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rateRec records what the pacer and paced users report.
type rateRec struct {
	nopRecorder
	dropped atomic.Int64
	mu      sync.Mutex
	service []time.Duration
	correct []time.Duration
}

func (r *rateRec) RecordCorrected(method, name string, service, corrected time.Duration, cl int64, failure string) {
	r.mu.Lock()
	r.service = append(r.service, service)
	r.correct = append(r.correct, corrected)
	r.mu.Unlock()
}

func (r *rateRec) AddDropped(n int64) { r.dropped.Add(n) }

func (pc *pacer) freeCount() int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return len(pc.free) - pc.head
}

// newRatePool is a pool in rate mode with n users of a class whose task
// records a 5 ms request and then waits for release (closed to let every
// task end).
func newRatePool(t *testing.T, n int64, release <-chan struct{}) (*pool, *pacer, *rateRec) {
	t.Helper()
	task := Task{Name: "t", Fn: func(ctx context.Context, u *User) error {
		u.Record("GET", "/x", 5*time.Millisecond, 0, nil)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}}
	p, _ := newTestPool(t, &UserClass{Name: "A", Wait: Constant(time.Hour), Tasks: []Task{task}})
	rec := &rateRec{}
	p.env.rec = rec
	pc := newPacer(p, rec, nil)
	pc.rate = 10
	p.rate.Store(pc)
	_, b := p.apply(map[string]int64{"A": n})
	b.start()
	waitFor(t, 5*time.Second, "users parked", func() bool { return pc.freeCount() == int(n) })
	return p, pc, rec
}

// round runs one pacer round at now and starts the claimed users, as loop
// does.
func (pc *pacer) testRound(now int64) (started int, dropped int64) {
	pc.mu.Lock()
	starts, dropped, _ := pc.roundLocked(now, nil)
	pc.mu.Unlock()
	for _, u := range starts {
		go u.step()
	}
	pc.rec.AddDropped(dropped)
	return len(starts), dropped
}

func TestPacerRounds(t *testing.T) {
	const anchor = int64(1_000_000_000_000)
	tests := []struct {
		name        string
		users       int64
		at          time.Duration // after the anchor
		wantStarted int
		wantDropped int64
		wantLags    []time.Duration // of the started iterations, oldest first
	}{
		// Due times 0, 100 ms, ..., 1 s: 11 due, 3 users.
		{"all busy after three", 3, time.Second, 3, 8, []time.Duration{time.Second, 900 * time.Millisecond, 800 * time.Millisecond}},
		{"enough users", 20, 350 * time.Millisecond, 4, 0, []time.Duration{350 * time.Millisecond, 250 * time.Millisecond, 150 * time.Millisecond, 50 * time.Millisecond}},
		// 5 s late: due times older than maxCatchUp (the first 40) are dropped at once.
		{"beyond the catch-up bound", 3, 5 * time.Second, 3, 48, []time.Duration{time.Second, 900 * time.Millisecond, 800 * time.Millisecond}},
		{"nothing due yet", 3, -time.Millisecond, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			p, pc, rec := newRatePool(t, tt.users, release)
			pc.anchor = anchor
			now := anchor + int64(tt.at)
			pc.now = func() time.Time { return time.Unix(0, now) } // the tasks begin "at once"
			started, dropped := pc.testRound(now)
			if started != tt.wantStarted || dropped != tt.wantDropped {
				t.Fatalf("round at +%v: started %d, dropped %d; want %d, %d", tt.at, started, dropped, tt.wantStarted, tt.wantDropped)
			}
			waitFor(t, 5*time.Second, "the started iterations' requests", func() bool {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				return len(rec.correct) == tt.wantStarted
			})
			rec.mu.Lock()
			lags := make([]time.Duration, len(rec.correct))
			for i := range rec.correct {
				if rec.service[i] != 5*time.Millisecond {
					t.Errorf("service time %v, want the recorded 5ms", rec.service[i])
				}
				lags[i] = rec.correct[i] - rec.service[i]
			}
			rec.mu.Unlock()
			slices.Sort(lags)
			slices.Reverse(lags)
			if !slices.Equal(lags, tt.wantLags) {
				t.Errorf("corrected minus service = %v, want %v", lags, tt.wantLags)
			}
			if rec.dropped.Load() != tt.wantDropped {
				t.Errorf("recorder dropped %d, want %d", rec.dropped.Load(), tt.wantDropped)
			}
			close(release)
			waitFor(t, 5*time.Second, "the users parked again", func() bool { return pc.freeCount() == int(tt.users) })
			if p.nLive.Load() != tt.users {
				t.Errorf("live users %d, want %d", p.nLive.Load(), tt.users)
			}
		})
	}
}

// TestPacerStopParkedAndBusy stops users while some are parked and some
// run an iteration: all finish, and a stopped user is never started.
func TestPacerStopParkedAndBusy(t *testing.T) {
	release := make(chan struct{})
	p, pc, _ := newRatePool(t, 4, release)
	pc.anchor = 0
	if started, _ := pc.testRound(int64(150 * time.Millisecond)); started != 2 {
		t.Fatalf("started %d, want 2", started)
	}
	b := p.stopAll()
	b.start()
	close(release)
	if !b.wait(5*time.Second, 5*time.Second, nil) {
		t.Fatal("users did not stop")
	}
	if started, dropped := pc.testRound(int64(time.Second)); started != 0 || dropped == 0 {
		t.Errorf("after the stop: started %d, dropped %d; want none started", started, dropped)
	}
}

// BenchmarkPacerEvenness runs the real pacer at 20,000 iterations per
// second with 64 users and reports the spread of the inter-arrival times
// of the iterations' starts (ideal: 50 µs each): their standard deviation
// and 99th percentile, in µs. Bound it with -benchtime (20000x: 1 s).
func BenchmarkPacerEvenness(b *testing.B) {
	const rate = 20_000
	starts := make([]int64, b.N)
	var n atomic.Int64
	done := make(chan struct{})
	task := Task{Name: "t", Fn: func(ctx context.Context, u *User) error {
		i := n.Add(1) - 1
		if i < int64(len(starts)) {
			starts[i] = time.Now().UnixNano()
			if i == int64(len(starts))-1 {
				close(done)
			}
		}
		return nil
	}}
	p, _ := newTestPool(b, &UserClass{Name: "A", Tasks: []Task{task}})
	rec := &rateRec{}
	p.env.rec = rec
	pc := newPacer(p, rec, nil)
	p.rate.Store(pc)
	_, bt := p.apply(map[string]int64{"A": 64})
	bt.start()
	waitFor(b, 5*time.Second, "users parked", func() bool { return pc.freeCount() == 64 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	go pc.loop(ctx)
	pc.setRate(rate)
	select {
	case <-done:
	case <-time.After(time.Duration(b.N/rate+10) * time.Second):
		b.Fatalf("only %d of %d iterations started", n.Load(), b.N)
	}
	b.StopTimer()
	pc.setRate(0)
	slices.Sort(starts)
	gaps := make([]float64, 0, len(starts))
	var sum float64
	for i := 1; i < len(starts); i++ {
		g := float64(starts[i]-starts[i-1]) / 1e3
		gaps = append(gaps, g)
		sum += g
	}
	if len(gaps) == 0 {
		return
	}
	mean := sum / float64(len(gaps))
	var sq float64
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
	}
	slices.Sort(gaps)
	b.ReportMetric(mean, "gap-mean-µs")
	b.ReportMetric(math.Sqrt(sq/float64(len(gaps))), "gap-stdev-µs")
	b.ReportMetric(gaps[int(float64(len(gaps)-1)*0.99)], "gap-p99-µs")
	b.ReportMetric(float64(rec.dropped.Load()), "dropped")
	achieved := float64(len(starts)-1) / (float64(starts[len(starts)-1]-starts[0]) / 1e9)
	b.ReportMetric(achieved, "achieved/s")
}

// TestPacerRateChangeContinues: a new rate takes over at the next due time
// of the old one (no extra iteration at the change), at most one new
// interval away.
func TestPacerRateChangeContinues(t *testing.T) {
	tests := []struct {
		name       string
		from, to   float64
		nextAt     time.Duration // the old schedule's next due time after the change
		wantAnchor time.Duration
	}{
		{"faster", 10, 100, 100 * time.Millisecond, 10 * time.Millisecond}, // capped: one new interval
		{"slower", 100, 10, 10 * time.Millisecond, 10 * time.Millisecond},
		{"same", 10, 10, 100 * time.Millisecond, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := newPacer(nil, &rateRec{}, func() time.Time { return time.Unix(0, 0) })
			pc.rate = tt.from
			pc.anchor, pc.n = int64(tt.nextAt), 0
			pc.setRate(tt.to)
			if pc.anchor != int64(tt.wantAnchor) || pc.n != 0 || pc.rate != tt.to || pc.reset {
				t.Errorf("anchor %v n %d rate %v reset %v; want anchor %v", time.Duration(pc.anchor), pc.n, pc.rate, pc.reset, tt.wantAnchor)
			}
		})
	}
	pc := newPacer(nil, &rateRec{}, nil)
	pc.setRate(5)
	if !pc.reset {
		t.Error("a first rate does not restart the schedule")
	}
}

// TestSetRateAndStop: SetRate refuses what it cannot pace; a stop leaves
// rate mode (the pacer's goroutine ends), and the next rate starts anew.
func TestSetRateAndStop(t *testing.T) {
	w, err := New(Options{}, Scenario{Classes: []UserClass{{Name: "A", Tasks: []Task{{Name: "t", Fn: func(context.Context, *User) error { return nil }}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetRate(1); !errors.Is(err, ErrRate) {
		t.Errorf("SetRate before Run = %v, want ErrRate", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.env.runCtx = ctx
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := w.SetRate(bad); !errors.Is(err, ErrRate) || !strings.Contains(err.Error(), "finite") {
			t.Errorf("SetRate(%v) = %v, want ErrRate", bad, err)
		}
	}
	if err := w.SetRate(50); err != nil {
		t.Fatal(err)
	}
	pc := w.pool.rate.Load()
	if rs := w.RateStats(); pc == nil || rs.Rate != 50 {
		t.Fatalf("after SetRate(50): pacer %v, stats %+v", pc, rs)
	}
	w.leaveRate()
	if w.pool.rate.Load() != nil || w.RateStats() != (RateStats{}) {
		t.Error("a stop did not leave rate mode")
	}
	if err := w.SetRate(20); err != nil || w.pool.rate.Load() == pc || w.RateStats().Rate != 20 {
		t.Errorf("SetRate after a stop: %v, same pacer %v", err, w.pool.rate.Load() == pc)
	}
	w.leaveRate()
	rtW, err := New(Options{Runtime: &fakeRuntime{}}, dataOnlyClasses())
	if err != nil {
		t.Fatal(err)
	}
	rtW.env.runCtx = ctx
	if err := rtW.SetRate(1); !errors.Is(err, ErrRate) || !strings.Contains(err.Error(), "data plane") {
		t.Errorf("SetRate with a Runtime = %v, want a refusal naming the data plane", err)
	}
}
