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
//     the current user count and yields it at once (a rebalance). The
//     worker order follows Python's list: re-sorted on every add, and a
//     removal deletes in place.
//
// Memory is O(workers × classes) for the split, plus one userRun per ramp
// up since the last rebalance and per period of the fixed_count cycle (see
// userRun), not per user; time is O(users) per step, as Python's.
//
// AddWorker and RemoveWorker cost amortised O(1): they record the change; the
// next call that needs the split (Next, NewDispatch, Users) recomputes it
// once, which yields what recomputing at every call would. The worker
// order is then brought up to date by merging the ids added since the last
// sort into the previous one.
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
//   - Target counts above MaxUsers, spawn rates outside MinSpawnRate to
//     MaxSpawnRate and class weights or fixed counts whose cycle would
//     exceed 2^20 picks are refused (Python allocates until it fails).
//   - 2.12.1 hangs (an endless loop that blocks the whole master) when
//     fixed_count classes are all full at a re-count, as on a ramp up after
//     a ramp down; here such classes are simply skipped. HEAD's generator
//     does the same.
package dispatch

import (
	"errors"
	"fmt"
	"math"
	"slices"
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
	// ErrBadRate means a spawn rate that is not a number between
	// MinSpawnRate and MaxSpawnRate.
	ErrBadRate = errors.New("dispatch: bad spawn rate")
	// ErrBadTarget means a target user count that is negative or above
	// MaxUsers.
	ErrBadTarget = errors.New("dispatch: bad user count")
)

// Ceilings of what a dispatch can honour. Counts and rates outside them
// are refused (ErrBadTarget, ErrBadRate), never clamped.
const (
	// MaxUsers is the largest user count a dispatch accepts, in total and
	// as a class's FixedCount. The dispatcher places a step's users one by
	// one, as Python does, so a count costs time in proportion: 0.2 s on
	// the master's loop per ramp step or rebalance of 10^7 users (measured
	// over 1000 workers; memory stays about 1 MB). That is ten
	// times the largest run measured (10^6 users over 52 worker
	// processes, bench/scale), and each worker runs at most one user per
	// open file.
	MaxUsers = 10_000_000
	// MaxSpawnRate is the largest spawn rate, users per second: a ramp
	// starts floor(rate) users per step, so a larger rate would only
	// mean "all users at once", which MaxUsers already is.
	MaxSpawnRate = MaxUsers
	// MinSpawnRate is the smallest spawn rate, users per second (one user
	// every 1000 s). The interval between steps, 1/rate seconds, must be a
	// time.Duration (at most 292 years); a smaller rate would overflow it
	// (1e-300 started every user at once).
	MinSpawnRate = 1e-3
	// maxCyclePeriod bounds one period of a class cycle: the sum of the
	// normalised weights round(2*w/min(w)) (or fixed counts). The period
	// is precomputed, 8 bytes per pick.
	maxCyclePeriod = 1 << 20
)

// CheckUsers returns an error wrapping ErrBadTarget unless 0 <= n <=
// MaxUsers.
func CheckUsers(n int64) error {
	switch {
	case n < 0:
		return fmt.Errorf("%w: %d is negative", ErrBadTarget, n)
	case n > MaxUsers:
		return fmt.Errorf("%w: %d is above the ceiling of %d users", ErrBadTarget, n, MaxUsers)
	}
	return nil
}

// CheckRate returns an error wrapping ErrBadRate unless MinSpawnRate <=
// rate <= MaxSpawnRate.
func CheckRate(rate float64) error {
	switch {
	case math.IsNaN(rate) || math.IsInf(rate, 0):
		return fmt.Errorf("%w: %v is not a finite number", ErrBadRate, rate)
	case rate <= 0:
		return fmt.Errorf("%w: %v is not positive", ErrBadRate, rate)
	case rate < MinSpawnRate:
		return fmt.Errorf("%w: %v is below the least rate of %v users per second", ErrBadRate, rate, MinSpawnRate)
	case rate > MaxSpawnRate:
		return fmt.Errorf("%w: %v is above the ceiling of %d users per second", ErrBadRate, rate, MaxSpawnRate)
	}
	return nil
}

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

