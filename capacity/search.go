package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// ErrBadSearch is wrapped by Search.Run for parameters it cannot honour.
var ErrBadSearch = errors.New("capacity: invalid search")

// Verdict is a trial's outcome.
type Verdict int

const (
	// Pass: the device sustained the load within the criteria.
	Pass Verdict = iota
	// Fail: the device did not.
	Fail
	// Invalid: the generator, not the device, was the limit.
	Invalid
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	case Invalid:
		return "invalid"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Trial is one trial's measurement, filled by a TrialFunc; Judge sets
// Verdict and Reason.
type Trial struct {
	// Load is the load offered (the search's unit).
	Load float64
	// Duration is the trial's measured length.
	Duration time.Duration
	// Attempted, Failed count connections or transactions.
	Attempted, Failed int64
	// Achieved is the load achieved in the search's unit (connections
	// held, connections or transactions per second, Mbit/s).
	Achieved float64
	// Bytes is the payload received.
	Bytes int64
	// Latency percentiles of the trial's connections or transactions.
	P50, P95, P99, Max time.Duration
	// SecondRound counts the requests on held connections (concurrent
	// capacity) and those that failed; zero when the test has none.
	SecondRound, SecondRoundFailed int64
	// Errors counts failures by kind ("timeout", "refused", "reset"...).
	Errors map[string]int64
	// GeneratorLimit, when set, names the generator's own limit that the
	// trial reached (open files, ports, CPU, pacing): the trial is Invalid.
	GeneratorLimit string
	// GeneratorStrain, when set, names a soft generator limit the trial
	// showed (its CPU busy, its pacer late): a trial that failed with it is
	// Invalid (the generator may have caused the failure), one that passed
	// stands (the device sustained the load achieved, strained generator
	// or not).
	GeneratorStrain string
	// TLS is what a trial over TLS negotiated (nil over plain TCP).
	TLS *TLSInfo
	// Mix counts a traffic mix's transactions per object size (nil
	// without a mix).
	Mix []MixCount
	// Samples, when the driver was asked to keep them (probe's
	// KeepSamples, for a cluster worker), are the latency samples sorted;
	// nil otherwise. Reports do not use them.
	Samples []time.Duration

	Verdict Verdict
	Reason  string
}

// Criteria are a trial's acceptance criteria. The zero value accepts no
// failure and sets no latency or achieved-load bound.
type Criteria struct {
	// MaxFailureRatio is the fraction of attempts that may fail (RFC 9411:
	// 0.00001; RFC 3511: 0).
	MaxFailureRatio float64
	// LatencyBound, if set, bounds LatencyPercentile's latency.
	LatencyBound time.Duration
	// LatencyPercentile is 50, 95 or 99; if zero, 95.
	LatencyPercentile float64
	// MinAchieved, if set, is the fraction of the offered load the trial
	// must achieve (rate tests: 0.95 lets pacing jitter pass).
	MinAchieved float64
}

// Judge sets t.Verdict and t.Reason.
func (c Criteria) Judge(t *Trial) {
	switch {
	case t.GeneratorLimit != "":
		t.Verdict, t.Reason = Invalid, "generator limit: "+t.GeneratorLimit
	case t.Attempted == 0 && t.Load > 0:
		t.Verdict, t.Reason = Fail, "nothing attempted"
	case float64(t.Failed) > c.MaxFailureRatio*float64(t.Attempted):
		t.Verdict, t.Reason = Fail, fmt.Sprintf("%d of %d failed (allowed %.6g%%)", t.Failed, t.Attempted, c.MaxFailureRatio*100)
	case t.SecondRoundFailed > 0:
		t.Verdict, t.Reason = Fail, fmt.Sprintf("second round: %d of %d held connections failed", t.SecondRoundFailed, t.SecondRound)
	case c.LatencyBound > 0 && c.latency(t) > c.LatencyBound:
		t.Verdict, t.Reason = Fail, fmt.Sprintf("p%g latency %v over %v", c.percentile(), c.latency(t), c.LatencyBound)
	case c.MinAchieved > 0 && t.Achieved < c.MinAchieved*t.Load:
		t.Verdict, t.Reason = Fail, fmt.Sprintf("achieved %.4g of %.4g offered (below %g%%)", t.Achieved, t.Load, c.MinAchieved*100)
	default:
		t.Verdict, t.Reason = Pass, ""
	}
	if t.GeneratorStrain != "" && t.Verdict != Invalid {
		if t.Verdict == Fail {
			t.Verdict, t.Reason = Invalid, "generator limit: "+t.GeneratorStrain+" (the trial failed: "+t.Reason+")"
			t.GeneratorLimit = t.GeneratorStrain
		} else {
			t.Reason = "passed with the generator strained: " + t.GeneratorStrain
		}
	}
	if len(t.Errors) > 0 && t.Verdict != Invalid {
		if t.Reason != "" {
			t.Reason += ": "
		}
		t.Reason += t.ErrorSummary()
	}
}

// ErrorSummary lists Errors as "kind count, ..." by kind.
func (t *Trial) ErrorSummary() string {
	keys := make([]string, 0, len(t.Errors))
	for k := range t.Errors {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, t.Errors[k])
	}
	return b.String()
}

