package dispatch

import (
	"fmt"
	"testing"
)

// benchWorkers returns n Locust-style worker ids (hostname_hex) over
// n/100 hosts (at least one).
func benchWorkers(n int) []string {
	hosts := max(1, n/100)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("host%d_%032x", i%hosts, i)
	}
	return ws
}

var benchClasses = []UserClass{{Name: "WebUser", Weight: 3}, {Name: "ApiUser", Weight: 1}, {Name: "Admin", FixedCount: 10}}

// benchDispatcher returns a dispatcher over workers that has placed users.
func benchDispatcher(b *testing.B, workers []string, users int64) *Dispatcher {
	b.Helper()
	d, err := New(workers, benchClasses)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.NewDispatch(users, float64(users)); err != nil {
		b.Fatal(err)
	}
	drain(b, d)
	return d
}

// BenchmarkAddWorker is one AddWorker or RemoveWorker call (alternating on
// one worker) on a dispatcher that runs one user per worker: the cost a
// worker joining or leaving puts on the master's loop.
func BenchmarkAddWorker(b *testing.B) {
	for _, n := range []int{10000, 20000} {
		b.Run(fmt.Sprintf("workers=%dk", n/1000), func(b *testing.B) {
			ws := benchWorkers(n)
			d := benchDispatcher(b, ws, int64(n))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					d.RemoveWorker(ws[0])
				} else {
					d.AddWorker(ws[0])
				}
			}
		})
	}
}

// BenchmarkHealBurst is a burst of K workers going missing and K healing
// (2K RemoveWorker/AddWorker calls), then one re-dispatch to the same
// target, drained: what the master does when part of its workers flap.
func BenchmarkHealBurst(b *testing.B) {
	for _, n := range []int{10000, 20000} {
		for _, k := range []int{100, 1000} {
			b.Run(fmt.Sprintf("workers=%dk/K=%d", n/1000, k), func(b *testing.B) {
				ws := benchWorkers(n)
				d := benchDispatcher(b, ws, int64(n))
				b.ReportAllocs()
				for b.Loop() {
					for _, w := range ws[:k] {
						d.RemoveWorker(w)
					}
					for _, w := range ws[:k] {
						d.AddWorker(w)
					}
					if err := d.NewDispatch(int64(n), float64(n)); err != nil {
						b.Fatal(err)
					}
					drain(b, d)
				}
			})
		}
	}
}

// BenchmarkDispatch is one full dispatch from zero in one step (rate =
// users): New, NewDispatch and the step's Mapping.
func BenchmarkDispatch(b *testing.B) {
	for _, n := range []int{10000, 20000} {
		for _, per := range []int{1, 100} {
			b.Run(fmt.Sprintf("workers=%dk/users=%dk", n/1000, n*per/1000), func(b *testing.B) {
				ws := benchWorkers(n)
				users := int64(n * per)
				b.ReportAllocs()
				for b.Loop() {
					benchDispatcher(b, ws, users)
				}
			})
		}
	}
}

// BenchmarkRedispatch is the master's re-dispatch after one worker joined:
// AddWorker, NewDispatch to the same target and the rebalance step.
func BenchmarkRedispatch(b *testing.B) {
	for _, n := range []int{10000, 20000} {
		for _, per := range []int{1, 100} {
			b.Run(fmt.Sprintf("workers=%dk/users=%dk", n/1000, n*per/1000), func(b *testing.B) {
				ws := benchWorkers(n)
				users := int64(n * per)
				d := benchDispatcher(b, ws[1:], users)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if i%2 == 0 {
						d.AddWorker(ws[0])
					} else {
						d.RemoveWorker(ws[0])
					}
					if err := d.NewDispatch(users, float64(users)); err != nil {
						b.Fatal(err)
					}
					drain(b, d)
				}
			})
		}
	}
}