// userRun is a run of placed users, in the order they were placed (a ramp
// down removes the last placed first, as Python's list of users does).
// User i of the run (0 <= i < n) is on row (row+i) mod len(rows) of the
// split, and its class is the pick at position (pos+i) mod period of the
// weighted cycle, or of the fixed_count cycle when fixed is set.
// Placements advance the worker cycle and a class cycle by one each, and
// removals rewind neither, so a run is broken only by a ramp up after a
// ramp down, a switch between the two cycles, a fixed_count class skipped
// because it is full, or a rebalance: the runs cost memory per ramp and
// per period of the fixed_count cycle, not per user.
type userRun struct {
	n     int64
	row   int32
	pos   int32
	fixed bool
}

// Dispatcher computes dispatch steps. It is not safe for concurrent use: the
// master drives it from one goroutine.
//
// The split is dense: users[r*len(classes)+c] is the number of users of
// class c on worker rows[r], where rows is the dispatch order the split was
// computed over (at New or the last rebalance). AddWorker and RemoveWorker
// only update the worker set and mark the split stale; the first call that
// needs the split (Next, NewDispatch, Users) recomputes it once, which
// gives what recomputing at every call would: a rebalance depends only on
// the worker order, the classes and the user count, none of which changes
// between the calls.
type Dispatcher struct {
	classes []UserClass // sorted by name
	names   []string    // classes[i].Name

	// The workers. Their dispatch order is Python's: AddWorker sorts the
	// whole list, RemoveWorker deletes from it in place, so the order
	// depends on the history; computed when needed from the order at the
	// last sort (see workerOrder).
	members    map[string]struct{}
	order      []string // never written in place
	orderStale bool     // a worker was added since order was computed: sort
	orderHoles bool     // a worker was removed since order was computed: filter
	// removed since the last AddWorker, while orderStale: that AddWorker
	// sorted them with the others.
	unsorted []string
	byID     []string // the ids order was last sorted over, by id; never written in place
	added    []string // ids added (absent before) since order was last sorted
	stale    bool     // members changed since the split was computed: a rebalance is due

	rows  []string // the worker order the split is over; never written in place
	users []int64  // the current split, len(rows)*len(classes)

	target  int64
	current int64
	perStep int64
	wait    time.Duration

	gen     *userGen
	cycle   workerCycle
	runs    []userRun // the placed users, in placement order (see userRun)
	tryFix  bool      // Python's _try_dispatch_fixed
	rebal   bool      // a rebalance step is pending
	noUsers bool      // the user generator ran dry during a ramp up

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
		if c.FixedCount > MaxUsers {
			return nil, fmt.Errorf("%w: %s: fixed count %d is above the ceiling of %d users", ErrBadUserClass, c.Name, c.FixedCount, MaxUsers)
		}
		seen[c.Name] = true
		if c.Weight == 0 {
			c.Weight = 1
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	if err := checkPeriods(cs); err != nil {
		return nil, err
	}
	d := &Dispatcher{classes: cs, tryFix: true}
	d.names = make([]string, len(cs))
	for i, c := range cs {
		d.names[i] = c.Name
	}
	d.members = make(map[string]struct{}, len(workers))
	for _, id := range workers {
		d.members[id] = struct{}{}
	}
	d.added = append([]string(nil), workers...)
	d.orderStale = true
	d.rows = d.workerOrder()
	d.users = make([]int64, len(d.rows)*len(cs))
	d.gen = newUserGen(d)
	d.cycle = workerCycle{n: len(d.rows)}
	return d, nil
}

// workerOrder returns the dispatch order of the workers, as the calls since
// it was last computed would have left it: the last AddWorker sorted the
// workers it saw, and each later RemoveWorker dropped one from that order.
func (d *Dispatcher) workerOrder() []string {
	if d.orderStale {
		d.byID = d.sortedIDs()
		d.added = d.added[:0]
		d.order = hostOrder(d.byID)
		d.orderHoles = len(d.unsorted) > 0
		d.unsorted = d.unsorted[:0]
		d.orderStale = false
	}
	if d.orderHoles {
		ids := make([]string, 0, len(d.members))
		for _, id := range d.order {
			if _, ok := d.members[id]; ok {
				ids = append(ids, id)
			}
		}
		d.order = ids
		d.orderHoles = false
	}
	return d.order
}

// sortedIDs returns, sorted, the ids the last AddWorker saw: the workers
// and those removed since (unsorted). It merges the ids added since the
// last sort, sorted, into the ids sorted then, so that a sort after K
// joins compares O(n + K log K) ids rather than O(n log n).
func (d *Dispatcher) sortedIDs() []string {
	var gone map[string]struct{}
	if len(d.unsorted) > 0 {
		gone = make(map[string]struct{}, len(d.unsorted))
		for _, id := range d.unsorted {
			gone[id] = struct{}{}
		}
	}
	in := func(id string) bool {
		if _, ok := d.members[id]; ok {
			return true
		}
		_, ok := gone[id]
		return ok
	}
	// An id can be in added more than once (added, removed, added), and
	// also in byID (removed after the last sort, then added again).
	fresh := make([]string, 0, len(d.added))
	for _, id := range d.added {
		if in(id) {
			fresh = append(fresh, id)
		}
	}
	slices.Sort(fresh)
	fresh = slices.Compact(fresh)
	out := make([]string, 0, len(d.members)+len(d.unsorted))
	i := 0
	for _, id := range d.byID {
		if !in(id) {
			continue
		}
		for i < len(fresh) && fresh[i] < id {
			out = append(out, fresh[i])
			i++
		}
		if i < len(fresh) && fresh[i] == id {
			i++
		}
		out = append(out, id)
	}
	return append(out, fresh[i:]...)
}

// sortWorkers sorts ids in place into dispatch order and returns them: by
// (index within host, id), where the host is the id up to its first "_"
// and the index is the id's rank among its host's ids.
func sortWorkers(ids []string) []string {
	slices.Sort(ids)
	return hostOrder(ids)
}

// hostOrder returns ids, sorted by id, in dispatch order. It may return
// ids itself.
func hostOrder(ids []string) []string {
	// Rank within host; then a stable counting sort by rank keeps id order
	// within a rank.
	rank := make([]int32, len(ids))
	perHost := make(map[string]int32)
	var maxRank int32
	for i, id := range ids {
		host, _, _ := strings.Cut(id, "_")
		r := perHost[host]
		perHost[host] = r + 1
		rank[i] = r
		maxRank = max(maxRank, r)
	}
	if len(perHost) <= 1 {
		return ids
	}
	start := make([]int, maxRank+2)
	for _, r := range rank {
		start[r+1]++
	}
	for r := 1; r < len(start); r++ {
		start[r] += start[r-1]
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[start[rank[i]]] = id
		start[rank[i]]++
	}
	return out
}

// mapping returns the current split as a Mapping.
func (d *Dispatcher) mapping() Mapping {
	nc := len(d.names)
	m := make(Mapping, len(d.rows))
	for r, w := range d.rows {
		cs := make(map[string]int64, nc)
		for c, name := range d.names {
			cs[name] = d.users[r*nc+c]
		}
		m[w] = cs
	}
	return m
}

// Workers returns the worker ids in dispatch order.
func (d *Dispatcher) Workers() []string { return slices.Clone(d.workerOrder()) }

// Users returns a copy of the current split.
func (d *Dispatcher) Users() Mapping {
	d.settle()
	return d.mapping()
}

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
	if err := CheckUsers(target); err != nil {
		return err
	}
	if err := CheckRate(rate); err != nil {
		return err
	}
	d.settle()
	d.target = target
	d.perStep = int64(math.Max(1, math.Floor(rate)))
	d.wait = time.Duration(float64(d.perStep) / rate * float64(time.Second))
	var n int64
	for _, u := range d.users {
		n += u
	}
	d.current = n
	d.pc = pcStart
	d.pending = 0
	return nil
}

