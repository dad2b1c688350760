package cluster

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/stats"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		name    string
		load    float64
		n       int
		integer bool
		want    []float64
	}{
		{"rate evenly", 300, 2, false, []float64{150, 150}},
		{"rate thirds", 100, 3, false, []float64{100.0 / 3, 100.0 / 3, 100.0 / 3}},
		{"connections evenly", 300, 2, true, []float64{150, 150}},
		{"remainder spread", 301, 3, true, []float64{101, 100, 100}},
		{"remainder of two", 302, 3, true, []float64{101, 101, 100}},
		{"fewer than workers", 2, 3, true, []float64{1, 1, 0}},
		{"fraction dropped", 7.9, 2, true, []float64{4, 3}},
		{"one worker", 123, 1, true, []float64{123}},
		{"no worker", 10, 0, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Split(c.load, c.n, c.integer)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Split(%v, %d, %v) = %v; want %v", c.load, c.n, c.integer, got, c.want)
			}
		})
	}
	if got := SplitCount(64, 3); !slices.Equal(got, []int{22, 21, 21}) {
		t.Fatalf("SplitCount(64, 3) = %v", got)
	}
}

// Merging the workers' histograms gives exactly the percentiles of one
// histogram holding every sample, whatever the samples' split; sums and
// the generator limit are the workers'.
func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	all := make([]time.Duration, 30000)
	for i := range all {
		all[i] = time.Duration(rng.ExpFloat64()*float64(3*time.Millisecond)) + 50*time.Microsecond
	}
	one := Histogram(all)
	var sum stats.ExactSum
	if err := sum.Add(one); err != nil {
		t.Fatal(err)
	}
	wantP := func(p float64) time.Duration { d, _ := sum.Percentile(p); return d }
	for _, c := range []struct {
		name  string
		cuts  []int // sample boundaries between workers
		limit []string
		want  string
	}{
		{"halves", []int{15000}, []string{"", ""}, ""},
		{"uneven thirds", []int{100, 29000}, []string{"", "CPU saturated", "pacing"}, "worker 2 (b): CPU saturated"},
		{"all on one of two", []int{30000}, []string{"", ""}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			bounds := append(append([]int{0}, c.cuts...), len(all))
			var parts []Part
			var max time.Duration
			for i := range len(bounds) - 1 {
				s := slices.Clone(all[bounds[i]:bounds[i+1]])
				slices.Sort(s)
				tr := capacity.Trial{Duration: time.Duration(i+1) * time.Second, Attempted: int64(len(s)) + 2, Failed: 2, Achieved: float64(len(s)),
					Bytes: int64(len(s)) * 10, SecondRound: 3, SecondRoundFailed: 1, Errors: map[string]int64{"timeout": 1, "reset": int64(i)},
					GeneratorLimit: c.limit[i]}
				if len(s) > 0 {
					tr.Max = s[len(s)-1]
					max = tr.Max
				}
				parts = append(parts, Part{Worker: "worker " + string(rune('1'+i)) + " (" + string(rune('a'+i)) + ")", Result: Result{Trial: tr, Latency: Histogram(s)}})
			}
			got, err := Merge(parts)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(len(parts))
			if got.Attempted != int64(len(all))+2*n || got.Failed != 2*n || got.Achieved != float64(len(all)) || got.Bytes != int64(len(all))*10 ||
				got.SecondRound != 3*n || got.SecondRoundFailed != n || got.Duration != time.Duration(n)*time.Second || got.GeneratorLimit != c.want {
				t.Fatalf("merged %+v", got)
			}
			if got.Errors["timeout"] != n || got.Errors["reset"] != n*(n-1)/2 {
				t.Fatalf("errors %v", got.Errors)
			}
			if got.P50 != wantP(0.5) || got.P95 != wantP(0.95) || got.P99 != wantP(0.99) || got.P99 == 0 {
				t.Fatalf("percentiles %v %v %v; one histogram: %v %v %v", got.P50, got.P95, got.P99, wantP(0.5), wantP(0.95), wantP(0.99))
			}
			if got.Max < max || got.Max != slices.Max(all) {
				t.Fatalf("max %v; want %v", got.Max, slices.Max(all))
			}
		})
	}
	// The histogram percentile is within the stated error of the samples'
	// nearest rank.
	s := slices.Clone(all)
	slices.Sort(s)
	exact := s[int(0.99*float64(len(s)))-1]
	if d := wantP(0.99) - exact; d < -exact/200-time.Microsecond || d > exact/200+time.Microsecond {
		t.Fatalf("p99 %v; samples' %v", wantP(0.99), exact)
	}
	if _, err := Merge([]Part{{Worker: "w", Result: Result{Latency: []byte{0xff, 1, 2}}}}); err == nil {
		t.Fatal("a malformed histogram merged")
	}
}

func BenchmarkMerge(b *testing.B) {
	s := make([]time.Duration, 10000)
	for i := range s {
		s[i] = time.Duration(i) * time.Microsecond
	}
	h := Histogram(s)
	parts := []Part{{"w1", Result{Latency: h}}, {"w2", Result{Latency: h}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Merge(parts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHistogram: a worker's cost of shipping a trial's samples.
func BenchmarkHistogram(b *testing.B) {
	s := make([]time.Duration, 100000)
	for i := range s {
		s[i] = time.Duration(i%5000) * time.Microsecond
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(Histogram(s)) == 0 {
			b.Fatal("empty")
		}
	}
}