func (c Criteria) percentile() float64 {
	if c.LatencyPercentile == 0 {
		return 95
	}
	return c.LatencyPercentile
}

func (c Criteria) latency(t *Trial) time.Duration {
	switch c.percentile() {
	case 50:
		return t.P50
	case 99:
		return t.P99
	}
	return t.P95
}

// TrialFunc runs one trial at load and returns its measurement (Verdict
// unset). An error ends the search (the trial could not run at all).
type TrialFunc func(ctx context.Context, load float64) (Trial, error)

// Search is a step-then-binary search's parameters.
type Search struct {
	// Start is the first trial's load (> 0).
	Start float64
	// Max is the highest load tried (>= Start).
	Max float64
	// Min is the lowest load tried when Start fails; if zero, Start/100
	// (1 for whole loads). No pass down to it: no maximum found.
	Min float64
	// StepFactor multiplies the load after each pass of the step phase;
	// if zero, 2.
	StepFactor float64
	// Resolution ends the binary phase when hi-lo <= Resolution*lo; if
	// zero, 0.05.
	Resolution float64
	// MinStep, if set, ends it when hi-lo <= MinStep (loads in whole
	// connections: 1).
	MinStep float64
	// Integer rounds every load down to a whole number.
	Integer bool
	// MaxTrials bounds the trials; if zero, 30.
	MaxTrials int
	// Confirm repeats the found maximum once before reporting it.
	Confirm bool
	// Pause is the rest between two trials, so that what one trial left
	// in the device (retransmissions, a drained token bucket, closing
	// connections) does not weigh on the next. If zero, none.
	Pause time.Duration
	// RetryInvalid repeats an invalid trial up to this many times before
	// the search stops on it: a transient stall of the generator (the
	// pacer descheduled on a busy machine) gets another chance, a lasting
	// limit (open files) is invalid again. Every trial run is reported.
	RetryInvalid int
	// Criteria judge every trial.
	Criteria Criteria
}

// Result is a search's outcome.
type Result struct {
	// Trials in the order they ran.
	Trials []Trial
	// Max is the highest load that passed (0 when none did).
	Max float64
	// Found is true when Max is the device's maximum at the search's
	// resolution: some load passed, a higher one failed, and no trial was
	// Invalid.
	Found bool
	// Ceiling is true when the search's Max passed: the device's limit is
	// above the range searched.
	Ceiling bool
	// Invalid names the generator limit that stopped the search; Max is
	// then only a lower bound of the device's maximum.
	Invalid string
	// FailedAt is the lowest failed load (0 when none failed).
	FailedAt float64
	// Elapsed is the search's wall time.
	Elapsed time.Duration
	// Stopped, when set, is why the search ended before its verdict (its
	// context ended, a trial could not run): Max is then the highest load
	// that passed so far, a lower bound (stopped.go).
	Stopped string
}

// Best returns the passed trial at Max (false when none passed).
func (r *Result) Best() (Trial, bool) {
	for i := len(r.Trials) - 1; i >= 0; i-- {
		if t := r.Trials[i]; t.Verdict == Pass && t.Load == r.Max {
			return t, true
		}
	}
	return Trial{}, false
}

