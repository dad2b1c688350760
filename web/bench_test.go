package web_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// BenchmarkHistory500Points200Workers is a full GET /stats/history (a
// page load) of a full history (500 points) of a fake master with 200
// workers reporting connections, and one Sample, which also sums the
// connection counters and error rates.
func BenchmarkHistory500Points200Workers(b *testing.B) {
	r := bigRunner()
	srv := web.New(web.Options{StatsCacheTTL: -1, HistorySize: 500}, r)
	h := srv.History()
	now := time.Now()
	for i := 0; i < 500; i++ {
		r.Step(time.Second)
		h.Sample(r.Status(), r, now.Add(time.Duration(i)*time.Second))
	}
	b.Run("GET", func(b *testing.B) {
		req := httptest.NewRequest("GET", "/stats/history", nil)
		hd := srv.Handler()
		rec := httptest.NewRecorder()
		hd.ServeHTTP(rec, req)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"conn_open_by_worker"`) {
			b.Fatalf("GET /stats/history = %d", rec.Code)
		}
		b.SetBytes(int64(rec.Body.Len()))
		b.ReportAllocs()
		for b.Loop() {
			hd.ServeHTTP(httptest.NewRecorder(), req)
		}
	})
	b.Run("Sample", func(b *testing.B) {
		st := r.Status()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			h.Sample(st, r, now.Add(time.Duration(500+i)*time.Second))
		}
	})
}
