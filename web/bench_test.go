package web_test

import (
	"net/http/httptest"
	"testing"

	"github.com/cicada-load/cicada/web"
)

// benchServe measures one uncached request of path against a fake master
// with 1,000 request names and 200 workers.
func benchServe(b *testing.B, path string) {
	r := bigRunner()
	srv := web.New(web.Options{StatsCacheTTL: -1}, r)
	h := srv.Handler()
	req := httptest.NewRequest("GET", path, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatalf("GET %s = %d", path, rec.Code)
	}
	size := rec.Body.Len()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
	}
	b.ReportMetric(float64(size), "resp-bytes")
}

// BenchmarkStatsRequests1000Names includes the runner's Snapshot (the
// master's cost) and the JSON building.
func BenchmarkStatsRequests1000Names(b *testing.B) { benchServe(b, "/stats/requests") }
func BenchmarkMetrics1000Names(b *testing.B)       { benchServe(b, "/metrics") }
func BenchmarkRequestsCSV1000Names(b *testing.B)   { benchServe(b, "/stats/requests/csv") }
func BenchmarkReport1000Names(b *testing.B)        { benchServe(b, "/stats/report") }

// BenchmarkSnapshot1000Names is the Snapshot alone, to separate the
// master's share from the web package's.
func BenchmarkSnapshot1000Names(b *testing.B) {
	r := bigRunner()
	b.ReportAllocs()
	for b.Loop() {
		r.Snapshot()
	}
}