// Next returns the next step of the current dispatch, or false when the
// dispatch is complete.
func (d *Dispatcher) Next() (Step, bool) {
	d.settle()
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
				// Python yields the split NewDispatch started from; nothing
				// can have changed it (a worker change takes pcStart's
				// rebalance branch instead).
				return Step{Users: d.mapping()}, true
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
	return Step{Users: d.mapping()}
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
	return Step{Users: d.mapping(), Rebalance: true}
}

func (d *Dispatcher) addUsers() {
	goal := min(d.current+d.perStep, d.target)
	nc := len(d.names)
	for {
		if len(d.members) == 0 {
			d.noUsers = true
			return
		}
		class, pick, ok := d.gen.nextPos()
		if !ok {
			d.noUsers = true
			return
		}
		r := d.cycle.next()
		d.users[r*nc+class]++
		d.current++
		d.runs = d.gen.pushRun(d.runs, r, d.cycle.n, pick)
		if d.current >= goal {
			return
		}
	}
}

// pushRun appends one placed user, on row of a worker cycle of length rows
// with the class picked at p, to runs, extending the last run when the
// user continues it.
func (g *userGen) pushRun(runs []userRun, row, rows int, p cyclePos) []userRun {
	if k := len(runs); k > 0 {
		last := &runs[k-1]
		if last.fixed == p.fixed &&
			int64(row) == (int64(last.row)+last.n)%int64(rows) &&
			int64(p.pos) == (int64(last.pos)+last.n)%int64(g.cycleOf(p.fixed).period()) {
			last.n++
			return runs
		}
	}
	return append(runs, userRun{n: 1, row: int32(row), pos: int32(p.pos), fixed: p.fixed})
}

