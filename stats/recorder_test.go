package stats

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// fakeClock is a settable clock for tests.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(sec float64) *fakeClock {
	c := &fakeClock{}
	c.set(sec)
	return c
}

func (c *fakeClock) set(sec float64)     { c.ns.Store(int64(math.Round(sec * 1e9))) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func msDur(v float64) time.Duration      { return time.Duration(math.Round(v * 1e6)) }
func f64(p *float64) float64             { return *p }
func isNil(p *float64) bool              { return p == nil }
func strPtrVal(p *string) (string, bool) {
	if p == nil {
		return "", false
	}
	return *p, true
}

func TestRecordAllocs(t *testing.T) {
	r := NewRecorder(nil)
	r.Record("GET", "/x", 3*time.Millisecond, 10, "")
	r.Record("GET", "/x", 300*time.Millisecond, 10, "HTTPError('500')")
	r.RecordNone("GET", "/x", 10, "")
	tests := map[string]func(){
		"success": func() { r.Record("GET", "/x", 3*time.Millisecond, 10, "") },
		"failure": func() { r.Record("GET", "/x", 300*time.Millisecond, 10, "HTTPError('500')") },
		"none":    func() { r.RecordNone("GET", "/x", 10, "") },
	}
	for name, f := range tests {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("Record %s: %v allocs/op; want 0", name, n)
		}
	}
	// After a report the entry, its buckets and a recurring error stay
	// allocated.
	r.Report(nil, 0)
	r.Record("GET", "/x", 3*time.Millisecond, 10, "")
	r.Record("GET", "/x", 300*time.Millisecond, 10, "HTTPError('500')")
	r.Report(nil, 0)
	for name, f := range tests {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("Record %s after Report: %v allocs/op; want 0", name, n)
		}
	}
}

func TestRecorderReport(t *testing.T) {
	clk := newFakeClock(1000.25)
	r := NewRecorder(clk.now)
	rep := r.Report(map[string]int64{"U": 0}, 0)
	if rep.Total.Method != nil || len(rep.Stats) != 0 || rep.Total.NumRequests != 0 ||
		rep.Total.MinResponseTime != nil || rep.Total.LastRequestTimestamp != nil || rep.Total.StartTime != 1000.25 {
		t.Fatalf("first idle report = %+v", rep.Total)
	}
	clk.set(1001)
	r.Clear()
	clk.set(1002.5)
	r.Record("GET", "/a", msDur(145), 10, "")
	clk.set(1003.5)
	r.Record("GET", "/a", msDur(2.5), 20, "CatchResponseError('x')")
	r.RecordNone("POST", "/b", 5, "")
	clk.set(1004)
	rep = r.Report(map[string]int64{"U": 2}, 2)
	if m, ok := strPtrVal(rep.Total.Method); !ok || m != "" {
		t.Errorf("total method after Clear = %v; want \"\"", rep.Total.Method)
	}
	if len(rep.Stats) != 2 || rep.Stats[0].Name != "/a" || rep.Stats[1].Name != "/b" {
		t.Fatalf("stats = %+v", rep.Stats)
	}
	a := rep.Stats[0]
	if a.NumRequests != 2 || a.NumFailures != 1 || a.TotalResponseTime != 147.5 || a.MaxResponseTime != 145 ||
		f64(a.MinResponseTime) != 2.5 || a.TotalContentLength != 30 || a.StartTime != 1002.5 ||
		f64(a.LastRequestTimestamp) != 1003.5 || protocol.CountMap(a.ResponseTimes)[140] != 1 || protocol.CountMap(a.ResponseTimes)[2] != 1 ||
		protocol.CountMap(a.NumReqsPerSec)[1002] != 1 || protocol.CountMap(a.NumReqsPerSec)[1003] != 1 || protocol.CountMap(a.NumFailPerSec)[1003] != 1 || len(a.NumFailPerSec) != 1 {
		t.Errorf("entry /a = %+v", a)
	}
	b := rep.Stats[1]
	if b.NumNoneRequests != 1 || !isNil(b.MinResponseTime) || b.MaxResponseTime != 0 || len(b.ResponseTimes) != 0 {
		t.Errorf("entry /b = %+v", b)
	}
	tot := rep.Total
	if tot.NumRequests != 3 || tot.NumNoneRequests != 1 || tot.TotalResponseTime != 147.5 || f64(tot.MinResponseTime) != 2.5 ||
		tot.StartTime != 1001 || protocol.CountMap(tot.NumReqsPerSec)[1003] != 2 || tot.Name != "Aggregated" {
		t.Errorf("total = %+v", tot)
	}
	key := ErrorKey("GET", "/a", "CatchResponseError('x')")
	if e, ok := rep.Errors[key]; !ok || e.Occurrences != 1 || f64(e.FirstSeen) != 1003.5 || e.Error != "CatchResponseError('x')" {
		t.Errorf("errors = %+v", rep.Errors)
	}
	for _, s := range append(rep.Stats, rep.Total) {
		if _, err := DecodeExact(s.Exact); err != nil {
			t.Errorf("%s: Exact does not decode: %v", s.Name, err)
		}
	}
	// Delta: the next report holds only what came after; idle /b keeps
	// the start time of its last report.
	clk.set(1006)
	r.Record("GET", "/a", msDur(1), 0, "")
	clk.set(1007)
	rep = r.Report(nil, 0)
	if len(rep.Stats) != 1 || rep.Stats[0].NumRequests != 1 || rep.Stats[0].StartTime != 1004 ||
		len(rep.Errors) != 0 || rep.Total.StartTime != 1004 || rep.Total.NumRequests != 1 {
		t.Errorf("second report = %+v", rep)
	}
	clk.set(1008)
	r.Record("POST", "/b", msDur(1), 0, "")
	clk.set(1009)
	if rep = r.Report(nil, 0); rep.Stats[0].StartTime != 1004 {
		t.Errorf("idle entry was reset: start %v; want 1004", rep.Stats[0].StartTime)
	}
}

