package dispatch

// eagerDispatcher is the dispatcher as it was before AddWorker and
// RemoveWorker became lazy and the split dense: every worker change re-sorts
// the workers and recomputes the split at once, over maps. It matched
// Locust 2.12.1 on every compared step, and the tests use it as a reference
// for inputs too large for the Python runner.

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// program counter of the resumable dispatch cycle (Python's generator).
type epc int

const (
	epcIdle epc = iota
	epcStart
	epcAfterStartRebalance
	epcCheckEqual
	epcUp
	epcUpAfterYield
	epcUpExit
	epcDown
	epcDownAfterYield
	epcDownExit
)

type eActiveUser struct {
	worker string
	class  string
}

// eagerDispatcher computes dispatch steps. It is not safe for concurrent use: the
// master drives it from one goroutine.
type eagerDispatcher struct {
	classes []UserClass // sorted by name
	workers []string    // dispatch order

	users   Mapping // the current split
	initial Mapping // the split when NewDispatch was called

	target  int64
	current int64
	perStep int64
	wait    time.Duration

	gen     *eUserGen
	cycle   eWorkerCycle
	active  []eActiveUser
	tryFix  bool // Python's _try_dispatch_fixed
	rebal   bool // a rebalance step is pending
	noUsers bool // the user generator ran dry during a ramp up

	epc     epc
	pending time.Duration // delay for the next paced step
}