// Summary is one sentence on the outcome.
func (r *Result) Summary(unit string) string {
	switch {
	case r.Stopped != "":
		return r.stoppedSummary(unit)
	case r.Invalid != "":
		if r.Max > 0 {
			return fmt.Sprintf("INVALID: the generator was the limit (%s); the device sustained %.6g %s, its maximum is at least that, not found", r.Invalid, r.Max, unit)
		}
		return fmt.Sprintf("INVALID: the generator was the limit (%s) before any load passed; no maximum found", r.Invalid)
	case r.Ceiling:
		return fmt.Sprintf("the search's maximum %.6g %s passed: the device's limit is above the range searched", r.Max, unit)
	case r.Found:
		return fmt.Sprintf("maximum %.6g %s", r.Max, unit)
	case r.Max > 0:
		return fmt.Sprintf("not converged within the trials: the maximum is between %.6g and %.6g %s", r.Max, r.FailedAt, unit)
	}
	return "no load passed: no maximum found"
}

// Validate returns the error Run would return for parameters it cannot
// honour (ErrBadSearch), without running a trial: a caller that must wait
// for something first (a cluster's workers) checks them before.
func (s Search) Validate() error { return s.check() }

func (s *Search) check() error {
	switch {
	case !(s.Start > 0) || math.IsInf(s.Start, 0):
		return fmt.Errorf("%w: start %v must be a positive number", ErrBadSearch, s.Start)
	case !(s.Max >= s.Start) || math.IsInf(s.Max, 0):
		return fmt.Errorf("%w: max %v must be a number at least start %v", ErrBadSearch, s.Max, s.Start)
	case s.StepFactor != 0 && !(s.StepFactor > 1):
		return fmt.Errorf("%w: step factor %v must be more than 1", ErrBadSearch, s.StepFactor)
	case s.Resolution < 0 || s.Resolution >= 1 || math.IsNaN(s.Resolution):
		return fmt.Errorf("%w: resolution %v must be in [0, 1)", ErrBadSearch, s.Resolution)
	case s.Min < 0 || s.Min > s.Start || math.IsNaN(s.Min):
		return fmt.Errorf("%w: min %v must be in [0, start %v]", ErrBadSearch, s.Min, s.Start)
	case s.MinStep < 0 || math.IsNaN(s.MinStep):
		return fmt.Errorf("%w: min step %v must not be negative", ErrBadSearch, s.MinStep)
	case s.Pause < 0:
		return fmt.Errorf("%w: pause %v must not be negative", ErrBadSearch, s.Pause)
	case s.RetryInvalid < 0:
		return fmt.Errorf("%w: retry invalid %d must not be negative", ErrBadSearch, s.RetryInvalid)
	case s.MaxTrials < 0:
		return fmt.Errorf("%w: max trials %d must not be negative", ErrBadSearch, s.MaxTrials)
	case s.Criteria.MaxFailureRatio < 0 || s.Criteria.MaxFailureRatio >= 1 || math.IsNaN(s.Criteria.MaxFailureRatio):
		return fmt.Errorf("%w: failure ratio %v must be in [0, 1)", ErrBadSearch, s.Criteria.MaxFailureRatio)
	case s.Criteria.MinAchieved < 0 || s.Criteria.MinAchieved > 1 || math.IsNaN(s.Criteria.MinAchieved):
		return fmt.Errorf("%w: min achieved %v must be in [0, 1]", ErrBadSearch, s.Criteria.MinAchieved)
	case s.Criteria.LatencyBound < 0:
		return fmt.Errorf("%w: latency bound %v must not be negative", ErrBadSearch, s.Criteria.LatencyBound)
	}
	switch s.Criteria.LatencyPercentile {
	case 0, 50, 95, 99:
	default:
		return fmt.Errorf("%w: latency percentile %v must be 50, 95 or 99", ErrBadSearch, s.Criteria.LatencyPercentile)
	}
	if s.Integer && math.Floor(s.Start) < 1 {
		return fmt.Errorf("%w: start %v must be at least 1 for whole loads", ErrBadSearch, s.Start)
	}
	return nil
}

