package stats

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// bulkSample is one request for the bulk differential tests.
type bulkSample struct {
	rt      time.Duration
	size    int64
	failure string
}

// bulkOf builds the Bulk of samples; withExact fills Bulk.Exact.
func bulkOf(samples []bulkSample, withExact bool) *Bulk {
	b := &Bulk{Requests: int64(len(samples))}
	buckets := map[int64]int64{}
	exact := map[int64]int64{}
	fails := map[string]int64{}
	var order []string
	for i, s := range samples {
		buckets[BucketKey(s.rt)]++
		exact[int64(toMicros(s.rt))]++
		if s.failure != "" {
			if fails[s.failure] == 0 {
				order = append(order, s.failure)
			}
			fails[s.failure]++
		}
		b.Total += s.rt
		b.ContentLength += s.size
		if i == 0 || s.rt < b.Min {
			b.Min = s.rt
		}
		b.Max = max(b.Max, s.rt)
	}
	for _, text := range order {
		b.Failures = append(b.Failures, BulkFailure{Text: text, Count: fails[text]})
	}
	for k, n := range buckets {
		b.Buckets = append(b.Buckets, protocol.Count{Key: k, N: n})
	}
	if withExact {
		b.Exact = []protocol.Count{}
		for k, n := range exact {
			b.Exact = append(b.Exact, protocol.Count{Key: k, N: n})
		}
	}
	return b
}

func randomSamples(rng *rand.Rand, n int) []bulkSample {
	failures := []string{"", "", "", "HTTPError('500 Server Error: Internal Server Error for url: http://x/')",
		"ConnectionResetError(104, 'Connection reset by peer')", "CatchResponseError('status 200, expected 201')"}
	out := make([]bulkSample, n)
	for i := range out {
		// Times over every bucket range: µs to minutes, ties included.
		var rt time.Duration
		switch rng.IntN(5) {
		case 0:
			rt = time.Duration(rng.IntN(100)) * time.Millisecond / 2 // ties at .5 ms
		case 1:
			rt = time.Duration(rng.Int64N(int64(100 * time.Millisecond)))
		case 2:
			rt = time.Duration(rng.Int64N(int64(time.Second)))
		case 3:
			rt = time.Duration(rng.Int64N(int64(20 * time.Second)))
		default:
			rt = time.Duration(rng.Int64N(int64(200 * time.Second)))
		}
		out[i] = bulkSample{rt: rt, size: rng.Int64N(5000), failure: failures[rng.IntN(len(failures))]}
	}
	return out
}

// TestRecordBulkMatchesRecord records random samples one by one and in
// bulk (in random splits, several names, several report windows) and
// requires identical reports, exact histograms included.
func TestRecordBulkMatchesRecord(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		clock := newFakeClock(1_700_000_000.25)
		one := NewRecorder(clock.now)
		bulk := NewRecorder(clock.now)
		one.Clear()
		bulk.Clear()
		names := []string{"/a", "/b", "/c"}
		for window := range 3 {
			for step := range 4 {
				for _, name := range names {
					s := randomSamples(rng, rng.IntN(60))
					for _, x := range s {
						one.Record("GET", name, x.rt, x.size, x.failure)
					}
					// The same samples in up to three bulks.
					rest := s
					for len(rest) > 0 {
						k := 1 + rng.IntN(len(rest))
						if err := bulk.RecordBulk("GET", name, bulkOf(rest[:k], true)); err != nil {
							t.Fatalf("seed %d: %v", seed, err)
						}
						rest = rest[k:]
					}
				}
				clock.add(time.Duration(300+step*400) * time.Millisecond)
			}
			a, b := one.Report(map[string]int64{"U": 3}, 3), bulk.Report(map[string]int64{"U": 3}, 3)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("seed %d window %d: reports differ\none:  %+v\nbulk: %+v", seed, window, a, b)
			}
			if len(a.Stats) == 0 && window == 0 {
				t.Fatalf("seed %d: nothing recorded", seed)
			}
		}
	}
}

// TestRecordBulkWithoutExact checks the Locust part of the report without
// Bulk.Exact, and the exact histogram's count, minimum and maximum.
func TestRecordBulkWithoutExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	clock := newFakeClock(1_700_000_000)
	one, bulk := NewRecorder(clock.now), NewRecorder(clock.now)
	s := randomSamples(rng, 500)
	for _, x := range s {
		one.Record("POST", "/p", x.rt, x.size, x.failure)
	}
	b := bulkOf(s, false)
	if err := bulk.RecordBulk("POST", "/p", b); err != nil {
		t.Fatal(err)
	}
	a, c := one.Report(nil, 0), bulk.Report(nil, 0)
	ea, ec := a.Stats[0].Exact, c.Stats[0].Exact
	a.Stats[0].Exact, c.Stats[0].Exact, a.Total.Exact, c.Total.Exact = nil, nil, nil, nil
	if !reflect.DeepEqual(a, c) {
		t.Fatalf("reports differ\none:  %+v\nbulk: %+v", a, c)
	}
	ha, err := DecodeExact(ea)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := DecodeExact(ec)
	if err != nil {
		t.Fatal(err)
	}
	if ha.Count() != hc.Count() || ha.Min() != hc.Min() || ha.Max() != hc.Max() {
		t.Errorf("exact count/min/max %d %v %v, want %d %v %v", hc.Count(), hc.Min(), hc.Max(), ha.Count(), ha.Min(), ha.Max())
	}
}

