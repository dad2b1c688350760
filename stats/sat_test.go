package stats

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

func TestAddSat(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{1, 2, 3},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64 - 1, 1, math.MaxInt64},
		{1e18 * 9, 1e18, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64},
		{math.MaxInt64, math.MinInt64, -1},
		{-5, 3, -2},
	} {
		if got := addSat(c.a, c.b); got != c.want {
			t.Errorf("addSat(%d, %d) = %d; want %d", c.a, c.b, got, c.want)
		}
	}
	for _, c := range []struct{ a, b, want float64 }{
		{1.5, 2, 3.5},
		{math.MaxFloat64, math.MaxFloat64, math.MaxFloat64},
		{-math.MaxFloat64, -math.MaxFloat64, -math.MaxFloat64},
	} {
		if got := addSatF(c.a, c.b); got != c.want {
			t.Errorf("addSatF(%g, %g) = %g; want %g", c.a, c.b, got, c.want)
		}
	}
}

func TestPyTruncClamps(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want int64
	}{
		{1.9, 1}, {-1.9, -1}, {math.NaN(), 0},
		{1e300, math.MaxInt64}, {math.Inf(1), math.MaxInt64}, {0x1p63, math.MaxInt64},
		{-1e300, math.MinInt64}, {math.Inf(-1), math.MinInt64},
	} {
		if got := pyTrunc(c.in); got != c.want {
			t.Errorf("pyTrunc(%g) = %d; want %d", c.in, got, c.want)
		}
	}
}

// TestMergeSaturates: ten reports of 10^18 requests each (10^19 in all,
// past int64) leave every sum at math.MaxInt64 instead of wrapping to a
// negative number, in the entry, the total, its buckets, per-second counts
// and errors; float sums stay finite; the tables show no negative count.
func TestMergeSaturates(t *testing.T) {
	const e18 = int64(1e18)
	now := time.Unix(1_700_000_010, 0)
	s := New(func() time.Time { return now })
	last := float64(now.Unix() - 5)
	entry := func(name string) protocol.StatsEntry {
		return protocol.StatsEntry{
			Name: name, Method: ptr("GET"), StartTime: float64(now.Unix() - 9), LastRequestTimestamp: &last,
			NumRequests: e18, NumFailures: e18, TotalResponseTime: math.MaxFloat64, MaxResponseTime: 5,
			MinResponseTime: ptr(5.0), TotalContentLength: e18,
			ResponseTimes: protocol.Counts(map[int64]int64{5: e18}), NumReqsPerSec: protocol.Counts(map[int64]int64{int64(last): e18}),
			NumFailPerSec: protocol.Counts(map[int64]int64{int64(last): e18}),
		}
	}
	for range 10 {
		s.Merge(&protocol.StatsReport{
			Stats: []protocol.StatsEntry{entry("/a")}, Total: entry("Aggregated"),
			Errors: map[string]protocol.StatsError{"k": {Name: "/a", Method: "GET", Error: "boom", Occurrences: e18}},
		})
	}
	snap := s.Snapshot()
	for _, e := range []EntryStats{snap.Entries[0], snap.Total} {
		for field, got := range map[string]int64{"NumRequests": e.NumRequests, "NumFailures": e.NumFailures,
			"TotalContentLength": e.TotalContentLength, "ResponseTimes[5]": e.ResponseTimes()[5]} {
			if got != math.MaxInt64 {
				t.Errorf("%s.%s = %d; want %d", e.Name, field, got, int64(math.MaxInt64))
			}
		}
		if math.IsInf(e.TotalResponseTime, 0) || math.IsNaN(e.AvgResponseTime()) || e.AvgResponseTime() <= 0 {
			t.Errorf("%s: TotalResponseTime = %g, avg %g; want finite, positive", e.Name, e.TotalResponseTime, e.AvgResponseTime())
		}
		if e.CurrentRPS < 0 || e.TotalRPS < 0 || math.IsNaN(e.TotalRPS) {
			t.Errorf("%s: CurrentRPS = %g, TotalRPS = %g; want non-negative", e.Name, e.CurrentRPS, e.TotalRPS)
		}
		if got := e.Percentile(0.5); got != 5 {
			t.Errorf("%s.Percentile(0.5) = %d; want 5", e.Name, got)
		}
	}
	if got := snap.Errors[0].Occurrences; got != math.MaxInt64 {
		t.Errorf("error occurrences = %d; want %d", got, int64(math.MaxInt64))
	}
	var b bytes.Buffer
	if err := WriteStatsTable(&b, snap, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteErrorReport(&b, snap); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), " -") || !strings.Contains(b.String(), "9223372036854775807") {
		t.Errorf("tables show a wrapped count:\n%s", b.String())
	}
}

