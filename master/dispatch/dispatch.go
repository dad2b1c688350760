// Package dispatch is Locust's user dispatcher as pure logic: it decides how
// many users of each class every worker runs, step by step, while a test
// ramps up or down, and recomputes the split when workers join or leave.
//
// It follows locust/dispatch.py (UsersDispatcher) of Locust 2.12.1, whose
// outputs it reproduces exactly (the tests compare every step with the Python
// implementation run on the same inputs):
//
//   - Workers are ordered by id, then interleaved across hosts: the host is
//     the id up to its first "_", and the order is (index within host, id).
//   - Users are handed to workers round-robin; the position persists across
//     steps and across NewDispatch calls, and is rebuilt only on a rebalance.
//   - User classes come from a persistent generator: fixed_count classes
//     first (until each is full), then weighted classes by smooth weighted
//     round-robin (nginx's algorithm, the roundrobin package's smooth), with
//     weights normalised to round(2*w/min(w)), rounding halves to even.
//   - A ramp goes in steps of max(1, floor(rate)) users, rate/steps apart;
//     a ramp down removes the most recently added users first (LIFO).
//   - Adding or removing a worker recomputes the whole split from zero for
//     the current user count and yields it at once (a rebalance).
//
// The Dispatcher never sleeps: Wait tells the caller how long to pause
// before asking for the next step, so pacing is the caller's job and tests
// need no clock. The caller's loop is
//
//	for {
//		if d := disp.Wait(); d > 0 { sleep until lastPaced+d }
//		step, ok := disp.Next()
//		if !ok { break }
//		if !step.Rebalance { lastPaced = now }
//		send(step.Users)
//	}
//
// Workers may be added or removed at any point of that loop (from the same
// goroutine), as Locust's master does between steps.
//
// Deliberate differences from 2.12.1, none of which changes a mapping:
//   - AddWorker with an id already present does not add a duplicate entry
//     (Python would cycle over the same worker twice); it still rebalances.
//   - InProgress is false as soon as Next has returned false. (2.12.1 leaves
//     its dispatch_in_progress flag set after a rebalance-only dispatch,
//     which stops later joins from triggering a re-dispatch.)
//   - With no workers at all, no users are placed (Python raises).
//   - 2.12.1 hangs (an endless loop that blocks the whole master) when
//     fixed_count classes are all full at a re-count, as on a ramp up after
//     a ramp down; here such classes are simply skipped. HEAD's generator
//     does the same.
package dispatch

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Errors returned by New and NewDispatch.
var (
	// ErrNoUserClasses means the dispatcher was given no user class.
	ErrNoUserClasses = errors.New("dispatch: no user classes")
	// ErrBadUserClass means a user class has an empty or duplicate name, or a
	// negative weight or fixed count.
	ErrBadUserClass = errors.New("dispatch: bad user class")
	// ErrBadRate means a spawn rate that is not a positive finite number.
	ErrBadRate = errors.New("dispatch: spawn rate must be positive")
	// ErrBadTarget means a negative target user count.
	ErrBadTarget = errors.New("dispatch: negative user count")
)

// UserClass is one user class as the dispatcher sees it: Locust's User
// subclass name with its weight and fixed_count attributes.
type UserClass struct {
	// Name is the class name sent to workers in spawn messages.
	Name string
	// Weight is the class's relative weight among the classes whose
	// FixedCount is 0. If zero, 1 is used (Locust's default).
	Weight int
	// FixedCount, when positive, is the exact number of users of this class
	// to run in total across all workers; such classes are placed first and
	// their Weight is ignored.
	FixedCount int
}

// Mapping is a dispatch result: worker id → user class name → number of
// users. Every worker known to the dispatcher is present with every class,
// zeros included. A Mapping returned by the Dispatcher belongs to the caller.
type Mapping map[string]map[string]int64

// Total returns the number of users in m.
func (m Mapping) Total() int64 {
	var n int64
	for _, w := range m {
		for _, c := range w {
			n += c
		}
	}
	return n
}

// Classes returns the number of users per class summed over all workers.
func (m Mapping) Classes() map[string]int64 {
	out := make(map[string]int64)
	for _, w := range m {
		for c, n := range w {
			out[c] += n
		}
	}
	return out
}

// Clone returns a deep copy of m.
func (m Mapping) Clone() Mapping {
	out := make(Mapping, len(m))
	for w, cs := range m {
		c2 := make(map[string]int64, len(cs))
		for c, n := range cs {
			c2[c] = n
		}
		out[w] = c2
	}
	return out
}

// Step is one dispatch iteration: the absolute users per worker to send in
// one spawn message per worker.
type Step struct {
	// Users is the full mapping for this step.
	Users Mapping
	// Rebalance is true for a step that only re-sends the split recomputed
	// after a worker joined or left. Such a step does not restart the pacing
	// interval (see Wait).
	Rebalance bool
}

