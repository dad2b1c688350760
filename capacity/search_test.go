package capacity

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// device is a model of a device under test: it sustains loads up to limit,
// moved by a relative noise on each trial, and a generator that can hold
// loads up to genLimit (0: any).
type device struct {
	limit, noise, genLimit float64
	rng                    *rand.Rand
	trials                 int
}

func (d *device) trial(_ context.Context, load float64) (Trial, error) {
	d.trials++
	t := Trial{Attempted: int64(math.Ceil(load)) + 100, Achieved: load, P50: time.Millisecond, P95: 2 * time.Millisecond}
	if d.genLimit > 0 && load > d.genLimit {
		t.GeneratorLimit = "open files: need more than the limit"
		return t, nil
	}
	eff := d.limit * (1 + d.noise*(2*d.rng.Float64()-1))
	if load > eff {
		t.Failed = int64(load - eff + 1)
		t.Achieved = eff
	}
	return t, nil
}

func TestSearchFindsLimit(t *testing.T) {
	for _, tt := range []struct {
		name                string
		limit, noise        float64
		s                   Search
		tolerance           float64 // relative
		wantFound, wantCeil bool
	}{
		{"exact integer", 300, 0, Search{Start: 10, Max: 100000, Integer: true, Resolution: 0.001}, 0.001, true, false},
		{"rate 5% resolution", 1234.5, 0, Search{Start: 100, Max: 1e6}, 0.05, true, false},
		{"noisy 2% with confirm", 5000, 0.02, Search{Start: 100, Max: 1e6, Resolution: 0.02, Confirm: true}, 0.02 + 0.02 + 0.01, true, false},
		{"start above limit", 50, 0, Search{Start: 400, Max: 1000, Integer: true}, 0.05, true, false},
		{"step factor 1.5", 777, 0, Search{Start: 10, Max: 1e5, StepFactor: 1.5, Resolution: 0.01}, 0.01, true, false},
		{"ceiling", 1e9, 0, Search{Start: 10, Max: 1000}, 0, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 20; seed++ {
				d := &device{limit: tt.limit, noise: tt.noise, rng: rand.New(rand.NewPCG(seed, 7))}
				r, err := tt.s.Run(context.Background(), d.trial)
				if err != nil {
					t.Fatal(err)
				}
				if r.Found != tt.wantFound || r.Ceiling != tt.wantCeil || r.Invalid != "" {
					t.Fatalf("seed %d: found %v ceiling %v invalid %q; want %v %v: %+v", seed, r.Found, r.Ceiling, r.Invalid, tt.wantFound, tt.wantCeil, r.Trials)
				}
				if tt.wantCeil {
					if r.Max != tt.s.Max {
						t.Fatalf("ceiling at %v, want %v", r.Max, tt.s.Max)
					}
					return
				}
				if r.Max > tt.limit*(1+tt.noise) || r.Max < tt.limit*(1-tt.tolerance)-1 {
					t.Fatalf("seed %d: found %v, want %v within %v%%: %+v", seed, r.Max, tt.limit, tt.tolerance*100, loads(r))
				}
				if len(r.Trials) > 30 {
					t.Fatalf("%d trials", len(r.Trials))
				}
				if b, ok := r.Best(); !ok || b.Verdict != Pass || b.Load != r.Max {
					t.Fatalf("Best = %+v, %v", b, ok)
				}
			}
		})
	}
}

func loads(r Result) []float64 {
	var l []float64
	for _, t := range r.Trials {
		l = append(l, t.Load)
	}
	return l
}

