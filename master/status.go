package master

import (
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// Status is a point-in-time view of the master, for the web UI and tests.
type Status struct {
	// State is the master's state: ready, spawning, running, stopping or
	// stopped (protocol.State*).
	State string
	// UserCount is the number of users the workers last reported.
	UserCount int64
	// TargetUsers and SpawnRate are those of the last dispatch.
	TargetUsers int64
	SpawnRate   float64
	// Host is the target host, "" when none.
	Host string
	// WorkerCount is Locust's worker_count: workers ready, spawning or
	// running (missing ones excluded).
	WorkerCount int
	// Workers lists every known worker, sorted by id.
	Workers []WorkerInfo
	// UserClassesCount is the users per class reported by active workers.
	UserClassesCount map[string]int64
	// FinalUserClassesCount is UserClassesCount at the moment the last
	// test began stopping (Locust's final_user_classes_count), empty before
	// any stop: the HTML report's final ratios use it once users are gone.
	FinalUserClassesCount map[string]int64
	// Shape reports that a load shape (Options.Stages) drives the test:
	// Start ignores its users and spawn rate.
	Shape bool
	// Classes is the master's user class list.
	Classes []UserClass
	// StartTime is when the current (or last) test started; zero if never.
	StartTime time.Time
	// Warnings are the self-diagnosis warnings cicada workers sent
	// (cicada_warning), in arrival order.
	Warnings []WorkerWarning
	// SecondRound is the second round so far (Options.SecondRound).
	SecondRound SecondRound
}

// WorkerInfo is one worker as the master sees it.
type WorkerInfo struct {
	ID    string
	Index int
	// State is ready, spawning, running (as the worker reports it) or
	// missing (protocol.State*; protocol.StateMissing: no heartbeat for
	// HeartbeatLiveness ticks).
	State            string
	UserCount        int64
	UserClassesCount map[string]int64
	// CPUUsage is the last reported CPU usage in percent.
	CPUUsage float64
	// MemoryUsage is the last reported RSS in bytes, -1 if unknown.
	MemoryUsage int64
	// Version is the client_ready data: a Locust version ("" for Debian's
	// 2.12.1 package), "-1" for cicada and boomer, "?" for an adopted
	// worker.
	Version string
	// Adopted is true for a worker registered from its heartbeat.
	Adopted bool
	// Connections are the worker's connection counters from its last
	// heartbeat (cicada workers), nil if it sent none. Owned by the
	// caller.
	Connections *protocol.ConnCounters
	// ConnectsPerSec is the worker's connect rate between its last two
	// heartbeats.
	ConnectsPerSec float64
	// TLSHandshakesPerSec is the worker's TLS handshake rate (full and
	// resumed) between its last two heartbeats.
	TLSHandshakesPerSec float64
	// Dropped counts the arrival-rate iterations this worker dropped in
	// the current test (issue 13); 0 for Python workers.
	Dropped int64
}

func (s Status) clone() Status {
	out := s
	out.Workers = make([]WorkerInfo, len(s.Workers))
	for i, w := range s.Workers {
		w.UserClassesCount = copyCounts(w.UserClassesCount)
		w.Connections = copyConns(w.Connections)
		out.Workers[i] = w
	}
	out.UserClassesCount = copyCounts(s.UserClassesCount)
	out.FinalUserClassesCount = copyCounts(s.FinalUserClassesCount)
	out.Classes = append([]UserClass(nil), s.Classes...)
	out.Warnings = append([]WorkerWarning(nil), s.Warnings...)
	out.SecondRound.Errors = copyCounts(s.SecondRound.Errors)
	return out
}

// status builds a Status. Precondition: loop (or the loop has exited).
func (s *loopState) status(o *Options) Status {
	out := Status{
		State:                 s.run.state,
		UserCount:             s.userCount(),
		TargetUsers:           s.ramp.target,
		SpawnRate:             s.ramp.rate,
		Host:                  s.run.host,
		WorkerCount:           s.workerCount(),
		UserClassesCount:      s.reportedClasses(),
		FinalUserClassesCount: copyCounts(s.run.finalClasses),
		Shape:                 len(o.Stages) > 0,
		Classes:               append([]UserClass(nil), s.run.classes...),
		StartTime:             s.run.startTime,
		Warnings:              append([]WorkerWarning(nil), s.conn.warnings...),
		SecondRound:           s.conn.round,
	}
	out.SecondRound.Errors = copyCounts(s.conn.round.Errors)
	for _, id := range sortedIDs(s.reg.nodes) {
		nd := s.reg.nodes[id]
		out.Workers = append(out.Workers, WorkerInfo{
			ID:               id,
			Index:            s.reg.indexes[id],
			State:            nd.state,
			UserCount:        nd.users(),
			UserClassesCount: copyCounts(nd.classes),
			CPUUsage:         nd.cpu,
			MemoryUsage:      nd.memory,
			Version:          nd.version,
			Adopted:          nd.adopted,
			Connections:      copyConns(nd.conn.c),
			ConnectsPerSec:   nd.conn.rate,

			TLSHandshakesPerSec: nd.conn.tls.rate,
			Dropped:             s.rate.dropped[id],
		})
	}
	return out
}
