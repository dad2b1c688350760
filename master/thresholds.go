package master

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/diag"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/thresholds"
)

// DefaultThresholdInterval is the period of the live threshold
// evaluation (Options.ThresholdInterval).
const DefaultThresholdInterval = time.Second

// thresholdWatch evaluates Options.Thresholds: a goroutine observes a
// statistics snapshot every ThresholdInterval while a test spawns or
// runs; Run takes the final verdict after the loop.
type thresholdWatch struct {
	mu    sync.Mutex // the evaluator is not safe for concurrent use
	eval  *thresholds.Evaluator
	final *thresholds.Verdict                 // set once Run has taken it
	live  atomic.Pointer[[]thresholds.Result] // the latest live results (thresholdslive.go)
}

func (w *thresholdWatch) init(o *Options) error {
	if len(o.Thresholds) == 0 {
		return nil
	}
	e, err := thresholds.New(o.Thresholds, thresholds.Options{Dropped: o.DroppedIterations})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrOptions, err)
	}
	w.eval = e
	w.publishLive()
	return nil
}

// startThresholds starts the live evaluation, if there are thresholds.
func (m *Master) startThresholds() {
	if m.thr.eval == nil {
		return
	}
	m.goroutine("thresholds", func() {
		t := time.NewTicker(m.opts.ThresholdInterval)
		defer t.Stop()
		for {
			select {
			case <-m.loopDone:
				return
			case <-t.C:
			}
			if m.observeThresholds() {
				return // one abort per run
			}
		}
	})
}

// observeThresholds evaluates the thresholds once; on an abort it ends a
// headless run, or stops the test, and returns true.
func (m *Master) observeThresholds() bool {
	var state string
	var start time.Time
	if !m.call(func() { state, start = m.st.run.state, m.st.run.startTime }) {
		return true
	}
	if state != protocol.StateSpawning && state != protocol.StateRunning {
		return false
	}
	snap := m.stats.Snapshot()
	m.thr.mu.Lock()
	r, abort := m.thr.eval.Observe(snap, timeNow().Sub(start))
	m.thr.publishLive()
	m.thr.mu.Unlock()
	if !abort {
		return false
	}
	m.mainLog.Error(fmt.Sprintf("Threshold %s failed (measured %s) and has abort_on_fail: stopping the test", r.Threshold, r.MeasuredString()))
	if m.opts.Headless || m.opts.Autostart {
		m.Quit()
	} else {
		m.call(func() { m.stopTest(true) })
	}
	return true
}

// finalThresholds is the verdict on the final statistics (nil without
// thresholds). Precondition: the loop and the watcher have returned.
func (m *Master) finalThresholds(snap *stats.Snapshot) *thresholds.Verdict {
	if m.thr.eval == nil {
		return nil
	}
	m.thr.mu.Lock()
	defer m.thr.mu.Unlock()
	v := m.thr.eval.Final(snap)
	m.thr.final = &v
	return &v
}

// writeVerdicts says, after the summary, why the exit code is
// ExitCodeGeneratorLimited, prints the thresholds' table and writes
// <CSVPrefix>_thresholds.csv.
func (m *Master) writeVerdicts(res Result) error {
	if res.GeneratorLimited {
		m.mainLog.Warn(fmt.Sprintf("The load generator itself was the limit (the workers' warnings above): exit code %d", ExitCodeGeneratorLimited))
	}
	v := res.Thresholds
	if v == nil {
		return nil
	}
	_ = thresholds.WriteTable(m.opts.Stderr, *v)
	if m.opts.CSVPrefix == "" {
		return nil
	}
	name := m.opts.CSVPrefix + "_thresholds.csv"
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrCSV, err)
	}
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCSV, err)
	}
	err = thresholds.WriteCSV(f, *v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		m.log.Error("Writing CSV files: " + err.Error())
		return fmt.Errorf("%w: %w", ErrCSV, err)
	}
	return nil
}

// generatorLimited reports whether a worker warned that its own host was
// the limit (TIME_WAIT notices aside: the ports they hold are counted by
// the ports warning when they matter).
func generatorLimited(cv *connView) bool {
	if cv == nil {
		return false
	}
	for _, w := range cv.warnings {
		if w.Kind != diag.KindTimeWait {
			return true
		}
	}
	return false
}

// StatsJSON is Locust HEAD's --json document of the merged statistics
// (stats.Stats.AppendJSON), with extra elements appended.
func (m *Master) StatsJSON(extra ...[]byte) []byte { return m.stats.AppendJSON(nil, extra...) }

// Thresholds returns the thresholds' verdict so far (nil without
// thresholds): whole-run thresholds on the current statistics, windowed
// ones from their worst full window yet; after Run, the final verdict.
func (m *Master) Thresholds() *thresholds.Verdict {
	if m.thr.eval == nil {
		return nil
	}
	m.thr.mu.Lock()
	final := m.thr.final
	m.thr.mu.Unlock()
	if final != nil {
		return final
	}
	snap := m.stats.Snapshot()
	m.thr.mu.Lock()
	defer m.thr.mu.Unlock()
	v := m.thr.eval.Final(snap)
	return &v
}