// Run runs the search. It returns the trials so far and ctx's error when ctx
// ends, and the TrialFunc's error wrapped when a trial cannot run.
func (s Search) Run(ctx context.Context, trial TrialFunc) (Result, error) {
	if err := s.check(); err != nil {
		return Result{}, err
	}
	start := time.Now()
	r, err := s.run(ctx, trial)
	r.Elapsed = time.Since(start)
	if err != nil {
		r.stopped(err)
	}
	return r, err
}

func (s Search) run(ctx context.Context, trial TrialFunc) (Result, error) {
	factor, res, maxTrials := s.StepFactor, s.Resolution, s.MaxTrials
	if factor == 0 {
		factor = 2
	}
	if res == 0 {
		res = 0.05
	}
	if maxTrials == 0 {
		maxTrials = 30
	}
	minStep := s.MinStep
	if s.Integer && minStep < 1 {
		minStep = 1
	}
	var r Result
	run := func(load float64) (Verdict, error) {
		for try := 0; ; try++ {
			if len(r.Trials) > 0 && s.Pause > 0 {
				tm := time.NewTimer(s.Pause)
				select {
				case <-tm.C:
				case <-ctx.Done():
					tm.Stop()
				}
			}
			if err := ctx.Err(); err != nil {
				return Invalid, fmt.Errorf("capacity: search stopped: %w", err)
			}
			t, err := trial(ctx, load)
			if err != nil {
				return Invalid, fmt.Errorf("capacity: trial at %.6g: %w", load, err)
			}
			t.Load = load
			s.Criteria.Judge(&t)
			r.Trials = append(r.Trials, t)
			if t.Verdict != Invalid {
				return t.Verdict, nil
			}
			if try >= s.RetryInvalid || len(r.Trials) >= maxTrials {
				r.Invalid = t.GeneratorLimit
				return Invalid, nil
			}
		}
	}
	round := func(x float64) float64 {
		if s.Integer {
			return math.Floor(x)
		}
		return x
	}

	// Step phase.
	var lo, hi float64
	for load := round(s.Start); ; {
		v, err := run(load)
		if err != nil {
			return r, err
		}
		if v == Invalid {
			r.Max = lo
			return r, nil
		}
		if v == Fail {
			hi = load
			break
		}
		lo = load
		if load >= s.Max {
			r.Max, r.Ceiling = lo, true
			return r, nil
		}
		if len(r.Trials) >= maxTrials {
			r.Max = lo
			return r, nil
		}
		load = round(math.Min(load*factor, s.Max))
		if load <= lo { // Integer rounding at tiny loads
			load = lo + 1
		}
	}

	// Binary phase (with an optional confirmation of the found maximum).
	minLoad := s.Min
	if minLoad == 0 {
		minLoad = s.Start / 100
	}
	if s.Integer {
		minLoad = math.Max(minLoad, 1)
	}
	converged := false
	for len(r.Trials) < maxTrials {
		if lo == 0 && hi <= minLoad {
			break
		}
		if hi-lo <= math.Max(res*lo, minStep) {
			if !s.Confirm || lo == 0 {
				converged = true
				break
			}
			v, err := run(lo)
			if err != nil {
				return r, err
			}
			if v == Invalid {
				r.Max = lo
				return r, nil
			}
			if v == Pass {
				converged = true
				break
			}
			hi, lo = lo, s.lowerPass(&r, lo)
			continue
		}
		mid := round((lo + hi) / 2)
		if mid <= lo || mid >= hi {
			converged = true
			break
		}
		v, err := run(mid)
		if err != nil {
			return r, err
		}
		switch v {
		case Invalid:
			r.Max = lo
			return r, nil
		case Pass:
			lo = mid
		default:
			hi = mid
		}
	}
	r.Max, r.FailedAt = lo, hi
	r.Found = lo > 0 && converged
	return r, nil
}

// lowerPass is the highest passed load below below, or 0.
func (s *Search) lowerPass(r *Result, below float64) float64 {
	best := 0.0
	for _, t := range r.Trials {
		if t.Verdict == Pass && t.Load < below && t.Load > best {
			best = t.Load
		}
	}
	return best
}
