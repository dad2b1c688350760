package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// Arrival-rate (open model) load, issue 13: the master's part.
//
// With Options.Rate set, the master still dispatches users as Locust does
// (Users: the cap on in-flight iterations, max_in_flight), and once the
// dispatcher has sent its last step (the users exist; the schedule's time
// starts then) it splits the current global rate among the cicada workers that are ready,
// spawning or running, in whole thousandths of an iteration per second:
// the shares sum to the global rate (rounded to 0.001/s) exactly, the
// remainder going one thousandth each to the first workers by node id. The
// split is recomputed every RateTick and a worker is sent its share
// (protocol.TypeCicadaRate) when it changes: on a stage change, when a
// worker joins, leaves or goes missing, and again when a missing one comes
// back. Python Locust workers cannot pace a rate: they are left out of the
// split and keep their user counts (closed model), said once per test in
// one warning line; a test with a rate and no cicada worker is refused.

// RateStage is one stage of an arrival-rate schedule: until Duration has
// passed since the test started (cumulative, as Stage), start Rate
// iterations per second in the whole cluster. A single stage with a zero
// Duration is a constant rate for the whole test.
//
// With Ramp, the rate goes linearly during the stage from the previous
// stage's rate (0 before the first) to Rate, as k6's ramping-arrival-rate
// stages do; the split follows it every RateTick.
type RateStage struct {
	Duration time.Duration
	Rate     float64
	Ramp     bool
}

// MaxRate bounds a global arrival rate (iterations per second).
const MaxRate = 1e7

// RateTick is how often the master re-evaluates the rate split.
const RateTick = 250 * time.Millisecond

// ErrRateNoCicadaWorker refuses to start a rate test whose workers are all
// Python Locust workers.
var ErrRateNoCicadaWorker = errors.New("master: an arrival rate needs at least one cicada worker; Python Locust workers cannot pace a rate")

// checkRate validates Options.Rate. Precondition: called from check.
func checkRate(o *Options) error {
	if len(o.Rate) == 0 {
		return nil
	}
	if len(o.Stages) > 0 {
		return fmt.Errorf("%w: an arrival rate cannot be combined with a user load shape (stages:)", ErrOptions)
	}
	var prev time.Duration
	for i, s := range o.Rate {
		if math.IsNaN(s.Rate) || s.Rate < 0 || s.Rate > MaxRate {
			return fmt.Errorf("%w: rate stage %d: rate %v is not between 0 and %v iterations per second", ErrOptions, i, s.Rate, MaxRate)
		}
		if len(o.Rate) == 1 && s.Duration == 0 {
			break
		}
		if s.Duration <= prev {
			return fmt.Errorf("%w: rate stage %d: duration %v (durations are cumulative and increasing)", ErrOptions, i, s.Duration)
		}
		prev = s.Duration
	}
	if prev > 0 && o.RunTime > 0 {
		return fmt.Errorf("%w: a run time cannot be combined with rate stages; end the last stage at that time instead of using -t/--run-time", ErrOptions)
	}
	return nil
}

// rateAt returns the global rate in thousandths of an iteration per
// second at elapsed, 0 after the last stage.
func rateAt(stages []RateStage, elapsed time.Duration) int64 {
	return int64(math.Round(rateAtF(stages, elapsed) * 1000))
}

// rateAtF is the rate at elapsed, iterations per second.
func rateAtF(stages []RateStage, elapsed time.Duration) float64 {
	var prevEnd time.Duration
	var prevRate float64
	for _, s := range stages {
		if s.Duration == 0 {
			return s.Rate
		}
		if elapsed < s.Duration {
			if !s.Ramp {
				return s.Rate
			}
			f := float64(elapsed-prevEnd) / float64(s.Duration-prevEnd)
			return prevRate + (s.Rate-prevRate)*f
		}
		prevEnd, prevRate = s.Duration, s.Rate
	}
	return 0
}

// SplitRate splits milli (a rate in thousandths of an iteration per
// second) among ids: each gets milli/len(ids), and the first milli%len(ids)
// ids in sorted order one more, so that the shares sum to milli exactly.
// It returns nil for no ids.
func SplitRate(milli int64, ids []string) map[string]int64 {
	if len(ids) == 0 {
		return nil
	}
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	n := int64(len(sorted))
	base, rest := milli/n, milli%n
	out := make(map[string]int64, n)
	for i, id := range sorted {
		out[id] = base
		if int64(i) < rest {
			out[id]++
		}
	}
	return out
}

// rateState is the arrival-rate split of the current test. Precondition:
// loop.
type rateState struct {
	cancel       context.CancelFunc // ends the rate goroutine; nil when none runs
	armed        bool               // the first dispatch is complete: the schedule runs (armRate)
	begin        time.Time          // when the schedule started
	sent         map[string]int64   // the share last sent to each worker, thousandths
	global       int64              // the global rate last split
	workers      int                // the cicada workers it was split among
	warnedPython bool
	dropped      map[string]int64 // dropped iterations per worker id since the test started
}

func (m *Master) rateState() *rateState { return &m.st.rate }

// isCicada tells a cicada worker (client_ready version -1) from a Python
// Locust worker. boomer also sends -1; it ignores the rate message.
func isCicada(nd *node) bool { return nd.version == "-1" }

