package dispatch

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestRunsMatchEager stresses the run-length placement order (userRun):
// larger fixed counts, so that full classes are skipped inside the
// fixed_count cycle, and ramps up and down across rebalances, against the
// eager dispatcher that keeps one entry per user.
func TestRunsMatchEager(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 1415))
	rates := []float64{1, 3, 17, 250, 5000}
	total := 0
	for i := range 60 {
		var workers []string
		for j := range 1 + rng.IntN(7) {
			workers = append(workers, fmt.Sprintf("h%d_%d", rng.IntN(3), j))
		}
		var classes []UserClass
		for j := range 1 + rng.IntN(4) {
			c := UserClass{Name: fmt.Sprintf("U%d", j), Weight: 1 + rng.IntN(6)}
			if rng.IntN(2) == 0 {
				c.FixedCount = 1 + rng.IntN(60)
			}
			classes = append(classes, c)
		}
		p := newPair(t, fmt.Sprintf("case %d %v", i, classes), workers, classes)
		for k := range 8 {
			p.dispatch(int64(rng.IntN(600)), rates[rng.IntN(len(rates))])
			for s := rng.IntN(40); s > 0 && p.next(); s-- {
			}
			if k%3 == 2 {
				id := fmt.Sprintf("h%d_new%d", rng.IntN(3), k)
				p.add(id)
			}
			p.state()
		}
		for p.next() {
		}
		p.state()
		total += p.n
	}
	t.Logf("compared %d steps", total)
}
