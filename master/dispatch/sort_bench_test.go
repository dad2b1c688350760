package dispatch

import (
	"fmt"
	"testing"
)

// BenchmarkSortWorkers is the dispatch order of all workers, computed once
// per rebalance after a worker joined.
func BenchmarkSortWorkers(b *testing.B) {
	for _, n := range []int{10000, 20000} {
		b.Run(fmt.Sprintf("workers=%dk", n/1000), func(b *testing.B) {
			ws := benchWorkers(n)
			ids := make([]string, n)
			b.ReportAllocs()
			for b.Loop() {
				copy(ids, ws)
				sortWorkers(ids)
			}
		})
	}
}
