package worker

import (
	"cmp"
	"math"
	"slices"
	"strconv"
)

// Dropped iterations by name (issue 13's leftovers).
//
// A dropped iteration never ran: no user took it, so it has no task and
// no request of its own (in this worker a user picks its task when it
// starts an iteration). The pacer attributes each drop to the task it
// would most likely have run, and the task to a stats name:
//
//   - The task mix is the worker's running users: a class's share of the
//     iterations is its share of the users (every parked user takes
//     iterations in turn), a task's share within its class its weight
//     among the tasks the test's tags select (Locust's picking; a
//     Sequential class runs each task Weight times per cycle, the same
//     shares). With one class and one task, the usual open-model
//     scenario, every drop goes to that task: the worker knows it.
//   - The drops of a round are apportioned to the tasks of the mix by
//     their shares, deterministically, carrying the fractions from round
//     to round (largest remainder), so the counts per name follow the mix
//     exactly over a run and always sum to the dropped total.
//   - A task is named by its first request as data (Task.Requests[0]:
//     the method, "GET" when empty, and Request.StatsName, as the
//     scenario writes it: a templated path keeps its ${...}); a task
//     without requests as data (Go code, WebSocket and TCP steps) by the
//     method "TASK" and its Name ("<class> task <i>" when it has none).
//     The name is one row per iteration: the later requests of a
//     multi-request task are not counted again.
//   - Before the spawn's users exist on this worker (the rate can arrive
//     first), the mix is the scenario's: each class by its Weight.
//   - With no class that has a task (every task filtered out by tags), a
//     drop goes to ("TASK", DroppedUnattributed).
//
// The worker sends the counts in its stats reports
// (stats.Recorder.AddDroppedFor); a recorder without per-name counts
// gets the total only.

// DroppedTaskMethod is the method of a drop attributed to a task that has
// no request as data.
const DroppedTaskMethod = "TASK"

// DroppedUnattributed names the drops of a worker without a running user
// that has a task.
const DroppedUnattributed = "(no running user)"

// droppedNamer is the per-name counter of *stats.Recorder.
type droppedNamer interface {
	AddDroppedFor(method, name string, n int64)
}

// dropKey is the stats name a drop is attributed to.
type dropKey struct{ method, name string }

// dropShare is one key of the task mix.
type dropShare struct {
	key   dropKey
	share float64 // of 1
	give  int64   // this round
}

// dropAttributor apportions a pacer's drops. Owned by the pacer's loop.
type dropAttributor struct {
	credit map[dropKey]float64 // carried fractions, keys of the last mix
	mix    []dropShare         // scratch
}

// countDropped counts n dropped iterations: in the pacer's counter and
// the recorder, by name when it can. Called from the pacer's loop
// without pacer.mu (it takes pool.mu to read the mix).
func (pc *pacer) countDropped(n int64) {
	pc.dropped.Add(n)
	dn, ok := pc.rec.(droppedNamer)
	if !ok {
		pc.rec.AddDropped(n)
		return
	}
	for _, s := range pc.attr.apportion(n, pc.taskMix(pc.attr.mix[:0])) {
		if s.give > 0 {
			dn.AddDroppedFor(s.key.method, s.key.name, s.give)
		}
	}
}

