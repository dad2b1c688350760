package stats

import (
	"cmp"
	"slices"

	"github.com/cicada-load/cicada/protocol"
)

// Dropped iterations by request name (issue 13's leftovers). A dropped
// arrival-rate iteration never ran, so it has no request of its own: the
// worker attributes it to the (method, name) of the first request of the
// task it would have run (package worker, rate.go, says how). The Recorder
// sends the counts with each report (protocol.StatsReport.DroppedBy), the
// master's Stats sums them per name until Clear or Reset, and a Snapshot
// carries them as Snapshot.DroppedBy and in EntryStats.Dropped of the
// entries that exist. Names are bounded as entries are (Options.MaxEntries
// distinct names, the rest counted under OtherMethod, OtherName), and a
// name may have drops without any request (every iteration of its task was
// dropped): such names are in DroppedBy only.

// droppedNames counts dropped iterations by (method, name).
type droppedNames struct {
	m map[entryKey]int64
}

// add counts n (> 0) for the key, or for the fold key when max distinct
// names are counted already; folded reports the latter.
func (d *droppedNames) add(method, name string, n int64, maxNames int) (folded bool) {
	if n <= 0 {
		return false
	}
	if d.m == nil {
		d.m = make(map[entryKey]int64)
	}
	k := entryKey{method: method, name: name}
	if _, ok := d.m[k]; !ok && maxNames > 0 && len(d.m) >= maxNames {
		k, folded = entryKey{method: OtherMethod, name: OtherName}, true
	}
	d.m[k] = addSat(d.m[k], n)
	return folded
}

// list returns the counts sorted by name, then method (the order of
// Snapshot.Entries); nil when there are none.
func (d *droppedNames) list() []protocol.DroppedName {
	if len(d.m) == 0 {
		return nil
	}
	out := make([]protocol.DroppedName, 0, len(d.m))
	for k, n := range d.m {
		out = append(out, protocol.DroppedName{Method: k.method, Name: k.name, Count: n})
	}
	slices.SortFunc(out, func(a, b protocol.DroppedName) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Method, b.Method))
	})
	return out
}

// take is list, then clear.
func (d *droppedNames) take() []protocol.DroppedName {
	out := d.list()
	clear(d.m)
	return out
}

func (d *droppedNames) get(method, name string) int64 {
	return d.m[entryKey{method: method, name: name}]
}

// AddDroppedFor counts n arrival-rate iterations that could not start,
// attributed to (method, name): the total that AddDropped counts, and the
// per-name count that goes out with the next Report
// (protocol.StatsReport.DroppedBy; a report's per-name counts sum to its
// Dropped when every drop is attributed). Names beyond Options.MaxEntries
// are counted under (OtherMethod, OtherName). Safe for concurrent use;
// n <= 0 is ignored.
func (r *Recorder) AddDroppedFor(method, name string, n int64) {
	if n <= 0 {
		return
	}
	r.droppedBy.Lock()
	r.dropped.Add(n)
	r.droppedBy.d.add(method, name, n, r.opts.MaxEntries)
	r.droppedBy.Unlock()
}

// takeDropped returns the dropped count and the per-name counts since the
// last Report, and zeroes them.
func (r *Recorder) takeDropped() (int64, []protocol.DroppedName) {
	r.droppedBy.Lock()
	defer r.droppedBy.Unlock()
	return r.dropped.Swap(0), r.droppedBy.d.take()
}

// clearDropped zeroes the dropped counts (Clear).
func (r *Recorder) clearDropped() {
	r.droppedBy.Lock()
	r.dropped.Store(0)
	clear(r.droppedBy.d.m)
	r.droppedBy.Unlock()
}

// mergeDroppedLocked adds a report's per-name drops. Precondition: s.mu.
func (s *Stats) mergeDroppedLocked(by []protocol.DroppedName) {
	for _, d := range by {
		s.mu.droppedBy.add(d.Method, d.Name, d.Count, s.opts.MaxEntries)
	}
}

// snapshotDroppedLocked fills snap's per-name drops. Precondition: s.mu,
// snap.Entries complete.
func (s *Stats) snapshotDroppedLocked(snap *Snapshot) {
	snap.DroppedBy = s.mu.droppedBy.list()
	if len(snap.DroppedBy) == 0 {
		return
	}
	for i := range snap.Entries {
		e := &snap.Entries[i]
		e.Dropped = s.mu.droppedBy.get(e.Method, e.Name)
	}
}