// cycleOf returns the fixed_count cycle or the weighted one.
func (g *userGen) cycleOf(fixed bool) *classCycle {
	if fixed {
		return &g.fixedCyc
	}
	return &g.weighted
}

// popRun removes the last placed user and returns its row and class.
// Precondition: runs is not empty.
func (d *Dispatcher) popRun() (row, class int) {
	last := &d.runs[len(d.runs)-1]
	i := last.n - 1
	row = int((int64(last.row) + i) % int64(d.cycle.n))
	g := d.gen
	c := g.cycleOf(last.fixed)
	item := c.pick[(int64(last.pos)+i)%int64(c.period())]
	if last.fixed {
		class = g.fixed[item]
	} else {
		class = g.wClass[item]
	}
	if last.n--; last.n == 0 {
		d.runs = d.runs[:len(d.runs)-1]
	}
	return row, class
}

func (d *Dispatcher) removeUsers() {
	goal := max(d.current-d.perStep, d.target)
	nc := len(d.names)
	for len(d.runs) > 0 {
		row, class := d.popRun()
		d.users[row*nc+class]--
		d.current--
		d.tryFix = true
		if d.current == 0 || d.current <= goal {
			return
		}
	}
}

// AddWorker adds a worker and schedules a rebalance: the next step re-sends
// the split recomputed from zero over the new worker list. It only records
// the change; the split is recomputed once, when next needed.
func (d *Dispatcher) AddWorker(id string) {
	if _, ok := d.members[id]; !ok {
		d.members[id] = struct{}{}
		d.added = append(d.added, id)
	}
	d.orderStale = true // a duplicate re-sorts too
	d.unsorted = d.unsorted[:0]
	if len(d.added) > 2*len(d.members)+64 {
		d.workerOrder() // bound added under churn without dispatch
	}
	d.stale = true
	d.rebal = true
}

