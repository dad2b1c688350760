package dispatch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// The reference for inputs too large for the Python comparison
// (TestMatchesLocust) is the Dispatcher itself, settled after every worker
// change: calling Users and Workers after each AddWorker and RemoveWorker
// makes it recompute the split and the order at once, as Locust 2.12.1
// does on every call. The lazy Dispatcher under test records the changes
// and recomputes once, when needed; both must return the same steps. Only
// the public API is used, so the comparison holds whatever bookkeeping the
// lazy path keeps. Invariants (checkStep) cover what neither twin could
// get right by agreeing.

// pair drives a lazy and a settled dispatcher with the same calls and
// fails on the first difference in anything they return.
type pair struct {
	t       *testing.T
	name    string
	d       *Dispatcher // lazy: changes are recomputed when needed
	e       *Dispatcher // settled after every change
	classes []UserClass
	n       int // steps compared
}

func newPair(t *testing.T, name string, workers []string, classes []UserClass) *pair {
	t.Helper()
	d, err := New(workers, classes)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(workers, classes)
	if err != nil {
		t.Fatal(err)
	}
	p := &pair{t: t, name: name, d: d, e: e, classes: classes}
	p.settle()
	return p
}

// settle makes the reference recompute its split and worker order now.
func (p *pair) settle() {
	p.e.Users()
	p.e.Workers()
}

func (p *pair) add(id string)    { p.d.AddWorker(id); p.e.AddWorker(id); p.settle() }
func (p *pair) remove(id string) { p.d.RemoveWorker(id); p.e.RemoveWorker(id); p.settle() }

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
		p.t.Fatalf("%s: Wait() = %v; settled %v", p.name, g, w)
	}
}

// next compares Wait and Next, and checks the step's invariants; it
// reports whether a step was returned.
func (p *pair) next() bool {
	p.t.Helper()
	p.wait()
	before := p.d.UserCount()
	gs, gok := p.d.Next()
	ws, wok := p.e.Next()
	if gok != wok || gs.Rebalance != ws.Rebalance || !reflect.DeepEqual(gs.Users, ws.Users) {
		p.t.Fatalf("%s: step %d: Next() = %v %+v; settled %v %+v", p.name, p.n, gok, gs, wok, ws)
	}
	if gok {
		checkStep(p.t, p.name, p.d, p.classes, gs)
		if n, target := p.d.UserCount(), p.d.Target(); n < min(before, target) || n > max(before, target) {
			p.t.Fatalf("%s: step %d went from %d to %d users; target %d", p.name, p.n, before, n, target)
		}
	}
	p.n++
	return gok
}

// drain runs the current dispatch to its end and checks that it reached
// its target (the caller knows workers were there throughout and a
// weighted class exists).
func (p *pair) drain() {
	p.t.Helper()
	for p.next() {
	}
	if n, target := p.d.UserCount(), p.d.Target(); n != target {
		p.t.Fatalf("%s: dispatch ended at %d users; target %d", p.name, n, target)
	}
}

