package master

import (
	"github.com/cicada-load/cicada/internal/ratelimit"
	"github.com/cicada-load/cicada/protocol"
)

// loopState is everything the loop owns, in sub-states by concern. None is
// locked: every access is on the loop (see LOCKS.md).
type loopState struct {
	reg  registry      // the workers: nodes, indexes, identities (registry.go)
	run  runState      // the test: state, classes, host, shape (runstate.go)
	ramp rampState     // the dispatch in progress and its waits (runstate.go)
	end  endState      // stop and quit waits, the run's result (endstate.go)
	warn warnState     // log limiters and warn-once marks (ratelimit.go)
	conn connLoopState // connections, warnings, second round (connections.go)
	rate rateState     // the arrival-rate split (rate.go)
	// index is the incremental bookkeeping of nodes, re-dispatch and
	// final reports, kept as they change (node.go; see ix).
	index loopIndex

	feeds feedState // unique feeds' cursors (feeds.go)
}

func (s *loopState) init(o *Options) {
	s.run.state = protocol.StateReady
	s.reg.nodes = make(map[string]*node)
	s.reg.indexes = make(map[string]int)
	s.reg.lastTS = make(map[string]float64)
	s.reg.stopped = make(map[string]bool)
	s.reg.quitted = make(map[string]bool)
	s.run.classes = append([]UserClass(nil), o.UserClasses...)
	s.run.host = o.Host
	s.warn.logLimit = ratelimit.NewBurst(logBurst, logInterval, limiterKeys)
	s.warn.excLimit = ratelimit.NewBurst(exceptionBurst, logInterval, limiterKeys)
}