// New returns a dispatcher for the given workers and user classes. The
// worker list may be empty; user classes must have unique, non-empty names.
func newEager(workers []string, classes []UserClass) (*eagerDispatcher, error) {
	if len(classes) == 0 {
		return nil, ErrNoUserClasses
	}
	cs := make([]UserClass, len(classes))
	copy(cs, classes)
	seen := make(map[string]bool, len(cs))
	for i := range cs {
		c := &cs[i]
		if c.Name == "" || seen[c.Name] || c.Weight < 0 || c.FixedCount < 0 {
			return nil, fmt.Errorf("%w: %+v", ErrBadUserClass, *c)
		}
		seen[c.Name] = true
		if c.Weight == 0 {
			c.Weight = 1
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	d := &eagerDispatcher{classes: cs, tryFix: true}
	d.workers = eSortWorkers(eDedupe(workers))
	d.users = d.zeroMapping()
	d.initial = d.users.Clone()
	d.gen = newEUserGen(d)
	d.cycle = eWorkerCycle{list: d.workers}
	return d, nil
}

func eDedupe(ids []string) []string {
	out := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// eSortWorkers returns ids in dispatch order: sorted by id, then stably by
// (index within host, id), where the host is the id up to its first "_".
func eSortWorkers(ids []string) []string {
	byID := append([]string(nil), ids...)
	sort.Strings(byID)
	index := make(map[string]int, len(byID))
	perHost := make(map[string]int)
	for _, id := range byID {
		host, _, _ := strings.Cut(id, "_")
		index[id] = perHost[host]
		perHost[host]++
	}
	sort.SliceStable(byID, func(i, j int) bool {
		a, b := byID[i], byID[j]
		if index[a] != index[b] {
			return index[a] < index[b]
		}
		return a < b
	})
	return byID
}

func (d *eagerDispatcher) zeroMapping() Mapping {
	m := make(Mapping, len(d.workers))
	for _, w := range d.workers {
		cs := make(map[string]int64, len(d.classes))
		for _, c := range d.classes {
			cs[c.Name] = 0
		}
		m[w] = cs
	}
	return m
}

// Workers returns the worker ids in dispatch order.
func (d *eagerDispatcher) Workers() []string { return append([]string(nil), d.workers...) }

// Users returns a copy of the current split.
func (d *eagerDispatcher) Users() Mapping { return d.users.Clone() }

// UserCount returns the number of users in the current split.
func (d *eagerDispatcher) UserCount() int64 { return d.current }

// Target returns the target user count of the current dispatch.
func (d *eagerDispatcher) Target() int64 { return d.target }

// InProgress reports whether the current dispatch has steps left.
func (d *eagerDispatcher) InProgress() bool { return d.epc != epcIdle }

// NewDispatch starts a dispatch cycle towards target users at rate users per
// second. The round-robin positions and the class generator carry over from
// the previous dispatch; a pending rebalance is yielded first.
func (d *eagerDispatcher) NewDispatch(target int64, rate float64) error {
	if target < 0 {
		return ErrBadTarget
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("%w: %v", ErrBadRate, rate)
	}
	d.target = target
	d.perStep = int64(math.Max(1, math.Floor(rate)))
	d.wait = time.Duration(float64(d.perStep) / rate * float64(time.Second))
	d.initial = d.users
	d.users = d.users.Clone()
	d.current = d.users.Total()
	d.epc = epcStart
	d.pending = 0
	return nil
}

// Next returns the next step of the current dispatch, or false when the
// dispatch is complete.
func (d *eagerDispatcher) Next() (Step, bool) {
	for {
		switch d.epc {
		case epcIdle:
			d.pending = 0
			return Step{}, false
		case epcStart:
			if d.rebal {
				d.rebal = false
				d.epc = epcAfterStartRebalance
				return d.rebalanceStep(), true
			}
			d.epc = epcCheckEqual
		case epcAfterStartRebalance:
			if d.current == d.target {
				d.epc = epcIdle
				return Step{}, false
			}
			d.epc = epcCheckEqual
		case epcCheckEqual:
			if d.current == d.target {
				d.epc = epcIdle
				return Step{Users: d.initial.Clone()}, true
			}
			d.epc = epcUp
		case epcUp:
			if d.current >= d.target {
				d.epc = epcDown
				continue
			}
			d.addUsers()
			d.epc = epcUpAfterYield
			return d.pacedStep(), true
		case epcUpAfterYield:
			d.epc = epcUpExit
			if d.rebal {
				d.rebal = false
				return d.rebalanceStep(), true
			}
		case epcUpExit:
			d.exitStep()
			if d.noUsers {
				d.noUsers = false
				d.epc = epcDown // Python breaks out of the ramp-up loop
				continue
			}
			d.epc = epcUp
		case epcDown:
			if d.current <= d.target {
				d.epc = epcIdle
				return Step{}, false
			}
			d.removeUsers()
			d.epc = epcDownAfterYield
			return d.pacedStep(), true
		case epcDownAfterYield:
			d.epc = epcDownExit
			if d.rebal {
				d.rebal = false
				return d.rebalanceStep(), true
			}
		case epcDownExit:
			d.exitStep()
			d.epc = epcDown
		}
	}
}

// exitStep is the end of Python's pacing context: no sleep after the step
// that reached the target, else the interval until the next paced step.
func (d *eagerDispatcher) exitStep() {
	if d.current == d.target {
		d.pending = 0
	} else {
		d.pending = d.wait
	}
}

func (d *eagerDispatcher) pacedStep() Step {
	d.pending = 0
	return Step{Users: d.users.Clone()}
}

// Wait advances the dispatch to the point where the next step would be
// computed and returns how long after the start of the previous paced step
// the caller must wait before calling Next (Python sleeps max(0, Wait −
// time spent since then) before computing the step). It is 0 when the next
// step is due at once: the first step, a pending rebalance, or the end. A
// worker added or removed during the wait is taken into account by the step
// Next then computes. Calling Wait again without Next returns the same
// value.
func (d *eagerDispatcher) Wait() time.Duration {
	for {
		switch d.epc {
		case epcUpAfterYield:
			if d.rebal {
				return 0
			}
			d.epc = epcUpExit
		case epcDownAfterYield:
			if d.rebal {
				return 0
			}
			d.epc = epcDownExit
		case epcUpExit:
			d.exitStep()
			if d.noUsers {
				d.noUsers = false
				d.epc = epcDown
			} else {
				d.epc = epcUp
			}
		case epcDownExit:
			d.exitStep()
			d.epc = epcDown
		case epcIdle:
			return 0
		default:
			return d.pending
		}
	}
}

func (d *eagerDispatcher) rebalanceStep() Step {
	return Step{Users: d.users.Clone(), Rebalance: true}
}

func (d *eagerDispatcher) addUsers() {
	goal := min(d.current+d.perStep, d.target)
	for {
		if len(d.workers) == 0 {
			d.noUsers = true
			return
		}
		class, ok := d.gen.next()
		if !ok {
			d.noUsers = true
			return
		}
		w := d.cycle.next()
		d.users[w][class]++
		d.current++
		d.active = append(d.active, eActiveUser{w, class})
		if d.current >= goal {
			return
		}
	}
}

func (d *eagerDispatcher) removeUsers() {
	goal := max(d.current-d.perStep, d.target)
	for len(d.active) > 0 {
		u := d.active[len(d.active)-1]
		d.active = d.active[:len(d.active)-1]
		d.users[u.worker][u.class]--
		d.current--
		d.tryFix = true
		if d.current == 0 || d.current <= goal {
			return
		}
	}
}

// AddWorker adds a worker and schedules a rebalance: the next step re-sends
// the split recomputed from zero over the new worker list.
func (d *eagerDispatcher) AddWorker(id string) {
	ws := d.workers
	if !eContains(ws, id) {
		ws = append(append([]string(nil), ws...), id)
	}
	d.workers = eSortWorkers(ws)
	d.prepareRebalance()
}

// RemoveWorker removes a worker and schedules a rebalance. Removing the last
// worker only forgets it (as Python does): the split is left unchanged until
// a worker is added.
func (d *eagerDispatcher) RemoveWorker(id string) {
	ws := make([]string, 0, len(d.workers))
	for _, w := range d.workers {
		if w != id {
			ws = append(ws, w)
		}
	}
	d.workers = ws
	if len(ws) == 0 {
		return
	}
	d.prepareRebalance()
}

func eContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// prepareRebalance redistributes the current user count from zero over the
// current workers with fresh generators, as Python's _prepare_rebalance.
func (d *eagerDispatcher) prepareRebalance() {
	d.users = d.zeroMapping() // the fresh generator counts fixed users here: zeros
	d.tryFix = true
	gen := newEUserGen(d)
	cyc := eWorkerCycle{list: d.workers}
	dist := d.zeroMapping()
	var active []eActiveUser
	for n := int64(0); n < d.current; n++ {
		class, ok := gen.next()
		if !ok {
			break
		}
		w := cyc.next()
		dist[w][class]++
		active = append(active, eActiveUser{w, class})
	}
	d.users = dist
	d.active = active
	d.gen = gen
	d.cycle = cyc
	d.rebal = true
}

// eWorkerCycle is itertools.cycle over a snapshot of the worker order.
type eWorkerCycle struct {
	list []string
	pos  int
}

func (c *eWorkerCycle) next() string {
	w := c.list[c.pos%len(c.list)]
	c.pos = (c.pos + 1) % len(c.list)
	return w
}

// eUserGen is Python's _user_gen generator turned into a resumable state
// machine. It reads and clears the dispatcher's tryFix flag and counts fixed
// users in the dispatcher's current split, as the generator does.
type eUserGen struct {
	d        *eagerDispatcher
	fixed    []UserClass // fixed_count classes, sorted by name
	fixedCyc classCycle
	weighted classCycle

	inFixed  bool // suspended inside the fixed loop, after a yield
	curFixed map[string]int64
	spawned  map[string]bool
}

func newEUserGen(d *eagerDispatcher) *eUserGen {
	g := &eUserGen{d: d}
	var fx, wt []weighted
	for _, c := range d.classes {
		if c.FixedCount > 0 {
			g.fixed = append(g.fixed, c)
			fx = append(fx, weighted{c.Name, c.FixedCount})
		} else {
			wt = append(wt, weighted{c.Name, c.Weight})
		}
	}
	g.fixedCyc = newClassCycle(fx)
	g.weighted = newClassCycle(wt)
	return g
}

func (g *eUserGen) countFixed() {
	g.curFixed = make(map[string]int64, len(g.fixed))
	for _, c := range g.fixed {
		var n int64
		for _, cs := range g.d.users {
			n += cs[c.Name]
		}
		g.curFixed[c.Name] = n
	}
	g.spawned = make(map[string]bool, len(g.fixed))
	// 2.12.1 only marks a class done when an increment makes it reach its
	// count, so a class that is already full when the counts are re-read
	// (ramp up after a ramp down) makes its loop spin forever. Mark full
	// classes done up front: identical output whenever 2.12.1 terminates.
	for _, c := range g.fixed {
		if g.curFixed[c.Name] >= int64(c.FixedCount) {
			g.spawned[c.Name] = true
		}
	}
}

// next returns the next class name, or false for Python's None.
func (g *eUserGen) next() (string, bool) {
	if g.inFixed {
		// Resumed right after a yield inside the fixed loop.
		g.inFixed = false
		if g.d.tryFix {
			g.countFixed()
			g.d.tryFix = false
		}
	} else if g.d.tryFix {
		g.d.tryFix = false
		g.countFixed()
	} else {
		return nextName(&g.weighted)
	}
	for len(g.spawned) != len(g.fixed) {
		name, ok := nextName(&g.fixedCyc)
		if !ok {
			break
		}
		fc := g.fixedCount(name)
		if g.curFixed[name] < fc {
			g.curFixed[name]++
			if g.curFixed[name] == fc {
				g.spawned[name] = true
			}
			g.inFixed = true
			return name, true
		}
	}
	return nextName(&g.weighted)
}

func (g *eUserGen) fixedCount(name string) int64 {
	for _, c := range g.fixed {
		if c.Name == name {
			return int64(c.FixedCount)
		}
	}
	return 0
}

// nextName returns the name classCycle.next picks.
func nextName(c *classCycle) (string, bool) {
	if len(c.pick) == 0 {
		return "", false
	}
	s := c.seq[c.pos]
	c.next()
	return s, true
}