// TestRecorderConcurrent records from many goroutines while reports are
// taken and merged; nothing is lost or counted twice (run with -race).
func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorder(nil)
	s := New(nil)
	const goroutines, per = 16, 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				s.Merge(r.Report(nil, 0))
				runtime.Gosched()
			}
		}
	}()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				name := fmt.Sprintf("/n%d", (g+i)%7)
				fail := ""
				if i%10 == 0 {
					fail = "E"
				}
				r.Record("GET", name, time.Duration(i)*time.Microsecond, 1, fail)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-done
	s.Merge(r.Report(nil, 0))
	snap := s.Snapshot()
	var sum, fails int64
	for _, e := range snap.Entries {
		sum += e.NumRequests
		fails += e.NumFailures
	}
	if want := int64(goroutines * per); snap.Total.NumRequests != want || sum != want || snap.Total.TotalContentLength != want {
		t.Errorf("requests: total %d, entries %d; want %d", snap.Total.NumRequests, sum, want)
	}
	if want := int64(goroutines * per / 10); snap.Total.NumFailures != want || fails != want || snap.Errors[0].Occurrences != want/7 && len(snap.Errors) != 7 {
		t.Errorf("failures: total %d, entries %d, errors %d; want %d", snap.Total.NumFailures, fails, len(snap.Errors), want)
	}
	if !snap.ExactComplete() {
		t.Errorf("cicada reports are not exact-complete")
	}
	if p, ok := snap.Total.ExactPercentile(1); !ok || p != float64(per-1)/1000 {
		t.Errorf("exact max = %v, %v; want %v", p, ok, float64(per-1)/1000)
	}
}

type sample struct {
	sec     float64
	method  string
	name    string
	rt      time.Duration
	none    bool
	len     int64
	failure string
}

func genSamples(rng *rand.Rand, n int) []sample {
	var out []sample
	sec := 5000.0
	for range n {
		sec += rng.Float64() * 0.05
		s := sample{sec: sec, method: []string{"GET", "POST"}[rng.IntN(2)], name: fmt.Sprintf("/p%d", rng.IntN(9)),
			rt: time.Duration(math.Round(math.Exp(rng.NormFloat64()+3)*64)) * 15625, len: rng.Int64N(1000)}
		if rng.IntN(50) == 0 {
			s.none = true
		}
		if rng.IntN(20) == 0 {
			s.failure = fmt.Sprintf("HTTPError('%d')", 500+rng.IntN(3))
		}
		out = append(out, s)
	}
	return out
}