// taskMix appends the worker's task mix to mix: one element per stats
// name, shares summing to 1, sorted by key; empty without a class that
// has a task.
func (pc *pacer) taskMix(mix []dropShare) []dropShare {
	if pc.p == nil {
		return mix
	}
	p := pc.p
	p.mu.Lock()
	var users int
	for _, c := range p.classes {
		if len(c.def.table.Load().idx) > 0 {
			users += len(c.users)
		}
	}
	if users > 0 {
		for _, c := range p.classes {
			mix = appendClassMix(mix, c.def, len(c.users), users)
		}
	} else { // no user yet: the scenario's classes by weight
		var total int
		for _, cc := range p.defs {
			if len(cc.table.Load().idx) > 0 {
				total += max(cc.def.Weight, 1)
			}
		}
		for _, cc := range p.defs {
			mix = appendClassMix(mix, cc, max(cc.def.Weight, 1), total)
		}
	}
	p.mu.Unlock()
	slices.SortFunc(mix, func(a, b dropShare) int {
		return cmp.Or(cmp.Compare(a.key.name, b.key.name), cmp.Compare(a.key.method, b.key.method))
	})
	// Tasks of one name (two classes, one first request) are one key.
	out := mix[:0]
	for _, s := range mix {
		if n := len(out); n > 0 && out[n-1].key == s.key {
			out[n-1].share += s.share
			continue
		}
		out = append(out, s)
	}
	return out
}

// appendClassMix appends the tasks of class cc, whose share of the
// iterations is n/of, to mix; nothing for a class without n or tasks.
func appendClassMix(mix []dropShare, cc *compiledClass, n, of int) []dropShare {
	t := cc.table.Load()
	if n == 0 || len(t.idx) == 0 {
		return mix
	}
	cs := float64(n) / float64(of)
	prev := 0
	for j, ti := range t.idx {
		w := t.cum[j] - prev
		prev = t.cum[j]
		mix = append(mix, dropShare{key: taskDropKey(cc.def, ti), share: cs * float64(w) / float64(t.total)})
	}
	return mix
}

// taskDropKey names task ti of uc for drops (see the comment above).
func taskDropKey(uc *UserClass, ti int) dropKey {
	t := &uc.Tasks[ti]
	if len(t.Requests) > 0 {
		r := &t.Requests[0].HTTP
		m := r.Method
		if m == "" {
			m = "GET"
		}
		return dropKey{method: m, name: r.StatsName()}
	}
	if t.Name != "" {
		return dropKey{method: DroppedTaskMethod, name: t.Name}
	}
	return dropKey{method: DroppedTaskMethod, name: uc.Name + " task " + strconv.Itoa(ti)}
}

// apportion sets mix[i].give so that the gives sum to n (> 0) and follow
// the shares with the fractions carried from earlier calls; an empty mix
// gets one element, DroppedUnattributed, with all n. It returns mix
// (possibly grown), which the caller may reuse as scratch.
func (a *dropAttributor) apportion(n int64, mix []dropShare) []dropShare {
	a.mix = mix
	if len(mix) == 0 {
		a.mix = append(mix, dropShare{key: dropKey{method: DroppedTaskMethod, name: DroppedUnattributed}, share: 1, give: n})
		return a.mix
	}
	if a.credit == nil {
		a.credit = make(map[dropKey]float64)
	}
	// Keys that left the mix take their fractions with them.
	for k := range a.credit {
		if !slices.ContainsFunc(mix, func(s dropShare) bool { return s.key == k }) {
			delete(a.credit, k)
		}
	}
	var sum int64
	for i := range mix {
		c := a.credit[mix[i].key] + float64(n)*mix[i].share
		a.credit[mix[i].key] = c
		mix[i].give = max(int64(math.Floor(c)), 0)
		sum += mix[i].give
	}
	// Largest remainder: hand out what the floors left, take back what
	// they overshot (carried negative fractions), one at a time.
	rem := func(i int) float64 { return a.credit[mix[i].key] - float64(mix[i].give) }
	for sum < n {
		best := 0
		for i := 1; i < len(mix); i++ {
			if rem(i) > rem(best) {
				best = i
			}
		}
		mix[best].give++
		sum++
	}
	for sum > n {
		worst := -1
		for i := range mix {
			if mix[i].give > 0 && (worst < 0 || rem(i) < rem(worst)) {
				worst = i
			}
		}
		mix[worst].give--
		sum--
	}
	for i := range mix {
		a.credit[mix[i].key] -= float64(mix[i].give)
	}
	return mix
}