// A generator that runs out before the device is reported as such: the
// search stops at the first invalid trial, reports no maximum as found and
// keeps the highest pass only as a lower bound.
func TestSearchGeneratorLimitIsInvalid(t *testing.T) {
	for _, tt := range []struct {
		name        string
		genLimit    float64
		wantLowerBy float64
	}{
		{"in step phase", 150, 80},
		{"in binary phase", 400, 320},
		{"first trial", 5, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &device{limit: 500, genLimit: tt.genLimit, rng: rand.New(rand.NewPCG(1, 2))}
			r, err := Search{Start: 10, Max: 10000, Integer: true, Resolution: 0.01}.Run(context.Background(), d.trial)
			if err != nil {
				t.Fatal(err)
			}
			if r.Found || r.Invalid == "" || r.Trials[len(r.Trials)-1].Verdict != Invalid {
				t.Fatalf("found %v invalid %q last %+v; want an invalid search", r.Found, r.Invalid, r.Trials[len(r.Trials)-1])
			}
			if r.Max > tt.genLimit || r.Max < tt.wantLowerBy {
				t.Fatalf("lower bound %v, want in [%v, %v]", r.Max, tt.wantLowerBy, tt.genLimit)
			}
			if s := r.Summary("connections"); !strings.HasPrefix(s, "INVALID: the generator was the limit (open files") {
				t.Fatalf("summary %q", s)
			}
		})
	}
}

func TestCriteriaJudge(t *testing.T) {
	for _, tt := range []struct {
		name   string
		c      Criteria
		t      Trial
		want   Verdict
		reason string
	}{
		{"clean", Criteria{}, Trial{Load: 10, Attempted: 10, Achieved: 10}, Pass, ""},
		{"one failure", Criteria{}, Trial{Load: 10, Attempted: 10, Failed: 1}, Fail, "1 of 10 failed"},
		{"allowed ratio", Criteria{MaxFailureRatio: 0.1}, Trial{Load: 10, Attempted: 10, Failed: 1}, Pass, ""},
		{"over ratio", Criteria{MaxFailureRatio: 0.1}, Trial{Load: 10, Attempted: 10, Failed: 2}, Fail, "2 of 10 failed"},
		{"second round", Criteria{}, Trial{Load: 10, Attempted: 10, SecondRound: 10, SecondRoundFailed: 3}, Fail, "second round: 3 of 10"},
		{"latency p95", Criteria{LatencyBound: time.Millisecond}, Trial{Load: 1, Attempted: 1, P95: 2 * time.Millisecond}, Fail, "p95 latency 2ms over 1ms"},
		{"latency p99 ok p95", Criteria{LatencyBound: 3 * time.Millisecond, LatencyPercentile: 99}, Trial{Load: 1, Attempted: 1, P95: 2 * time.Millisecond, P99: 4 * time.Millisecond}, Fail, "p99"},
		{"achieved", Criteria{MinAchieved: 0.95}, Trial{Load: 100, Attempted: 90, Achieved: 90}, Fail, "achieved 90 of 100"},
		{"generator", Criteria{}, Trial{Load: 100, Attempted: 90, Failed: 90, GeneratorLimit: "CPU saturated"}, Invalid, "generator limit: CPU saturated"},
		{"nothing", Criteria{}, Trial{Load: 100}, Fail, "nothing attempted"},
		{"strained pass stands", Criteria{MinAchieved: 0.95}, Trial{Load: 100, Attempted: 100, Achieved: 99, GeneratorStrain: "pacing: 9 of 100 late"}, Pass, "passed with the generator strained: pacing"},
		{"strained failure is invalid", Criteria{MinAchieved: 0.95}, Trial{Load: 100, Attempted: 100, Achieved: 80, GeneratorStrain: "CPU saturated: 97% of 1 cores"}, Invalid, "generator limit: CPU saturated: 97% of 1 cores (the trial failed: achieved 80 of 100"},
		{"limit beats strain", Criteria{}, Trial{Load: 100, GeneratorLimit: "open-files: 64", GeneratorStrain: "pacing"}, Invalid, "generator limit: open-files: 64"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := tt.t
			tt.c.Judge(&tr)
			if tr.Verdict != tt.want || !strings.Contains(tr.Reason, tt.reason) || (tt.reason == "") != (tr.Reason == "") {
				t.Fatalf("Judge = %v %q; want %v containing %q", tr.Verdict, tr.Reason, tt.want, tt.reason)
			}
		})
	}
}