// mergeGrouping feeds samples to nWorkers recorders, each reporting every
// reportEvery samples it received, and merges everything into one Stats.
func mergeGrouping(samples []sample, nWorkers int, assign func(i int) int, reportEvery int) *Snapshot {
	clk := newFakeClock(4999)
	master := New(clk.now)
	workers := make([]*Recorder, nWorkers)
	counts := make([]int, nWorkers)
	for i := range workers {
		workers[i] = NewRecorder(clk.now)
	}
	for i, s := range samples {
		clk.set(s.sec)
		w := assign(i)
		if s.none {
			workers[w].RecordNone(s.method, s.name, s.len, s.failure)
		} else {
			workers[w].Record(s.method, s.name, s.rt, s.len, s.failure)
		}
		counts[w]++
		if counts[w]%reportEvery == 0 {
			master.Merge(workers[w].Report(nil, 0))
		}
	}
	for _, w := range workers {
		master.Merge(w.Report(nil, 0))
	}
	return master.Snapshot()
}

func sameEntry(t *testing.T, what string, a, b *EntryStats) {
	t.Helper()
	if a.Name != b.Name || a.Method != b.Method || a.NumRequests != b.NumRequests || a.NumNoneRequests != b.NumNoneRequests ||
		a.NumFailures != b.NumFailures || a.TotalResponseTime != b.TotalResponseTime || a.MaxResponseTime != b.MaxResponseTime ||
		*a.MinResponseTime != *b.MinResponseTime || a.TotalContentLength != b.TotalContentLength ||
		*a.LastRequestTimestamp != *b.LastRequestTimestamp || a.StartTime != b.StartTime ||
		a.CurrentRPS != b.CurrentRPS || a.CurrentFailPerSec != b.CurrentFailPerSec || a.TotalRPS != b.TotalRPS {
		t.Fatalf("%s: %s %s differs:\n%+v\n%+v", what, a.Method, a.Name, a, b)
	}
	if fmt.Sprint(a.ResponseTimes()) != fmt.Sprint(b.ResponseTimes()) || a.MedianRepr() != b.MedianRepr() {
		t.Fatalf("%s: %s %s buckets differ", what, a.Method, a.Name)
	}
	for _, p := range PercentilesToReport {
		x, _ := a.ExactPercentile(p)
		y, _ := b.ExactPercentile(p)
		if a.Percentile(p) != b.Percentile(p) || x != y {
			t.Fatalf("%s: %s %s p%v differs", what, a.Method, a.Name, p)
		}
	}
}

// TestMergeGroupingProperty: however the samples are split over workers and
// reports, the merged statistics equal those of one worker sending one
// report (sample times are multiples of 1/64 ms, so even the float sums are
// exact in any order).
func TestMergeGroupingProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	samples := genSamples(rng, 4000)
	want := mergeGrouping(samples, 1, func(int) int { return 0 }, len(samples)+1)
	for trial := range 12 {
		n := 1 + rng.IntN(5)
		every := 1 + rng.IntN(300)
		seed := rng.Uint64()
		pick := rand.New(rand.NewPCG(seed, 1))
		got := mergeGrouping(samples, n, func(int) int { return pick.IntN(n) }, every)
		what := fmt.Sprintf("trial %d (%d workers, report every %d)", trial, n, every)
		if len(got.Entries) != len(want.Entries) {
			t.Fatalf("%s: %d entries; want %d", what, len(got.Entries), len(want.Entries))
		}
		for i := range want.Entries {
			sameEntry(t, what, &got.Entries[i], &want.Entries[i])
		}
		sameEntry(t, what, &got.Total, &want.Total)
		occ := map[string]int64{}
		for _, e := range want.Errors {
			occ[e.Key] = e.Occurrences
		}
		for _, e := range got.Errors {
			if occ[e.Key] != e.Occurrences {
				t.Fatalf("%s: error %s occurrences %d; want %d", what, e.Error, e.Occurrences, occ[e.Key])
			}
			delete(occ, e.Key)
		}
		if len(occ) != 0 {
			t.Fatalf("%s: missing errors %v", what, occ)
		}
	}
}

