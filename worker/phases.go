package worker

import (
	"time"

	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/worker/httpc"
)

// phaseRecorder is a recorder that also keeps per-phase timings
// (*stats.Recorder).
type phaseRecorder interface {
	RecordWithPhases(method, name string, rt time.Duration, contentLength int64, failure string, p *stats.Phases)
}

// recordHTTP records one HTTP request with its phases (DNS, connect, TLS,
// time to first byte, body: httpc.Phases) when the recorder keeps them.
func (e *env) recordHTTP(method, name string, rt time.Duration, contentLength int64, failure string, p *httpc.Phases) {
	if pr, ok := e.rec.(phaseRecorder); ok {
		pr.RecordWithPhases(method, name, rt, contentLength, failure, (*stats.Phases)(p))
		return
	}
	e.rec.Record(method, name, rt, contentLength, failure)
}