func TestSearchRefusesBadParameters(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    Search
		want string
	}{
		{"zero start", Search{Max: 10}, "start 0"},
		{"NaN start", Search{Start: math.NaN(), Max: 10}, "start NaN"},
		{"max below start", Search{Start: 10, Max: 5}, "max 5"},
		{"step factor 1", Search{Start: 1, Max: 5, StepFactor: 1}, "step factor"},
		{"resolution 1", Search{Start: 1, Max: 5, Resolution: 1}, "resolution"},
		{"failure ratio", Search{Start: 1, Max: 5, Criteria: Criteria{MaxFailureRatio: -0.1}}, "failure ratio"},
		{"percentile", Search{Start: 1, Max: 5, Criteria: Criteria{LatencyPercentile: 90}}, "percentile 90"},
		{"integer start", Search{Start: 0.5, Max: 5, Integer: true}, "whole loads"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.s.Run(context.Background(), func(context.Context, float64) (Trial, error) {
				t.Fatal("trial ran")
				return Trial{}, nil
			})
			if !errors.Is(err, ErrBadSearch) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v; want ErrBadSearch naming %q", err, tt.want)
			}
		})
	}
}

func TestSearchTrialErrorAndCancel(t *testing.T) {
	boom := errors.New("boom")
	_, err := Search{Start: 1, Max: 5}.Run(context.Background(), func(context.Context, float64) (Trial, error) { return Trial{}, boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "trial at 1") {
		t.Fatalf("Run = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	r, err := Search{Start: 1, Max: 1e9}.Run(ctx, func(context.Context, float64) (Trial, error) {
		n++
		if n == 3 {
			cancel()
		}
		return Trial{Attempted: 1, Achieved: 1}, nil
	})
	if !errors.Is(err, context.Canceled) || len(r.Trials) != 3 {
		t.Fatalf("Run = %v after %d trials", err, len(r.Trials))
	}
}

func sampleReport() *Report {
	d := &device{limit: 300, rng: rand.New(rand.NewPCG(1, 1))}
	r, _ := Search{Start: 100, Max: 1000, Integer: true, Resolution: 0.01}.Run(context.Background(), d.trial)
	r.Trials[1].Reason = `<script>alert("x")</script>`
	return &Report{Test: "concurrent", Title: "Concurrent <TCP> connection capacity", RFC: "RFC 9411 7.5", Unit: "connections",
		Params: []Param{{"target", `http://198.18.1.1/"&<b>`}, {"trial", "2s"}}, Result: r,
		Latency: &Trial{Load: 150, Attempted: 150, P50: time.Millisecond}, LatencyFraction: 0.5}
}

func TestReportFormats(t *testing.T) {
	rep := sampleReport()
	var tb, cb, hb bytes.Buffer
	if err := rep.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), "Result: maximum 300 connections") || !strings.Contains(tb.String(), "latency") {
		t.Fatalf("table:\n%s", tb.String())
	}
	if err := rep.WriteCSV(&cb); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	last := rows[len(rows)-1]
	if len(rows) != len(rep.Result.Trials)+3 || last[0] != "result" || last[3] != "300" || last[15] != "found" {
		t.Fatalf("csv rows %d, last %q", len(rows), last)
	}
	if err := rep.WriteHTML(&hb); err != nil {
		t.Fatal(err)
	}
	h := hb.String()
	for _, bad := range []string{"<script>", "<TCP>", `"&<b>`} {
		if strings.Contains(h, bad) {
			t.Fatalf("html holds unescaped %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;", "<svg", "max 300", `stroke-dasharray`, "Concurrent &lt;TCP&gt;"} {
		if !strings.Contains(h, want) {
			t.Fatalf("html lacks %q", want)
		}
	}
	if n := strings.Count(h, "<circle"); n != len(rep.Result.Trials) {
		t.Fatalf("%d points for %d trials", n, len(rep.Result.Trials))
	}
}

func BenchmarkSearch(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		d := &device{limit: 12345, rng: rand.New(rand.NewPCG(1, uint64(i)))}
		if _, err := (Search{Start: 10, Max: 1e7, Resolution: 0.001}).Run(context.Background(), d.trial); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSearchNotConverged(t *testing.T) {
	d := &device{limit: 300, rng: rand.New(rand.NewPCG(1, 1))}
	r, err := Search{Start: 10, Max: 1e6, MaxTrials: 7, Integer: true}.Run(context.Background(), d.trial)
	if err != nil {
		t.Fatal(err)
	}
	if r.Found || len(r.Trials) != 7 || r.Max > 300 || r.FailedAt <= 300 {
		t.Fatalf("found %v after %d trials, between %v and %v", r.Found, len(r.Trials), r.Max, r.FailedAt)
	}
	if s := r.Summary("c"); !strings.Contains(s, "not converged") {
		t.Fatalf("summary %q", s)
	}
}

func TestSearchElapsed(t *testing.T) {
	r, err := Search{Start: 1, Max: 2}.Run(context.Background(), func(context.Context, float64) (Trial, error) {
		time.Sleep(2 * time.Millisecond) // the trial's own duration, measured
		return Trial{Attempted: 1, Achieved: 1}, nil
	})
	if err != nil || r.Elapsed < 4*time.Millisecond {
		t.Fatalf("Elapsed %v, %v", r.Elapsed, err)
	}
}

// A device that fails every load: the search goes down to Min and reports
// no maximum, in a bounded number of trials.
func TestSearchNothingPasses(t *testing.T) {
	for _, s := range []Search{{Start: 100, Max: 1000}, {Start: 100, Max: 1000, Integer: true}, {Start: 100, Max: 1000, Min: 30}} {
		r, err := s.Run(context.Background(), func(context.Context, float64) (Trial, error) {
			return Trial{Attempted: 1, Failed: 1, Errors: map[string]int64{"refused": 1}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if r.Found || r.Max != 0 || len(r.Trials) > 9 || r.Outcome() != "none" {
			t.Fatalf("%+v: found %v max %v after %v", s, r.Found, r.Max, loads(r))
		}
		if !strings.Contains(r.Trials[0].Reason, "1 of 1 failed (allowed 0%): refused 1") {
			t.Fatalf("reason %q", r.Trials[0].Reason)
		}
	}
}

// A transient generator stall is retried; a lasting limit stops the search
// after its retries, every trial reported.
func TestSearchRetryInvalid(t *testing.T) {
	stalls := map[float64]int{400: 1} // the first trial at 400 stalls once
	d := &device{limit: 500, rng: rand.New(rand.NewPCG(1, 2))}
	r, err := Search{Start: 100, Max: 10000, Integer: true, RetryInvalid: 1}.Run(context.Background(), func(ctx context.Context, load float64) (Trial, error) {
		if stalls[load] > 0 {
			stalls[load]--
			return Trial{Attempted: 1, GeneratorLimit: "pacing: late"}, nil
		}
		return d.trial(ctx, load)
	})
	if err != nil || !r.Found || r.Invalid != "" || r.Max < 475 || r.Max > 500 {
		t.Fatalf("found %v max %v invalid %q err %v: %v", r.Found, r.Max, r.Invalid, err, loads(r))
	}
	if r.Trials[2].Verdict != Invalid || r.Trials[3].Load != 400 || r.Trials[3].Verdict != Pass {
		t.Fatalf("trials %+v", r.Trials[:4])
	}
	d = &device{limit: 500, genLimit: 150, rng: rand.New(rand.NewPCG(1, 2))}
	r, err = Search{Start: 100, Max: 10000, Integer: true, RetryInvalid: 2}.Run(context.Background(), d.trial)
	if err != nil || r.Invalid == "" || len(r.Trials) != 4 || r.Max != 100 {
		t.Fatalf("lasting limit: invalid %q, %d trials, max %v, %v", r.Invalid, len(r.Trials), r.Max, err)
	}
}

func TestSearchPause(t *testing.T) {
	var last time.Time
	var gaps []time.Duration
	_, err := Search{Start: 1, Max: 4, Pause: 20 * time.Millisecond}.Run(context.Background(), func(context.Context, float64) (Trial, error) {
		if !last.IsZero() {
			gaps = append(gaps, time.Since(last))
		}
		last = time.Now()
		return Trial{Attempted: 1, Achieved: 1}, nil
	})
	if err != nil || len(gaps) != 2 || gaps[0] < 20*time.Millisecond || gaps[1] < 20*time.Millisecond {
		t.Fatalf("gaps %v, %v", gaps, err)
	}
	if _, err := (Search{Start: 1, Max: 2, Pause: -1}).Run(context.Background(), nil); !errors.Is(err, ErrBadSearch) {
		t.Fatalf("negative pause: %v", err)
	}
}
