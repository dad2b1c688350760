package master

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
}

// ExitCode is the process exit code of the run: 1 when the master gave up
// waiting for workers; else ExitCodeOnError with failures or exceptions,
// else 2 after an internal error; then 1 when the second round failed and
// the code is still 0; else 0.
func (r Result) ExitCode() int {
	if r.GaveUp {
		return 1
	}
	code := 0
	switch {
	case r.Failures:
		code = r.ExitCodeOnError
	case r.InternalError:
		code = 2
	}
	if r.SecondRoundFailed && code == 0 {
		code = 1
	}
	return code
}
