package master

import "github.com/cicada-load/cicada/thresholds"

// Result is the outcome of Run: what ended the run, from which ExitCode
// derives the process exit code with Locust's rules (Locust 2.12.1
// locust/main.py, shutdown and the greenlet exception handler). It is a
// plain value, owned by the caller.
type Result struct {
	// GaveUp means Options.ExpectWorkersMaxWait expired before the workers
	// were ready: no test ran.
	GaveUp bool
	// Failures means the merged statistics hold failures or exceptions.
	Failures bool
	// InternalError means the master recovered a panic of its own (Locust's
	// unhandled greenlet exception).
	InternalError bool
	// SecondRoundFailed means Options.SecondRound was set and not every
	// user reused its connection (or no result arrived).
	SecondRoundFailed bool
	// ExitCodeOnError is the exit code of a run with failures
	// (Options.ExitCodeOnError).
	ExitCodeOnError int
	// Thresholds is the verdict of Options.Thresholds, nil without any
	// (see ExitCodeThresholds).
	Thresholds *thresholds.Verdict
	// GeneratorLimited means a cicada worker's self-diagnosis warned during
	// the run that a limit of its own host was reached or would be (open
	// files, ports, conntrack...; TIME_WAIT notices excepted): the run
	// measured the load generator, not only the target (see
	// ExitCodeGeneratorLimited).
	GeneratorLimited bool
}

// ExitCode is the process exit code of the run: 1 when the master gave up
// waiting for workers; else ExitCodeGeneratorLimited when the load
// generator was the limit; else ExitCodeThresholds when a threshold
// failed; else ExitCodeOnError with failures or exceptions (unless
// thresholds were declared: they are the run's verdict then, and
// fail_ratio<=0 restores Locust's rule), else 2 after an internal error;
// then 1 when the second round failed and the code is still 0; else 0.
func (r Result) ExitCode() int {
	if r.GaveUp {
		return 1
	}
	code := 0
	switch {
	case r.GeneratorLimited:
		code = ExitCodeGeneratorLimited
	case r.Thresholds != nil && !r.Thresholds.Passed():
		code = ExitCodeThresholds
	case r.Failures && r.Thresholds == nil:
		code = r.ExitCodeOnError
	case r.InternalError:
		code = 2
	}
	if r.SecondRoundFailed && code == 0 {
		code = 1
	}
	return code
}

// Exit codes of cicada's own verdicts, beside Locust's (0 passed, 1
// failures or exceptions with the default --exit-code-on-error, 2 an
// internal error or bad arguments, 255 a worker that cannot reach its
// master).
const (
	// ExitCodeThresholds: a threshold failed (k6 uses the same code).
	ExitCodeThresholds = 99
	// ExitCodeGeneratorLimited: the load generator itself was the limit
	// (Result.GeneratorLimited): the run's figures are the generator's,
	// whatever the thresholds say.
	ExitCodeGeneratorLimited = 98
)