// TestMergeNaNStartTime: a report built by hand with a NaN start time
// (Decode refuses one) does not turn the rates into NaN.
func TestMergeNaNStartTime(t *testing.T) {
	now := time.Unix(1_700_000_010, 0)
	s := New(func() time.Time { return now })
	last := float64(now.Unix() - 1)
	e := protocol.StatsEntry{Name: "Aggregated", StartTime: math.NaN(), NumRequests: 10, LastRequestTimestamp: &last}
	s.Merge(&protocol.StatsReport{Stats: []protocol.StatsEntry{e}, Total: e})
	snap := s.Snapshot()
	if math.IsNaN(snap.Total.StartTime) || math.IsNaN(snap.Total.TotalRPS) || math.IsNaN(snap.Entries[0].TotalRPS) {
		t.Errorf("after a NaN start_time: StartTime = %g, TotalRPS = %g, entry TotalRPS = %g; want numbers",
			snap.Total.StartTime, snap.Total.TotalRPS, snap.Entries[0].TotalRPS)
	}
}

// TestRecorderSaturates: response times and sizes that sum past int64 in
// one window saturate on the worker too, in the entry and the total; a
// negative size counts as 0.
func TestRecorderSaturates(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	r := NewRecorder(func() time.Time { return now })
	r.Record("GET", "/a", time.Duration(math.MaxInt64), math.MaxInt64, "")
	r.Record("GET", "/a", time.Duration(math.MaxInt64), math.MaxInt64, "")
	r.Record("GET", "/b", time.Duration(math.MaxInt64), math.MaxInt64, "")
	r.Record("GET", "/c", time.Millisecond, -10, "")
	rep := r.Report(nil, 1)
	maxMs := float64(math.MaxInt64) / 1e6
	for _, e := range append(rep.Stats[:2:2], rep.Total) {
		if e.TotalResponseTime != maxMs || e.TotalContentLength != math.MaxInt64 {
			t.Errorf("%s: TotalResponseTime = %g, TotalContentLength = %d; want %g, %d",
				e.Name, e.TotalResponseTime, e.TotalContentLength, maxMs, int64(math.MaxInt64))
		}
	}
	if got := rep.Stats[2].TotalContentLength; got != 0 {
		t.Errorf("Record(size -10): TotalContentLength = %d; want 0", got)
	}
}

// TestExactAddEncodedRefusesOverflow: a histogram whose count would pass
// 2^64 when added is refused and leaves the master's histogram as it was
// (before, the count wrapped to a small number and the buckets with it).
func TestExactAddEncodedRefusesOverflow(t *testing.T) {
	var big exactHist
	big.addN(exactIndex(1000), 1<<63)
	big.mergeMinMax(1<<63, 1000, 1000)
	enc := big.appendEncoded(nil)
	var h exactHist
	if err := h.addEncoded(enc); err != nil {
		t.Fatalf("first addEncoded: %v", err)
	}
	before := h.appendEncoded(nil)
	err := h.addEncoded(enc)
	if !errors.Is(err, ErrMalformedExact) {
		t.Errorf("second addEncoded (2^64 samples) error = %v; want ErrMalformedExact", err)
	}
	if got := h.appendEncoded(nil); !bytes.Equal(got, before) || h.count != 1<<63 {
		t.Errorf("after the refused add: count %d, encoding %x; want %d, %x", h.count, got, uint64(1<<63), before)
	}
}

