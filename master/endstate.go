package master

import "time"

// endState is the ending of tests and of the master: the waits of Stop and
// of the final reports at quit, and the run's outcome. Precondition: loop.
type endState struct {
	stopWaiters []chan struct{} // closed when the workers report no users, or at stopDue
	stopDue     time.Time

	// quitAfterStop: beginQuit stopped the test first (Options.StopTimeout
	// > 0); checkStopWaiters quits once the users are stopped.
	quitAfterStop bool
	stopThenQuit  bool // beginQuit already chose to stop first: a second call quits at once
	// quitAfterStopped: the quit follows its own stop, so the workers
	// stopped meanwhile owe a final report too.
	quitAfterStopped bool

	quitting bool                    // beginQuit ran
	final    map[string]*finalReport // by worker id, from beginQuit
	finalDue time.Time               // the end of the final-report wait

	result runResult // read by Run once the loop is done
	done   bool      // the loop ends
}

// runResult is what the loop records for Run's Result.
type runResult struct {
	gaveUp        bool
	internalError bool
}
