package dispatch

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// pair drives the dispatcher and the eager reference with the same calls
// and fails on the first difference in anything they return.
type pair struct {
	t    *testing.T
	name string
	d    *Dispatcher
	e    *eagerDispatcher
	n    int // steps compared
}

func newPair(t *testing.T, name string, workers []string, classes []UserClass) *pair {
	t.Helper()
	d, err := New(workers, classes)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEager(workers, classes)
	if err != nil {
		t.Fatal(err)
	}
	return &pair{t: t, name: name, d: d, e: e}
}

func (p *pair) add(id string)    { p.d.AddWorker(id); p.e.AddWorker(id) }
func (p *pair) remove(id string) { p.d.RemoveWorker(id); p.e.RemoveWorker(id) }

func (p *pair) dispatch(target int64, rate float64) {
	p.t.Helper()
	if err := p.d.NewDispatch(target, rate); err != nil {
		p.t.Fatal(err)
	}
	if err := p.e.NewDispatch(target, rate); err != nil {
		p.t.Fatal(err)
	}
}

// wait compares Wait.
func (p *pair) wait() {
	p.t.Helper()
	if g, w := p.d.Wait(), p.e.Wait(); g != w {
		p.t.Fatalf("%s: Wait() = %v; eager %v", p.name, g, w)
	}
}

// next compares Wait and Next; it reports whether a step was returned.
func (p *pair) next() bool {
	p.t.Helper()
	p.wait()
	gs, gok := p.d.Next()
	ws, wok := p.e.Next()
	if gok != wok || gs.Rebalance != ws.Rebalance || !reflect.DeepEqual(gs.Users, ws.Users) {
		p.t.Fatalf("%s: step %d: Next() = %v %+v; eager %v %+v", p.name, p.n, gok, gs, wok, ws)
	}
	p.n++
	return gok
}

// state compares the accessors.
func (p *pair) state() {
	p.t.Helper()
	d, e := p.d, p.e
	if g, w := d.Workers(), e.Workers(); !reflect.DeepEqual(g, w) && len(g)+len(w) > 0 {
		p.t.Fatalf("%s: Workers() = %v; eager %v", p.name, g, w)
	}
	if g, w := d.Users(), e.Users(); !reflect.DeepEqual(g, w) {
		p.t.Fatalf("%s: Users() = %v; eager %v", p.name, g, w)
	}
	if d.UserCount() != e.UserCount() || d.Target() != e.Target() || d.InProgress() != e.InProgress() {
		p.t.Fatalf("%s: UserCount/Target/InProgress = %d/%d/%v; eager %d/%d/%v", p.name,
			d.UserCount(), d.Target(), d.InProgress(), e.UserCount(), e.Target(), e.InProgress())
	}
}

