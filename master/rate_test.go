package master

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

func TestSplitRate(t *testing.T) {
	tests := []struct {
		name  string
		milli int64
		ids   []string
		want  map[string]int64
	}{
		{"none", 1000, nil, nil},
		{"one", 100_000, []string{"a"}, map[string]int64{"a": 100_000}},
		{"even", 100_000, []string{"b", "a"}, map[string]int64{"a": 50_000, "b": 50_000}},
		{"remainder to the first ids", 100_001, []string{"c", "b", "a"}, map[string]int64{"a": 33_334, "b": 33_334, "c": 33_333}},
		{"rate below one thousandth each", 2, []string{"a", "b", "c"}, map[string]int64{"a": 1, "b": 1, "c": 0}},
		{"zero", 0, []string{"a", "b"}, map[string]int64{"a": 0, "b": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitRate(tt.milli, tt.ids)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("SplitRate(%d, %v) = %v, want %v", tt.milli, tt.ids, got, tt.want)
			}
		})
	}
}

// TestSplitRateModel drives SplitRate and the master's resend rule (a
// worker is sent its share when it changed or it was not eligible at the
// last round) through random joins, leaves, missing and returning workers
// and rate changes, against a model: the shares always sum to the global
// rate exactly, differ by at most one thousandth, and every eligible
// worker's last received share equals its share.
func TestSplitRateModel(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 1))
	type wstate int
	const (
		gone wstate = iota
		up
		missing
	)
	workers := map[string]wstate{}
	received := map[string]int64{} // what each worker was last sent
	sent := map[string]int64{}     // the master's rateState.sent
	global := int64(100_000)
	for step := range 2000 {
		id := fmt.Sprintf("w%02d", r.IntN(12))
		switch r.IntN(5) {
		case 0:
			workers[id] = up // join (or come back)
		case 1:
			workers[id] = gone // leave
		case 2:
			if workers[id] == up {
				workers[id] = missing
			}
		case 3:
			global = r.Int64N(50_000_000) + r.Int64N(3) // odd rates for the rounding
		}
		var ids []string
		for w, s := range workers {
			if s == up {
				ids = append(ids, w)
			}
		}
		shares := SplitRate(global, ids)
		var sum, lo, hi int64
		lo = 1 << 62
		for _, s := range shares {
			sum += s
			lo, hi = min(lo, s), max(hi, s)
		}
		if len(ids) > 0 && (sum != global || hi-lo > 1) {
			t.Fatalf("step %d: shares %v of %d among %d workers: sum %d, spread %d", step, shares, global, len(ids), sum, hi-lo)
		}
		// The resend rule of applyRate.
		for w := range sent {
			if _, ok := shares[w]; !ok {
				delete(sent, w)
			}
		}
		sort.Strings(ids)
		for _, w := range ids {
			if last, ok := sent[w]; ok && last == shares[w] {
				continue
			}
			sent[w] = shares[w]
			received[w] = shares[w]
		}
		for _, w := range ids {
			if received[w] != shares[w] {
				t.Fatalf("step %d: worker %s runs %d, its share is %d", step, w, received[w], shares[w])
			}
		}
	}
}

func TestRateAtAndMean(t *testing.T) {
	stages := []RateStage{{Duration: 10 * time.Second, Rate: 100}, {Duration: 30 * time.Second, Rate: 400.5}}
	tests := []struct {
		at         time.Duration
		milli      int64
		mean       float64
		constMilli int64
	}{
		{0, 100_000, 100, 7_000},
		{5 * time.Second, 100_000, 100, 7_000},
		{10 * time.Second, 400_500, 100, 7_000},
		{20 * time.Second, 400_500, (100*10 + 400.5*10) / 20.0, 7_000},
		{30 * time.Second, 0, (100*10 + 400.5*20) / 30.0, 7_000},
	}
	for _, tt := range tests {
		if got := rateAt(stages, tt.at); got != tt.milli {
			t.Errorf("rateAt(%v) = %d, want %d", tt.at, got, tt.milli)
		}
		if got := meanRate(stages, tt.at); got != tt.mean {
			t.Errorf("meanRate(%v) = %v, want %v", tt.at, got, tt.mean)
		}
		if got := rateAt([]RateStage{{Rate: 7}}, tt.at); got != tt.constMilli {
			t.Errorf("constant rateAt(%v) = %d", tt.at, got)
		}
	}
}

func TestRampStages(t *testing.T) {
	// 0 → 100/s over 10 s, hold 100 until 20 s, 100 → 50 over 10 s.
	stages := []RateStage{{Duration: 10 * time.Second, Rate: 100, Ramp: true}, {Duration: 20 * time.Second, Rate: 100},
		{Duration: 30 * time.Second, Rate: 50, Ramp: true}}
	tests := []struct {
		at    time.Duration
		milli int64
		mean  float64
	}{
		{0, 0, 0},
		{5 * time.Second, 50_000, 25},             // 125 iterations in 5 s
		{10 * time.Second, 100_000, 50},           // 500 in 10 s
		{15 * time.Second, 100_000, 1000 / 15.0},  // + 500
		{25 * time.Second, 75_000, 1937.5 / 25.0}, // + 437.5
		{30 * time.Second, 0, 2250 / 30.0},
	}
	for _, tt := range tests {
		if got := rateAt(stages, tt.at); got != tt.milli {
			t.Errorf("rateAt(%v) = %d, want %d", tt.at, got, tt.milli)
		}
		if got := meanRate(stages, tt.at); math.Abs(got-tt.mean) > 1e-9 {
			t.Errorf("meanRate(%v) = %v, want %v", tt.at, got, tt.mean)
		}
	}
}