// program counter of the resumable dispatch cycle (Python's generator).
type pc int

const (
	pcIdle pc = iota
	pcStart
	pcAfterStartRebalance
	pcCheckEqual
	pcUp
	pcUpAfterYield
	pcUpExit
	pcDown
	pcDownAfterYield
	pcDownExit
)

type activeUser struct {
	worker string
	class  string
}

// Dispatcher computes dispatch steps. It is not safe for concurrent use: the
// master drives it from one goroutine.
type Dispatcher struct {
	classes []UserClass // sorted by name
	workers []string    // dispatch order

	users   Mapping // the current split
	initial Mapping // the split when NewDispatch was called

	target  int64
	current int64
	perStep int64
	wait    time.Duration

	gen     *userGen
	cycle   workerCycle
	active  []activeUser
	tryFix  bool // Python's _try_dispatch_fixed
	rebal   bool // a rebalance step is pending
	noUsers bool // the user generator ran dry during a ramp up

	pc      pc
	pending time.Duration // delay for the next paced step
}

// New returns a dispatcher for the given workers and user classes. The
// worker list may be empty; user classes must have unique, non-empty names.
func New(workers []string, classes []UserClass) (*Dispatcher, error) {
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
	d := &Dispatcher{classes: cs, tryFix: true}
	d.workers = sortWorkers(dedupe(workers))
	d.users = d.zeroMapping()
	d.initial = d.users.Clone()
	d.gen = newUserGen(d)
	d.cycle = workerCycle{list: d.workers}
	return d, nil
}

