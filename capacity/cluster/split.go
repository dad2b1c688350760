package cluster

import (
	"fmt"
	"math"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/stats"
)

// Split returns the shares of load over n workers: a whole load (integer,
// connections) evenly with the remainder one each over the first workers,
// so the shares are whole and sum to load; a rate load/n each. n < 1 gives
// nil.
func Split(load float64, n int, integer bool) []float64 {
	if n < 1 {
		return nil
	}
	out := make([]float64, n)
	if !integer {
		for i := range out {
			out[i] = load / float64(n)
		}
		return out
	}
	whole := math.Floor(load)
	each := math.Floor(whole / float64(n))
	rem := int(whole - each*float64(n))
	for i := range out {
		out[i] = each
		if i < rem {
			out[i]++
		}
	}
	return out
}

// SplitCount splits a whole count (tps's keep-alive connections) over n
// workers as Split does.
func SplitCount(total, n int) []int {
	f := Split(float64(total), n, true)
	out := make([]int, len(f))
	for i, x := range f {
		out[i] = int(x)
	}
	return out
}

// Histogram encodes samples as an exact latency histogram (package stats'
// encoding, what a stats report's Exact holds); nil when there are none.
func Histogram(samples []time.Duration) []byte {
	if len(samples) == 0 {
		return nil
	}
	at := time.Unix(0, 0)
	r := stats.NewRecorder(func() time.Time { return at })
	for _, d := range samples {
		r.Record("BENCH", "trial", d, 0, "")
	}
	return r.Report(nil, 0).Total.Exact
}

// Part is one worker's result, named for the merged trial's messages.
type Part struct {
	Worker string
	Result Result
}

// Merge is the cluster's trial from its workers' parts (in worker order):
// counts, achieved load, bytes, the second round and the errors by kind
// summed; the longest duration; percentiles from the merged histograms and
// the largest maximum; the first generator limit and the first generator
// strain, each prefixed with its worker's name; the TLS information and the
// mix counts as MergeTLS and MergeMix merge them. A histogram that does not
// decode, or counts whose sum overflows (checkSums), is an error.
func Merge(parts []Part) (capacity.Trial, error) {
	var t capacity.Trial
	if err := checkSums(parts); err != nil {
		return t, err
	}
	var sum stats.ExactSum
	var tlsInfos []*capacity.TLSInfo
	var mixes [][]capacity.MixCount
	for _, p := range parts {
		w := p.Result.Trial
		t.Duration = max(t.Duration, w.Duration)
		t.Attempted += w.Attempted
		t.Failed += w.Failed
		t.Achieved += w.Achieved
		t.Bytes += w.Bytes
		t.SecondRound += w.SecondRound
		t.SecondRoundFailed += w.SecondRoundFailed
		t.Max = max(t.Max, w.Max)
		for k, v := range w.Errors {
			if t.Errors == nil {
				t.Errors = map[string]int64{}
			}
			t.Errors[k] += v
		}
		if w.GeneratorLimit != "" && t.GeneratorLimit == "" {
			t.GeneratorLimit = p.Worker + ": " + w.GeneratorLimit
		}
		if w.GeneratorStrain != "" && t.GeneratorStrain == "" {
			t.GeneratorStrain = p.Worker + ": " + w.GeneratorStrain
		}
		tlsInfos = append(tlsInfos, w.TLS)
		mixes = append(mixes, w.Mix)
		if len(p.Result.Latency) > 0 {
			if err := sum.Add(p.Result.Latency); err != nil {
				return t, fmt.Errorf("cluster: %s's latency histogram: %w", p.Worker, err)
			}
		}
	}
	t.TLS, t.Mix = MergeTLS(tlsInfos), MergeMix(mixes)
	t.P50, _ = sum.Percentile(0.50)
	t.P95, _ = sum.Percentile(0.95)
	t.P99, _ = sum.Percentile(0.99)
	if t.Max > 0 { // the histogram's whole microseconds against the exact maximum
		t.P50, t.P95, t.P99 = min(t.P50, t.Max), min(t.P95, t.Max), min(t.P99, t.Max)
	}
	return t, nil
}