func TestRecordBulkRefused(t *testing.T) {
	ok := func() Bulk {
		return Bulk{Requests: 3, Failures: []BulkFailure{{"x", 1}}, Buckets: []protocol.Count{{Key: 5, N: 3}},
			Total: 15 * time.Millisecond, Min: 4 * time.Millisecond, Max: 6 * time.Millisecond}
	}
	tests := []struct {
		name string
		mod  func(b *Bulk)
	}{
		{"negative requests", func(b *Bulk) { b.Requests = -1 }},
		{"negative content length", func(b *Bulk) { b.ContentLength = -1 }},
		{"more failures than requests", func(b *Bulk) { b.Failures[0].Count = 4 }},
		{"empty failure text", func(b *Bulk) { b.Failures[0].Text = "" }},
		{"negative failure count", func(b *Bulk) { b.Failures[0].Count = -1 }},
		{"buckets short", func(b *Bulk) { b.Buckets[0].N = 2 }},
		{"negative bucket", func(b *Bulk) { b.Buckets = append(b.Buckets, protocol.Count{Key: 1, N: -1}) }},
		{"exact short", func(b *Bulk) { b.Exact = []protocol.Count{{Key: 5000, N: 2}} }},
		{"min above max", func(b *Bulk) { b.Min = 7 * time.Millisecond }},
		{"total below max", func(b *Bulk) { b.Total = time.Millisecond }},
	}
	r := NewRecorder(nil)
	good := ok()
	if err := r.RecordBulk("GET", "/", &good); err != nil {
		t.Fatalf("valid bulk refused: %v", err)
	}
	r.Report(nil, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ok()
			b.Failures = slices.Clone(b.Failures)
			b.Buckets = slices.Clone(b.Buckets)
			tt.mod(&b)
			if err := r.RecordBulk("GET", "/", &b); !errors.Is(err, ErrBadBulk) {
				t.Fatalf("err = %v, want ErrBadBulk", err)
			}
			if rep := r.Report(nil, 0); len(rep.Stats) != 0 {
				t.Fatalf("a refused bulk was recorded: %+v", rep.Stats)
			}
		})
	}
}

// TestRecordBulkErrorCap folds texts beyond MaxErrors as Record does.
func TestRecordBulkErrorCap(t *testing.T) {
	clock := newFakeClock(1_700_000_000)
	one, err := NewRecorderWithOptions(Options{MaxErrors: 2, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	bulk, _ := NewRecorderWithOptions(Options{MaxErrors: 2, Now: clock.now})
	s := []bulkSample{{time.Millisecond, 1, "e1"}, {time.Millisecond, 1, "e2"}, {time.Millisecond, 1, "e3"}, {time.Millisecond, 1, "e4"}}
	for _, x := range s {
		one.Record("GET", "/", x.rt, x.size, x.failure)
	}
	if err := bulk.RecordBulk("GET", "/", bulkOf(s, true)); err != nil {
		t.Fatal(err)
	}
	a, b := one.Report(nil, 0), bulk.Report(nil, 0)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("reports differ\none:  %+v\nbulk: %+v", a, b)
	}
	if len(a.Errors) != 3 {
		t.Fatalf("%d error rows, want 2 + the fold", len(a.Errors))
	}
}

func TestRecordBulkAllocs(t *testing.T) {
	r := NewRecorder(nil)
	b := bulkOf([]bulkSample{{3 * time.Millisecond, 10, ""}, {300 * time.Millisecond, 10, "HTTPError('500')"}}, true)
	nb := bulkOf([]bulkSample{{3 * time.Millisecond, 10, ""}, {300 * time.Millisecond, 10, "HTTPError('500')"}}, false)
	if err := r.RecordBulk("GET", "/x", b); err != nil {
		t.Fatal(err)
	}
	r.Report(nil, 0)
	_ = r.RecordBulk("GET", "/x", b)
	for name, bb := range map[string]*Bulk{"exact": b, "buckets only": nb} {
		if n := testing.AllocsPerRun(1000, func() { _ = r.RecordBulk("GET", "/x", bb) }); n != 0 {
			t.Errorf("RecordBulk %s: %v allocs/op; want 0", name, n)
		}
	}
}

// BenchmarkRecordBulk records one second of 10,000 requests of one name in
// 40 Locust buckets with two failure texts.
func BenchmarkRecordBulk(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := randomSamples(rng, 10_000)
	bk := bulkOf(s, false)
	r := NewRecorder(nil)
	_ = r.RecordBulk("GET", "/x", bk)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := r.RecordBulk("GET", "/x", bk); err != nil {
			b.Fatal(err)
		}
	}
}