func TestExactCompleteTracking(t *testing.T) {
	clk := newFakeClock(100)
	s := New(clk.now)
	r := NewRecorder(clk.now)
	r.Record("GET", "/", msDur(10), 0, "")
	clk.set(101)
	s.Merge(r.Report(nil, 0))
	if snap := s.Snapshot(); !snap.ExactComplete() {
		t.Fatalf("cicada-only stats not exact-complete")
	}
	// A Python worker: no Exact. An idle total does not spoil anything.
	m := "GET"
	idle := &protocol.StatsReport{Total: protocol.StatsEntry{Name: "Aggregated", StartTime: 100}}
	s.Merge(idle)
	if snap := s.Snapshot(); !snap.ExactComplete() {
		t.Fatalf("an idle Python report spoiled exactness")
	}
	py := &protocol.StatsReport{
		Stats: []protocol.StatsEntry{{Name: "/py", Method: &m, StartTime: 100, NumRequests: 1, TotalResponseTime: 5,
			MaxResponseTime: 5, MinResponseTime: ptr(5.0), ResponseTimes: protocol.Counts(map[int64]int64{5: 1})}},
		Total: protocol.StatsEntry{Name: "Aggregated", StartTime: 100, NumRequests: 1, TotalResponseTime: 5,
			MaxResponseTime: 5, MinResponseTime: ptr(5.0), ResponseTimes: protocol.Counts(map[int64]int64{5: 1})},
	}
	s.Merge(py)
	snap := s.Snapshot()
	if snap.ExactComplete() || snap.Total.ExactComplete || !snap.Entries[0].ExactComplete {
		t.Errorf("after a Python report: complete=%v total=%v /=%v", snap.ExactComplete(), snap.Total.ExactComplete, snap.Entries[0].ExactComplete)
	}
	if _, ok := snap.Total.ExactPercentile(0.5); ok {
		t.Errorf("ExactPercentile ok on an incomplete entry")
	}
	bad := r.Report(nil, 0)
	bad.Total.Exact = []byte{9}
	s.Merge(bad)
	if snap := s.Snapshot(); snap.MalformedExact != 1 {
		t.Errorf("MalformedExact = %d; want 1", snap.MalformedExact)
	}
	s.Reset()
	if snap := s.Snapshot(); !snap.ExactComplete() {
		t.Errorf("Reset did not restart exactness")
	}
}

func ptr[T any](v T) *T { return &v }

// TestMergeEntryHints: Merge finds entries through the order of the last
// report (mentry.nextHint) and the map; neither a changed order, the same
// name under two methods nor a Clear may send a report entry to the wrong
// master entry.
func TestMergeEntryHints(t *testing.T) {
	clk := newFakeClock(100)
	s := New(clk.now)
	entry := func(method, name string, n int64) protocol.StatsEntry {
		return protocol.StatsEntry{Name: name, Method: &method, StartTime: 100, NumRequests: n}
	}
	report := func(es ...protocol.StatsEntry) *protocol.StatsReport {
		return &protocol.StatsReport{Stats: es, Total: protocol.StatsEntry{Name: "Aggregated", StartTime: 100}}
	}
	counts := func() map[string]int64 {
		out := map[string]int64{}
		for _, e := range s.Snapshot().Entries {
			out[e.Method+" "+e.Name] = e.NumRequests
		}
		return out
	}
	s.Merge(report(entry("GET", "/a", 1), entry("POST", "/a", 10), entry("GET", "/b", 100)))
	s.Merge(report(entry("GET", "/b", 100), entry("GET", "/a", 1), entry("POST", "/a", 10)))
	s.Merge(report(entry("POST", "/a", 10), entry("GET", "/a", 1), entry("GET", "/c", 1000)))
	s.Merge(report(entry("POST", "/a", 10), entry("GET", "/a", 1), entry("GET", "/b", 100)))
	want := map[string]int64{"GET /a": 4, "POST /a": 40, "GET /b": 300, "GET /c": 1000}
	if got := counts(); !maps.Equal(got, want) {
		t.Fatalf("entries %v; want %v", got, want)
	}
	s.Clear()
	s.Merge(report(entry("POST", "/a", 10), entry("GET", "/a", 1)))
	if got, want := counts(), map[string]int64{"GET /a": 1, "POST /a": 10}; !maps.Equal(got, want) {
		t.Fatalf("after Clear: entries %v; want %v", got, want)
	}
}

// TestMergeAllocs: once the master knows a worker's entries and errors and
// the per-second caches are full, merging its reports allocates nothing,
// even as the seconds advance.
func TestMergeAllocs(t *testing.T) {
	clk := newFakeClock(1e9)
	rep := manyWorkerReports(t, 1)[0]
	s := New(clk.now)
	sec := 1e9
	merge := func() {
		sec += 0.5
		clk.set(sec)
		redateReport(rep, sec)
		s.Merge(rep)
	}
	for range 2 * (cacheSize + 1) {
		merge()
	}
	if n := testing.AllocsPerRun(200, merge); n != 0 {
		t.Errorf("Merge: %v allocs per report; want 0", n)
	}
}