// TestExactPercentileHugeCount: a count of 2^64-1 (the float rank rounds to
// 2^64) still gives the maximum for p = 1, not a lower bucket.
func TestExactPercentileHugeCount(t *testing.T) {
	var h exactHist
	h.addN(exactIndex(10), math.MaxUint64-1)
	h.addN(exactIndex(5000), 1)
	h.mergeMinMax(math.MaxUint64, 10, 5000)
	v, err := parseExact(h.appendEncoded(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := v.percentile(1); got != 5000 {
		t.Errorf("percentile(1) of 2^64-1 samples = %g; want 5000", got)
	}
}

// FuzzMergeDecoded: whatever DecodePooled accepts, merged twice, gives a
// snapshot without negative counts or figures and without NaN, and tables
// that render.
func FuzzMergeDecoded(f *testing.F) {
	clk := newFakeClock(1_700_000_000)
	r := NewRecorder(clk.now)
	r.Record("GET", "/a", 5*time.Millisecond, 10, "")
	clk.add(time.Second)
	r.Record("GET", "/b", 150*time.Millisecond, 10, "HTTPError('500')")
	r.RecordNone("POST", "/c", 0, "")
	seed, err := protocol.Encode(protocol.Message{Type: protocol.TypeStats, Data: r.Report(map[string]int64{"U": 1}, 1), NodeID: "w"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(hugeReport(3))
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, err := protocol.DecodePooled(payload)
		if err != nil {
			return
		}
		rep, ok := m.Data.(*protocol.StatsReport)
		if !ok {
			return
		}
		s := New(clk.now)
		s.Merge(rep)
		s.Merge(rep)
		rep.Release()
		snap := s.Snapshot()
		bad := func(v float64) bool { return v != v || v < 0 }
		for _, e := range append(snap.Entries, snap.Total) {
			switch {
			case e.NumRequests < 0 || e.NumNoneRequests < 0 || e.NumFailures < 0 || e.TotalContentLength < 0 || e.Timed() < 0:
				t.Fatalf("%s: negative count: %+v", e.Name, e)
			case bad(e.TotalResponseTime) || bad(e.AvgResponseTime()) || bad(e.Median()) || bad(e.StartTime):
				t.Fatalf("%s: bad time: %+v", e.Name, e)
			case bad(e.TotalRPS) || bad(e.CurrentRPS) || bad(e.TotalFailPerSec) || bad(e.CurrentFailPerSec):
				t.Fatalf("%s: bad rate: %+v", e.Name, e)
			case e.Percentile(0.99) < 0:
				t.Fatalf("%s: negative percentile", e.Name)
			}
		}
		for _, e := range snap.Errors {
			if e.Occurrences < 0 {
				t.Fatalf("negative occurrences: %+v", e)
			}
		}
		var b bytes.Buffer
		if err := WriteStatsTable(&b, snap, true); err != nil {
			t.Fatal(err)
		}
		if err := WritePercentileTable(&b, snap); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSnapshotInconsistentReport: a report with more None-time requests
// than requests, or a last request before the start, gives no negative
// figures (Locust shows a negative average and rate).
func TestSnapshotInconsistentReport(t *testing.T) {
	now := time.Unix(1_700_000_010, 0)
	s := New(func() time.Time { return now })
	last := float64(now.Unix() - 100) // before start_time
	e := protocol.StatsEntry{Name: "Aggregated", StartTime: float64(now.Unix() - 5), NumRequests: 2, NumNoneRequests: 5,
		TotalResponseTime: 30, LastRequestTimestamp: &last, ResponseTimes: protocol.Counts(map[int64]int64{10: 2})}
	s.Merge(&protocol.StatsReport{Stats: []protocol.StatsEntry{e}, Total: e})
	snap := s.Snapshot()
	for _, es := range []EntryStats{snap.Entries[0], snap.Total} {
		if es.Timed() != 0 || es.AvgResponseTime() != 0 || es.TotalRPS != 0 || es.TotalFailPerSec != 0 {
			t.Errorf("Timed = %d, AvgResponseTime = %g, TotalRPS = %g, TotalFailPerSec = %g; want 0, 0, 0, 0",
				es.Timed(), es.AvgResponseTime(), es.TotalRPS, es.TotalFailPerSec)
		}
	}
}