func dedupe(ids []string) []string {
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

// sortWorkers returns ids in dispatch order: sorted by id, then stably by
// (index within host, id), where the host is the id up to its first "_".
func sortWorkers(ids []string) []string {
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

func (d *Dispatcher) zeroMapping() Mapping {
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
func (d *Dispatcher) Workers() []string { return append([]string(nil), d.workers...) }

// Users returns a copy of the current split.
func (d *Dispatcher) Users() Mapping { return d.users.Clone() }

// UserCount returns the number of users in the current split.
func (d *Dispatcher) UserCount() int64 { return d.current }

// Target returns the target user count of the current dispatch.
func (d *Dispatcher) Target() int64 { return d.target }

// InProgress reports whether the current dispatch has steps left.
func (d *Dispatcher) InProgress() bool { return d.pc != pcIdle }

// NewDispatch starts a dispatch cycle towards target users at rate users per
// second. The round-robin positions and the class generator carry over from
// the previous dispatch; a pending rebalance is yielded first.
func (d *Dispatcher) NewDispatch(target int64, rate float64) error {
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
	d.pc = pcStart
	d.pending = 0
	return nil
}

// Next returns the next step of the current dispatch, or false when the
// dispatch is complete.
func (d *Dispatcher) Next() (Step, bool) {
	for {
		switch d.pc {
		case pcIdle:
			d.pending = 0
			return Step{}, false
		case pcStart:
			if d.rebal {
				d.rebal = false
				d.pc = pcAfterStartRebalance
				return d.rebalanceStep(), true
			}
			d.pc = pcCheckEqual
		case pcAfterStartRebalance:
			if d.current == d.target {
				d.pc = pcIdle
				return Step{}, false
			}
			d.pc = pcCheckEqual
		case pcCheckEqual:
			if d.current == d.target {
				d.pc = pcIdle
				return Step{Users: d.initial.Clone()}, true
			}
			d.pc = pcUp
		case pcUp:
			if d.current >= d.target {
				d.pc = pcDown
				continue
			}
			d.addUsers()
			d.pc = pcUpAfterYield
			return d.pacedStep(), true
		case pcUpAfterYield:
			d.pc = pcUpExit
			if d.rebal {
				d.rebal = false
				return d.rebalanceStep(), true
			}
		case pcUpExit:
			d.exitStep()
			if d.noUsers {
				d.noUsers = false
				d.pc = pcDown // Python breaks out of the ramp-up loop
				continue
			}
			d.pc = pcUp
		case pcDown:
			if d.current <= d.target {
				d.pc = pcIdle
				return Step{}, false
			}
			d.removeUsers()
			d.pc = pcDownAfterYield
			return d.pacedStep(), true
		case pcDownAfterYield:
			d.pc = pcDownExit
			if d.rebal {
				d.rebal = false
				return d.rebalanceStep(), true
			}
		case pcDownExit:
			d.exitStep()
			d.pc = pcDown
		}
	}
}

// exitStep is the end of Python's pacing context: no sleep after the step
// that reached the target, else the interval until the next paced step.
func (d *Dispatcher) exitStep() {
	if d.current == d.target {
		d.pending = 0
	} else {
		d.pending = d.wait
	}
}

func (d *Dispatcher) pacedStep() Step {
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
func (d *Dispatcher) Wait() time.Duration {
	for {
		switch d.pc {
		case pcUpAfterYield:
			if d.rebal {
				return 0
			}
			d.pc = pcUpExit
		case pcDownAfterYield:
			if d.rebal {
				return 0
			}
			d.pc = pcDownExit
		case pcUpExit:
			d.exitStep()
			if d.noUsers {
				d.noUsers = false
				d.pc = pcDown
			} else {
				d.pc = pcUp
			}
		case pcDownExit:
			d.exitStep()
			d.pc = pcDown
		case pcIdle:
			return 0
		default:
			return d.pending
		}
	}
}

func (d *Dispatcher) rebalanceStep() Step {
	return Step{Users: d.users.Clone(), Rebalance: true}
}

func (d *Dispatcher) addUsers() {
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
		d.active = append(d.active, activeUser{w, class})
		if d.current >= goal {
			return
		}
	}
}

func (d *Dispatcher) removeUsers() {
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
func (d *Dispatcher) AddWorker(id string) {
	ws := d.workers
	if !contains(ws, id) {
		ws = append(append([]string(nil), ws...), id)
	}
	d.workers = sortWorkers(ws)
	d.prepareRebalance()
}

// RemoveWorker removes a worker and schedules a rebalance. Removing the last
// worker only forgets it (as Python does): the split is left unchanged until
// a worker is added.
func (d *Dispatcher) RemoveWorker(id string) {
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

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// prepareRebalance redistributes the current user count from zero over the
// current workers with fresh generators, as Python's _prepare_rebalance.
func (d *Dispatcher) prepareRebalance() {
	d.users = d.zeroMapping() // the fresh generator counts fixed users here: zeros
	d.tryFix = true
	gen := newUserGen(d)
	cyc := workerCycle{list: d.workers}
	dist := d.zeroMapping()
	var active []activeUser
	for n := int64(0); n < d.current; n++ {
		class, ok := gen.next()
		if !ok {
			break
		}
		w := cyc.next()
		dist[w][class]++
		active = append(active, activeUser{w, class})
	}
	d.users = dist
	d.active = active
	d.gen = gen
	d.cycle = cyc
	d.rebal = true
}

// workerCycle is itertools.cycle over a snapshot of the worker order.
type workerCycle struct {
	list []string
	pos  int
}

func (c *workerCycle) next() string {
	w := c.list[c.pos%len(c.list)]
	c.pos = (c.pos + 1) % len(c.list)
	return w
}

// classCycle repeats one precomputed period of a smooth weighted
// round-robin. An empty cycle yields nothing (Python's cycle([None])).
type classCycle struct {
	seq []string
	pos int
}

func (c *classCycle) next() (string, bool) {
	if len(c.seq) == 0 {
		return "", false
	}
	s := c.seq[c.pos]
	c.pos = (c.pos + 1) % len(c.seq)
	return s, true
}

type weighted struct {
	name string
	w    int
}

// newClassCycle normalises the values to round(2*v/min(v)) (half to even,
// as Python's round) and precomputes one period of the smooth weighted
// round-robin: Σ normalised weights picks, after which the state repeats.
func newClassCycle(items []weighted) classCycle {
	if len(items) == 0 {
		return classCycle{}
	}
	minV := items[0].w
	for _, it := range items {
		minV = min(minV, it.w)
	}
	norm := make([]int64, len(items))
	var total int64
	for i, it := range items {
		norm[i] = int64(math.RoundToEven(2 * float64(it.w) / float64(minV)))
		total += norm[i]
	}
	seq := make([]string, 0, total)
	if len(items) == 1 {
		for range total {
			seq = append(seq, items[0].name)
		}
		return classCycle{seq: seq}
	}
	cur := make([]int64, len(items))
	for range total {
		best := -1
		for i := range items {
			cur[i] += norm[i]
			if best < 0 || cur[best] < cur[i] {
				best = i
			}
		}
		cur[best] -= total
		seq = append(seq, items[best].name)
	}
	return classCycle{seq: seq}
}

// userGen is Python's _user_gen generator turned into a resumable state
// machine. It reads and clears the dispatcher's tryFix flag and counts fixed
// users in the dispatcher's current split, as the generator does.
type userGen struct {
	d        *Dispatcher
	fixed    []UserClass // fixed_count classes, sorted by name
	fixedCyc classCycle
	weighted classCycle

	inFixed  bool // suspended inside the fixed loop, after a yield
	curFixed map[string]int64
	spawned  map[string]bool
}

func newUserGen(d *Dispatcher) *userGen {
	g := &userGen{d: d}
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

func (g *userGen) countFixed() {
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
func (g *userGen) next() (string, bool) {
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
		return g.weighted.next()
	}
	for len(g.spawned) != len(g.fixed) {
		name, ok := g.fixedCyc.next()
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
	return g.weighted.next()
}

func (g *userGen) fixedCount(name string) int64 {
	for _, c := range g.fixed {
		if c.Name == name {
			return int64(c.FixedCount)
		}
	}
	return 0
}