func TestCheckRate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		ok   bool
	}{
		{"constant", Options{Rate: []RateStage{{Rate: 10}}}, true},
		{"stages", Options{Rate: []RateStage{{Duration: time.Second, Rate: 10}, {Duration: 2 * time.Second, Rate: 0}}}, true},
		{"negative", Options{Rate: []RateStage{{Rate: -1}}}, false},
		{"too high", Options{Rate: []RateStage{{Rate: MaxRate * 2}}}, false},
		{"not increasing", Options{Rate: []RateStage{{Duration: 2 * time.Second, Rate: 1}, {Duration: time.Second, Rate: 1}}}, false},
		{"zero duration among stages", Options{Rate: []RateStage{{Rate: 1}, {Duration: time.Second, Rate: 1}}}, false},
		{"with user stages", Options{Rate: []RateStage{{Rate: 1}}, Stages: []Stage{{Duration: time.Second, Users: 1}}}, false},
		{"stages with a run time", Options{Rate: []RateStage{{Duration: time.Second, Rate: 1}}, RunTime: time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRate(&tt.o)
			if (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrOptions) {
				t.Errorf("checkRate: %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// lastRate returns the rate of the last cicada_rate message received so
// far, and whether there was one.
func lastRate(w *fakeWorker) (float64, bool) {
	var r float64
	ok := false
	for _, m := range w.drain() {
		if m.Type != protocol.TypeCicadaRate {
			continue
		}
		r, ok = m.Data.(*protocol.Custom).Data.(map[string]any)["rate"].(float64)
	}
	return r, ok
}

// TestRateSplitJoinLeaveMissing runs the master's split with fake workers:
// the Python worker gets no rate (one warning line), a joining cicada
// worker halves the shares, a missing one gives its share back.
func TestRateSplitJoinLeaveMissing(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "U", Weight: 1}}
	o.Rate = []RateStage{{Rate: 100}}
	o.HeartbeatInterval = 100 * time.Millisecond // missing after 300 ms without heartbeats
	h := startMaster(t, o, logs)
	a, py := h.worker("a"), h.worker("py")
	a.ready(skipCheck)
	py.ready(ready("2.12.1"))
	running := func() string { return protocol.StateRunning }
	defer a.beatEvery(20*time.Millisecond, running)()
	defer py.beatEvery(20*time.Millisecond, running)()
	if err := h.m.Start(4, 100, nil); err != nil {
		t.Fatal(err)
	}
	var got map[string]float64
	poll := func(what string, want map[string]float64, ws map[string]*fakeWorker) {
		t.Helper()
		got = map[string]float64{}
		eventually(t, waitShort, what, func() bool {
			for id, w := range ws {
				if r, ok := lastRate(w); ok {
					got[id] = r
				}
			}
			return fmt.Sprint(got) == fmt.Sprint(want)
		})
	}
	poll("worker a gets the whole rate", map[string]float64{"a": 100}, map[string]*fakeWorker{"a": a})
	if r, ok := lastRate(py); ok {
		t.Errorf("the Python worker was sent a rate %v", r)
	}
	if n := logs.count("Python Locust worker(s) cannot pace a rate"); n != 1 {
		t.Errorf("%d warnings about the Python worker, want 1:\n%s", n, logs)
	}

	b := h.worker("b")
	b.ready(skipCheck)
	stopB := b.beatEvery(20*time.Millisecond, running)
	poll("a and b share the rate", map[string]float64{"a": 50, "b": 50}, map[string]*fakeWorker{"a": a, "b": b})

	stopB() // b goes missing: a takes the whole rate again
	poll("a alone after b went missing", map[string]float64{"a": 100}, map[string]*fakeWorker{"a": a})

	// b comes back (heartbeats again): its share is sent anew.
	defer b.beatEvery(20*time.Millisecond, running)()
	poll("b back", map[string]float64{"a": 50, "b": 50}, map[string]*fakeWorker{"a": a, "b": b})
}

func TestRateRefusedWithoutCicadaWorker(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "U", Weight: 1}}
	o.Rate = []RateStage{{Rate: 100}}
	h := startMaster(t, o, logs)
	py := h.worker("py")
	py.ready(ready("2.12.1"))
	if err := h.m.Start(4, 100, nil); !errors.Is(err, ErrRateNoCicadaWorker) {
		t.Fatalf("Start = %v, want ErrRateNoCicadaWorker", err)
	}
	for _, m := range py.drain() {
		if m.Type == protocol.TypeSpawn || m.Type == protocol.TypeCicadaRate {
			t.Errorf("the Python worker got %s", m.Type)
		}
	}
}
