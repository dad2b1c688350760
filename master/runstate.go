package master

import (
	"context"
	"time"

	"github.com/cicada-load/cicada/master/dispatch"
)

// runState is the test as a whole: Locust's runner state, the user classes
// and host it dispatches, when it started, and the load shape if one runs.
// Precondition: loop.
type runState struct {
	state        string             // Locust's runner state (protocol.StateReady, ...); set through setState
	classes      []UserClass        // from Options, or learned from the first report that lists any
	host         string             // the target host sent in spawn messages ("" sends nil)
	startTime    time.Time          // when the current test started (stats cleared)
	shapeCancel  context.CancelFunc // ends the shape goroutine; nil when no shape runs
	finalClasses map[string]int64   // reported users per class when the last stop began
	learned      []UserClass        // learned classes before the class picker narrowed classes (picker.go)
}

// rampState is the dispatch in progress (start, advanceRamp) and the wait
// for the workers' reports after its last step. stopTest clears it.
// Precondition: loop.
type rampState struct {
	disp          *dispatch.Dispatcher // nil between tests
	stepping      bool                 // the dispatcher has steps left
	rampTimer     *time.Timer          // wakes the loop for the next step or a coalesced re-dispatch
	rampC         <-chan time.Time     // rampTimer.C while armed, else nil
	lastPaced     time.Time            // when the last paced (non-rebalance) step began
	target        int64                // the user count dispatched
	rate          float64              // the spawn rate dispatched
	reportWait    bool                 // waiting for the workers to report target users
	reportDue     time.Time            // the end of that wait
	spawnComplete bool                 // the last ramp's report wait ended
}
