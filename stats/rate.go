package stats

import "time"

// RecordCorrected logs one request of an arrival-rate iteration (issue 13)
// with two times: service, from the moment the request was sent, and
// corrected, from the moment the iteration was due by the pacing schedule
// (wrk2's correction for coordinated omission). Locust's fields (buckets,
// total, min, max: the Locust-format tables and CSV columns, and what a
// Python master sees) take the service time, as Locust would measure it;
// the exact histogram ("cicada_latency": the exact percentiles) takes the
// corrected time. A corrected time below service is raised to service.
func (r *Recorder) RecordCorrected(method, name string, service, corrected time.Duration, contentLength int64, failure string) {
	r.record(method, name, service, corrected, false, contentLength, failure)
}

// AddDropped counts n arrival-rate iterations that could not start because
// every user was busy. The count goes out with the next Report
// (protocol.StatsReport.Dropped) and is zeroed by Report and Clear.
// Safe for concurrent use; n <= 0 is ignored.
func (r *Recorder) AddDropped(n int64) {
	if n > 0 {
		r.dropped.Add(n)
	}
}