// startRate starts the rate goroutine for a new test, or refuses a test
// whose workers cannot pace a rate. Precondition: loop.
func (m *Master) startRate() error {
	if len(m.opts.Rate) == 0 {
		return nil
	}
	rs := m.rateState()
	var cicada, python int
	for _, nd := range m.st.reg.nodes {
		if !active(nd.state) {
			continue
		}
		if isCicada(nd) {
			cicada++
		} else {
			python++
		}
	}
	if cicada == 0 {
		return fmt.Errorf("%w (%d Python worker(s) connected)", ErrRateNoCicadaWorker, python)
	}
	if rs.cancel != nil {
		return nil // a running rate test: the new user count only
	}
	rs.sent = make(map[string]int64)
	rs.dropped = make(map[string]int64)
	rs.warnedPython = false
	rs.armed = false
	rs.global, rs.workers = -1, -1
	ctx, cancel := context.WithCancel(context.Background())
	rs.cancel = cancel
	m.goroutine("rate", func() {
		t := time.NewTicker(RateTick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-m.loopDone:
				return
			case <-t.C:
			}
			m.call(func() {
				if ctx.Err() == nil {
					m.applyRate()
					m.endRateStages()
				}
			})
		}
	})
	return nil
}

// armRate starts the schedule once the dispatcher has sent its last
// step: the users exist (they are the in-flight cap), so iterations are
// not dropped for want of users not yet spawned. Later dispatches (a
// worker joined) only re-split. Precondition: loop.
func (m *Master) armRate() {
	rs := m.rateState()
	if rs.cancel == nil {
		return
	}
	if !rs.armed {
		rs.armed = true
		rs.begin = timeNow()
	}
	m.applyRate()
}

// snapshotDropped is Options.DroppedIterations for a rate test: the
// dropped iterations merged from every worker's reports.
func snapshotDropped(s *stats.Snapshot) int64 { return s.Total.Dropped }

// rateStagesEnd tells whether o's rate stages end the test.
func rateStagesEnd(o *Options) bool {
	n := len(o.Rate)
	return n > 0 && o.Rate[n-1].Duration > 0
}

// endRateStages ends the test once the last rate stage is over, as a load
// shape does: a headless master quits, otherwise the test stops.
// Precondition: loop.
func (m *Master) endRateStages() {
	rs := m.rateState()
	if !rs.armed || !rateStagesEnd(&m.opts) || timeNow().Sub(rs.begin) < m.opts.Rate[len(m.opts.Rate)-1].Duration {
		return
	}
	m.stopRate()
	m.log.Info("Rate stages complete")
	if m.opts.Headless {
		m.mainLog.Info("--run-time limit reached, shutting down")
		m.beginQuit()
	} else {
		m.stopTest(true)
	}
}

// stopRate ends the rate goroutine (stopTest). Precondition: loop.
func (m *Master) stopRate() {
	rs := m.rateState()
	if rs.cancel != nil {
		rs.cancel()
		rs.cancel = nil
	}
}

// applyRate sends each eligible worker its share when it changed.
// Precondition: loop.
func (m *Master) applyRate() {
	rs := m.rateState()
	if !rs.armed {
		return
	}
	// The rate in the middle of the coming tick: a ramp's steps then
	// average to the ramp.
	global := rateAt(m.opts.Rate, timeNow().Sub(rs.begin)+RateTick/2)
	var ids, python []string
	for id, nd := range m.st.reg.nodes {
		if !active(nd.state) {
			continue
		}
		if isCicada(nd) {
			ids = append(ids, id)
		} else {
			python = append(python, id)
		}
	}
	if len(python) > 0 && !rs.warnedPython {
		rs.warnedPython = true
		sort.Strings(python)
		m.log.Warn(fmt.Sprintf("Arrival rate: %d Python Locust worker(s) cannot pace a rate and keep their user counts (closed model): %v", len(python), python))
	}
	shares := SplitRate(global, ids)
	if global != rs.global || len(ids) != rs.workers {
		// Info when the workers change (and at the start), Debug while a
		// ramp moves the rate every tick.
		level := slog.LevelDebug
		if len(ids) != rs.workers {
			level = slog.LevelInfo
		}
		rs.global, rs.workers = global, len(ids)
		m.log.Log(context.Background(), level, fmt.Sprintf("Arrival rate %s iterations/s split among %d cicada worker(s)", milliString(global), len(ids)))
	}
	for id := range rs.sent {
		if _, ok := shares[id]; !ok {
			delete(rs.sent, id) // gone or missing: sent again if it comes back
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		s := shares[id]
		if last, ok := rs.sent[id]; ok && last == s {
			continue
		}
		rs.sent[id] = s
		m.send(id, protocol.TypeCicadaRate, &protocol.Custom{Data: map[string]any{"rate": float64(s) / 1000}})
		m.logf(slog.LevelDebug, "rate share", "Arrival rate share of worker %s: %s iterations/s", id, milliString(s))
	}
}

// noteDropped adds a worker's dropped iterations. Precondition: loop.
func (m *Master) noteDropped(id string, n int64) {
	if n <= 0 {
		return
	}
	rs := m.rateState()
	if rs.dropped == nil {
		rs.dropped = make(map[string]int64)
	}
	rs.dropped[id] += n
}

func milliString(v int64) string {
	return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)
}