// TestBurstMatchesEager: bursts of AddWorker/RemoveWorker calls (joins,
// heals, duplicates, unknown ids, the last worker leaving) between and
// inside dispatches give the same steps as the eager dispatcher that
// recomputed the split at every call.
func TestBurstMatchesEager(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 2024))
	hosts := []string{"a", "bb", "c", "host-with-dash"}
	rates := []float64{0.5, 1, 2.5, 7, 40, 1000}
	cases := 200
	if testing.Short() {
		cases = 40
	}
	total := 0
	for i := range cases {
		next := 0
		newID := func() string {
			next++
			return fmt.Sprintf("%s_%x", hosts[rng.IntN(len(hosts))], rng.Uint32()+uint32(next))
		}
		var workers []string
		for range rng.IntN(40) {
			workers = append(workers, newID())
		}
		var classes []UserClass
		for j := range 1 + rng.IntN(4) {
			c := UserClass{Name: fmt.Sprintf("U%d", j), Weight: rng.IntN(5)}
			if rng.IntN(4) == 0 {
				c.FixedCount = 1 + rng.IntN(5)
			}
			classes = append(classes, c)
		}
		p := newPair(t, fmt.Sprintf("case %d", i), workers, classes)
		live := append([]string(nil), workers...)
		var gone []string
		for range 3 + rng.IntN(10) {
			switch r := rng.IntN(10); {
			case r < 4:
				p.dispatch(int64(rng.IntN(300)), rates[rng.IntN(len(rates))])
				for k := rng.IntN(6); k > 0 && p.next(); k-- {
				}
			case r < 8: // a burst
				for range 1 + rng.IntN(30) {
					switch rng.IntN(7) {
					case 0, 1:
						id := newID()
						live = append(live, id)
						p.add(id)
					case 6: // heal
						if len(gone) > 0 {
							k := rng.IntN(len(gone))
							live = append(live, gone[k])
							p.add(gone[k])
							gone = append(gone[:k], gone[k+1:]...)
						}
					case 2:
						if len(live) > 0 {
							p.add(live[rng.IntN(len(live))]) // duplicate
						}
					case 3:
						p.remove(newID()) // unknown
					default:
						if len(live) > 0 {
							k := rng.IntN(len(live))
							p.remove(live[k])
							gone = append(gone, live[k])
							live = append(live[:k], live[k+1:]...)
						}
					}
					if rng.IntN(20) == 0 {
						p.wait()
					}
				}
			case r < 9:
				p.state()
			default:
				for p.next() {
				}
			}
		}
		for p.next() {
		}
		p.state()
		total += p.n
	}
	t.Logf("compared %d steps", total)
}

// TestLargeBurstMatchesEager is the master's heal burst at scale: K of N
// workers leave and come back, then a re-dispatch to the same target, and a
// ramp down and up that places users over the healed list.
func TestLargeBurstMatchesEager(t *testing.T) {
	n, k := 1000, 150
	if testing.Short() {
		n, k = 300, 50
	}
	ws := benchWorkers(n)
	p := newPair(t, "large", ws[k:], benchClasses)
	p.dispatch(int64(3*n), float64(n))
	for p.next() {
	}
	for _, w := range ws[k:][:k] {
		p.remove(w)
	}
	for _, w := range ws[:2*k] { // k new workers, k healed
		p.add(w)
	}
	p.dispatch(int64(3*n), float64(n))
	for p.next() {
	}
	p.state()
	p.dispatch(int64(n), float64(n)/3)
	p.next()
	for _, w := range ws[:k/2] {
		p.remove(w)
	}
	for p.next() {
	}
	p.dispatch(int64(4*n), float64(n))
	for p.next() {
	}
	p.state()
}

// TestChurnMatchesEager: long join/leave churn with no dispatch in between
// (a master between tests) keeps the bookkeeping bounded and the order
// right.
func TestChurnMatchesEager(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pool := benchWorkers(30)
	p := newPair(t, "churn", pool[:5], benchClasses)
	p.dispatch(40, 1000)
	for p.next() {
	}
	for i := range 3000 {
		id := pool[rng.IntN(len(pool))]
		if rng.IntN(2) == 0 {
			p.add(id)
		} else {
			p.remove(id)
		}
		if n := len(p.d.added) + len(p.d.unsorted); n > 2*len(p.d.members)+2*64+len(pool) {
			t.Fatalf("op %d: %d ids pending for %d workers", i, n, len(p.d.members))
		}
		if i%500 == 499 {
			p.state()
		}
	}
	p.dispatch(70, 1000)
	for p.next() {
	}
	p.state()
}

// TestAddWorkerCheap locks in that a worker joining or leaving does no work
// proportional to the number of workers: no allocation on average.
func TestAddWorkerCheap(t *testing.T) {
	ws := benchWorkers(2000)
	d, err := New(ws, benchClasses)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.NewDispatch(2000, 2000); err != nil {
		t.Fatal(err)
	}
	drain(t, d)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		d.RemoveWorker(ws[i%len(ws)])
		d.AddWorker(ws[i%len(ws)])
		i++
	})
	if allocs > 0.1 {
		t.Errorf("RemoveWorker+AddWorker: %v allocs per call; want 0", allocs)
	}
}
