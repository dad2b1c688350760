package cluster

import (
	"fmt"
	"math"
)

// checkSums refuses parts whose counts, summed as Merge sums them, do not
// fit an int64, or whose achieved loads sum past what a float64 holds:
// each is bounded when decoded, but not their sum over the cluster, and a
// wrapped count would be a silent wrong number (a negative attempted, an
// infinite achieved load).
func checkSums(parts []Part) error {
	sums := map[string]int64{}
	var achieved float64
	for _, p := range parts {
		w := p.Result.Trial
		add := func(name string, v int64) bool {
			if v < 0 || v > math.MaxInt64-sums[name] {
				return false
			}
			sums[name] += v
			return true
		}
		ok := add("attempted", w.Attempted) && add("failed", w.Failed) && add("bytes", w.Bytes) &&
			add("second round", w.SecondRound) && add("second round failed", w.SecondRoundFailed) && w.Duration >= 0 && w.Max >= 0
		if ok && w.TLS != nil {
			ok = add("tls full", w.TLS.Full) && add("tls resumed", w.TLS.Resumed)
		}
		for k, v := range w.Errors {
			ok = ok && add("error "+k, v)
		}
		for _, c := range w.Mix {
			s := fmt.Sprint("mix ", c.Size)
			ok = ok && add(s+" count", c.Count) && add(s+" failed", c.Failed) && add(s+" bytes", c.Bytes)
		}
		achieved += w.Achieved
		if !ok || !(achieved >= 0) || math.IsInf(achieved, 0) {
			return fmt.Errorf("%w: %s: counts that are negative or overflow when summed over the workers", ErrMessage, p.Worker)
		}
	}
	return nil
}