// checkStep checks what holds for every step whoever computed it: it
// covers every worker and every class, a rebalance spreads the users over
// the workers within one of each other, no fixed_count class exceeds its
// count, and a paced step holds UserCount users.
func checkStep(t *testing.T, name string, d *Dispatcher, classes []UserClass, s Step) {
	t.Helper()
	workers := d.Workers()
	if len(workers) > 0 && len(s.Users) != len(workers) {
		t.Fatalf("%s: step covers %d workers; have %d", name, len(s.Users), len(workers))
	}
	lo, hi := int64(math.MaxInt64), int64(-1)
	for w, cs := range s.Users {
		if len(cs) != len(classes) {
			t.Fatalf("%s: worker %s has %d classes; want %d", name, w, len(cs), len(classes))
		}
		var n int64
		for _, c := range cs {
			n += c
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	if s.Rebalance && len(s.Users) > 0 && hi-lo > 1 {
		t.Fatalf("%s: users per worker range from %d to %d; want within 1", name, lo, hi)
	}
	totals := s.Users.Classes()
	for _, c := range classes {
		if c.FixedCount > 0 && totals[c.Name] > int64(c.FixedCount) {
			t.Fatalf("%s: class %s has %d users; fixed count %d", name, c.Name, totals[c.Name], c.FixedCount)
		}
	}
	if total := s.Users.Total(); len(s.Users) > 0 && !s.Rebalance && total != d.UserCount() {
		t.Fatalf("%s: step total %d; UserCount() = %d", name, total, d.UserCount())
	}
}

// state compares the accessors.
func (p *pair) state() {
	p.t.Helper()
	d, e := p.d, p.e
	if g, w := d.Workers(), e.Workers(); !reflect.DeepEqual(g, w) && len(g)+len(w) > 0 {
		p.t.Fatalf("%s: Workers() = %v; settled %v", p.name, g, w)
	}
	if g, w := d.Users(), e.Users(); !reflect.DeepEqual(g, w) {
		p.t.Fatalf("%s: Users() = %v; settled %v", p.name, g, w)
	}
	if d.UserCount() != e.UserCount() || d.Target() != e.Target() || d.InProgress() != e.InProgress() {
		p.t.Fatalf("%s: UserCount/Target/InProgress = %d/%d/%v; settled %d/%d/%v", p.name,
			d.UserCount(), d.Target(), d.InProgress(), e.UserCount(), e.Target(), e.InProgress())
	}
}

// TestBurstMatchesSettled: bursts of AddWorker/RemoveWorker calls (joins,
// heals, duplicates, unknown ids, the last worker leaving) between and
// inside dispatches give the same steps as a dispatcher settled after
// every call.
func TestBurstMatchesSettled(t *testing.T) {
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

// TestLargeBurstMatchesSettled is the master's heal burst at scale: K of N
// workers leave and come back, then a re-dispatch to the same target, and a
// ramp down and up that places users over the healed list.
func TestLargeBurstMatchesSettled(t *testing.T) {
	n, k := 1000, 150
	if testing.Short() {
		n, k = 300, 50
	}
	ws := benchWorkers(n)
	p := newPair(t, "large", ws[k:], benchClasses)
	p.dispatch(int64(3*n), float64(n))
	p.drain()
	for _, w := range ws[k:][:k] {
		p.remove(w)
	}
	for _, w := range ws[:2*k] { // k new workers, k healed
		p.add(w)
	}
	p.dispatch(int64(3*n), float64(n))
	p.drain()
	p.state()
	p.dispatch(int64(n), float64(n)/3)
	p.next()
	for _, w := range ws[:k/2] {
		p.remove(w)
	}
	p.drain()
	p.dispatch(int64(4*n), float64(n))
	p.drain()
	p.state()
}

// TestChurnMatchesSettled: long join/leave churn with no dispatch in
// between (a master between tests) keeps the order right.
func TestChurnMatchesSettled(t *testing.T) {
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

// TestWorkerOrderFollowsPython: the worker order is Python's list after
// the same calls: every AddWorker (a duplicate too) re-sorts the workers
// present, by (index within host, id); every RemoveWorker deletes in place
// from the last sort. The order is read only after the last call, so the
// lazy path has every change pending at once.
func TestWorkerOrderFollowsPython(t *testing.T) {
	four := []string{"a_1", "a_2", "b_1", "b_2"} // sorted: a_1 b_1 a_2 b_2
	for _, c := range []struct {
		name    string
		workers []string
		ops     []string // "+id" adds, "-id" removes
		want    []string
	}{
		{"initial sort", four, nil, []string{"a_1", "b_1", "a_2", "b_2"}},
		{"removal keeps the order", four, []string{"-a_1"}, []string{"b_1", "a_2", "b_2"}},
		{"duplicate add re-sorts", four, []string{"-a_1", "+b_1"}, []string{"a_2", "b_1", "b_2"}},
		{"new id re-sorts", four, []string{"-a_1", "+c_1"}, []string{"a_2", "b_1", "c_1", "b_2"}},
		{"removal after an add", four, []string{"+c_1", "-a_1"}, []string{"b_1", "c_1", "a_2", "b_2"}},
		{"removed and re-added", four, []string{"-a_1", "-b_2", "+a_1"}, []string{"a_1", "b_1", "a_2"}},
		{"unknown id removed", four, []string{"-a_1", "-z_9"}, []string{"b_1", "a_2", "b_2"}},
	} {
		d, err := New(c.workers, []UserClass{{Name: "U"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range c.ops {
			if op[0] == '+' {
				d.AddWorker(op[1:])
			} else {
				d.RemoveWorker(op[1:])
			}
		}
		if got := d.Workers(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Workers() after %v = %v; want %v", c.name, c.ops, got, c.want)
		}
	}
}
