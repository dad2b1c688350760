package stats_test

import (
	"fmt"
	"time"

	"github.com/cicada-load/cicada/stats"
)

// A worker records each request in a Recorder (safe for concurrent use,
// no allocation per call) and sends its Report every few seconds: the
// delta since the previous report, in Locust's wire form, after which the
// Recorder starts again from zero.
func ExampleRecorder() {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := stats.NewRecorder(func() time.Time { return start })

	r.Record("GET", "/", 120*time.Millisecond, 512, "")
	r.Record("GET", "/", 80*time.Millisecond, 512, "")
	r.Record("POST", "/login", 300*time.Millisecond, 0, "HTTPError('500 Server Error')")

	rep := r.Report(map[string]int64{"WebUser": 2}, 2)
	for _, e := range rep.Stats {
		fmt.Printf("%s %s: %d requests, %d failures, %.0f ms total\n", *e.Method, e.Name, e.NumRequests, e.NumFailures, e.TotalResponseTime)
	}
	fmt.Printf("total: %d requests, %d failures; %d error kinds\n", rep.Total.NumRequests, rep.Total.NumFailures, len(rep.Errors))

	next := r.Report(map[string]int64{"WebUser": 2}, 2)
	fmt.Printf("next report: %d requests\n", next.Total.NumRequests)
	// Output:
	// GET /: 2 requests, 0 failures, 200 ms total
	// POST /login: 1 requests, 1 failures, 300 ms total
	// total: 3 requests, 1 failures; 1 error kinds
	// next report: 0 requests
}
