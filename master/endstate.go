package master

import "time"

// endState is the ending of tests and of the master: the waits of Stop and
// of the final reports at quit, and the run's outcome. Precondition: loop.
type endState struct {
	stopWaiters []chan struct{} // closed when the workers report no users, or at stopDue
	stopDue     time.Time

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