// RemoveWorker removes a worker and schedules a rebalance. Removing the last
// worker only forgets it (as Python does): the split is left unchanged until
// a worker is added.
func (d *Dispatcher) RemoveWorker(id string) {
	_, ok := d.members[id]
	if len(d.members) == 0 || (ok && len(d.members) == 1) {
		d.settle() // the split over the workers before this call stays
		d.forget(id, ok)
		return
	}
	d.forget(id, ok)
	d.stale = true
	d.rebal = true
}

// forget removes a worker from the set, if present, and from the order.
func (d *Dispatcher) forget(id string, present bool) {
	if !present {
		return
	}
	delete(d.members, id)
	if d.orderStale {
		d.unsorted = append(d.unsorted, id)
	} else {
		d.orderHoles = true
	}
}

// settle recomputes the split if the workers changed since it was last
// computed.
func (d *Dispatcher) settle() {
	if d.stale {
		d.stale = false
		d.prepareRebalance()
	}
}

// prepareRebalance redistributes the current user count from zero over the
// current workers with fresh generators, as Python's _prepare_rebalance
// (which also flags the rebalance step: AddWorker and RemoveWorker do).
func (d *Dispatcher) prepareRebalance() {
	d.rows = d.workerOrder()
	nc := len(d.names)
	dist := d.users[:0]
	if cap(dist) < len(d.rows)*nc {
		dist = make([]int64, len(d.rows)*nc)
	} else {
		dist = dist[:len(d.rows)*nc]
		clear(dist)
	}
	d.users = nil // the fresh generator counts fixed users here: zeros
	d.tryFix = true
	gen := newUserGen(d)
	cyc := workerCycle{n: len(d.rows)}
	runs := d.runs[:0]
	for n := int64(0); n < d.current && cyc.n > 0; n++ {
		class, pick, ok := gen.nextPos()
		if !ok {
			break
		}
		r := cyc.next()
		dist[r*nc+class]++
		runs = gen.pushRun(runs, r, cyc.n, pick)
	}
	d.users = dist
	d.runs = runs
	d.gen = gen
	d.cycle = cyc
}

// workerCycle is itertools.cycle over the rows of the split.
type workerCycle struct {
	n   int
	pos int
}

func (c *workerCycle) next() int {
	r := c.pos
	c.pos++
	if c.pos == c.n {
		c.pos = 0
	}
	return r
}

// classCycle repeats one precomputed period of a smooth weighted
// round-robin. An empty cycle yields nothing (Python's cycle([None])).
type classCycle struct {
	seq  []string // the picked names, for tests
	pick []int    // the picked items' indices
	pos  int
}

// period is the number of picks in one period of the cycle.
func (c *classCycle) period() int { return len(c.pick) }

// next returns the index of the next picked item.
func (c *classCycle) next() (int, bool) {
	if len(c.pick) == 0 {
		return 0, false
	}
	i := c.pick[c.pos]
	c.pos++
	if c.pos == len(c.pick) {
		c.pos = 0
	}
	return i, true
}

type weighted struct {
	name string
	w    int
}

// checkPeriods refuses classes whose weights (or fixed counts) are so far
// apart that one period of their cycle would exceed maxCyclePeriod picks.
func checkPeriods(cs []UserClass) error {
	var fx, wt []int
	for _, c := range cs {
		if c.FixedCount > 0 {
			fx = append(fx, c.FixedCount)
		} else {
			wt = append(wt, c.Weight)
		}
	}
	for _, vs := range [][]int{fx, wt} {
		if p := cyclePeriod(vs); p > maxCyclePeriod {
			return fmt.Errorf("%w: weights or fixed counts %v are too far apart (a cycle of %.0f picks, at most %d)", ErrBadUserClass, vs, p, maxCyclePeriod)
		}
	}
	return nil
}

