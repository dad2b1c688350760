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
	RecordCorrectedWithPhases(method, name string, rt, corrected time.Duration, contentLength int64, failure string, p *stats.Phases)
}

// recordHTTP records one HTTP request with its phases (DNS, connect, TLS,
// time to first byte, body: httpc.Phases) when the recorder keeps them;
// a paced (arrival-rate) iteration's request also carries its corrected
// time, as User.record does.
func (u *User) recordHTTP(method, name string, rt time.Duration, contentLength int64, failure string, p *httpc.Phases) {
	pr, ok := u.p.env.rec.(phaseRecorder)
	switch {
	case !ok:
		u.record(method, name, rt, contentLength, failure)
	case u.paced:
		pr.RecordCorrectedWithPhases(method, name, rt, rt+u.lag, contentLength, failure, (*stats.Phases)(p))
	default:
		pr.RecordWithPhases(method, name, rt, contentLength, failure, (*stats.Phases)(p))
	}
}
