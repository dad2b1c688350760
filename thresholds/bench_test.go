package thresholds

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkObserve is one live evaluation (a master does one a second) of
// five thresholds, two of them windowed percentiles, on a snapshot of 100
// entries.
func BenchmarkObserve(b *testing.B) {
	r := newRun()
	for i := 0; i < 100; i++ {
		for j := 0; j < 20; j++ {
			r.rec.Record("GET", "/e"+strconv.Itoa(i), time.Duration(j+1)*time.Millisecond, 10, "")
		}
	}
	snap := r.second("GET", "/", 10, time.Millisecond, 0)
	var ts []Threshold
	for _, e := range []string{"p99<500ms abort_on_fail", "p99.9{/e7}<1s window=10s", "p95<1s window=30s abort_on_fail", "fail_ratio<1% window=10s", "avg<100"} {
		th, err := Parse(e)
		if err != nil {
			b.Fatal(err)
		}
		ts = append(ts, th)
	}
	e, err := New(ts, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		snap.Time = snap.Time.Add(time.Second)
		e.Observe(snap, time.Duration(i)*time.Second)
	}
}