// cyclePeriod is the number of picks in one period of newClassCycle's
// cycle over values vs (all positive).
func cyclePeriod(vs []int) float64 {
	if len(vs) == 0 {
		return 0
	}
	minV := slices.Min(vs)
	var total float64
	for _, v := range vs {
		total += math.RoundToEven(2 * float64(v) / float64(minV))
	}
	return total
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
	c := classCycle{seq: make([]string, 0, total), pick: make([]int, 0, total)}
	if len(items) == 1 {
		for range total {
			c.seq = append(c.seq, items[0].name)
			c.pick = append(c.pick, 0)
		}
		return c
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
		c.seq = append(c.seq, items[best].name)
		c.pick = append(c.pick, best)
	}
	return c
}

// userGen is Python's _user_gen generator turned into a resumable state
// machine. It reads and clears the dispatcher's tryFix flag and counts fixed
// users in the dispatcher's current split, as the generator does. Classes
// are indices into the dispatcher's classes.
type userGen struct {
	d          *Dispatcher
	fixed      []int   // fixed_count classes, in name order
	fixedCount []int64 // per class; 0 for weighted classes
	fixedCyc   classCycle
	weighted   classCycle
	wClass     []int // weighted cycle item → class

	inFixed  bool // suspended inside the fixed loop, after a yield
	curFixed []int64
	spawned  []bool
	nSpawned int
}

func newUserGen(d *Dispatcher) *userGen {
	g := &userGen{d: d, fixedCount: make([]int64, len(d.classes))}
	var fx, wt []weighted
	for i, c := range d.classes {
		if c.FixedCount > 0 {
			g.fixed = append(g.fixed, i)
			g.fixedCount[i] = int64(c.FixedCount)
			fx = append(fx, weighted{c.Name, c.FixedCount})
		} else {
			g.wClass = append(g.wClass, i)
			wt = append(wt, weighted{c.Name, c.Weight})
		}
	}
	g.fixedCyc = newClassCycle(fx)
	g.weighted = newClassCycle(wt)
	g.curFixed = make([]int64, len(d.classes))
	g.spawned = make([]bool, len(d.classes))
	return g
}

func (g *userGen) countFixed() {
	nc := len(g.d.classes)
	users := g.d.users
	clear(g.spawned)
	g.nSpawned = 0
	for _, c := range g.fixed {
		var n int64
		for i := c; i < len(users); i += nc {
			n += users[i]
		}
		g.curFixed[c] = n
		// 2.12.1 only marks a class done when an increment makes it reach
		// its count, so a class that is already full when the counts are
		// re-read (ramp up after a ramp down) makes its loop spin forever.
		// Mark full classes done up front: identical output whenever 2.12.1
		// terminates.
		if n >= g.fixedCount[c] {
			g.spawned[c] = true
			g.nSpawned++
		}
	}
}

// cyclePos is where a class was picked: a position in the weighted cycle
// or, if fixed, in the fixed_count cycle.
type cyclePos struct {
	pos   int
	fixed bool
}

// weightedNext returns the next weighted class and where it was picked,
// or false for Python's None.
func (g *userGen) weightedNext() (class int, p cyclePos, ok bool) {
	p.pos = g.weighted.pos
	i, ok := g.weighted.next()
	if !ok {
		return 0, p, false
	}
	return g.wClass[i], p, true
}

// nextPos returns the next class, or false for Python's None, and where
// it was picked.
func (g *userGen) nextPos() (class int, p cyclePos, ok bool) {
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
		return g.weightedNext()
	}
	for g.nSpawned != len(g.fixed) {
		pos := g.fixedCyc.pos
		i, ok := g.fixedCyc.next()
		if !ok {
			break
		}
		c := g.fixed[i]
		if g.curFixed[c] < g.fixedCount[c] {
			g.curFixed[c]++
			if g.curFixed[c] == g.fixedCount[c] {
				g.spawned[c] = true
				g.nSpawned++
			}
			g.inFixed = true
			return c, cyclePos{pos: pos, fixed: true}, true
		}
	}
	return g.weightedNext()
}
