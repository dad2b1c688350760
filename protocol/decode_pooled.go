package protocol

import (
	"slices"
	"sync"
)

// DecodePooled is Decode for a receive loop that hands every stats report
// back with (*StatsReport).Release once it is done with it, as a master
// does after merging: the report, its entries, maps, pairs, pointer fields
// and Exact bytes then come from memory that earlier released reports used,
// so that a steady stream of reports decodes without allocating. Every
// other message type decodes exactly as with Decode.
//
// A stats report decodes to the same values as with Decode, the stats
// maps' pairs included.
//
// A report that is never released is simply garbage collected. DecodePooled
// is safe for concurrent use, and Release may run on another goroutine.
func DecodePooled(payload []byte) (Message, error) {
	return decode(payload, true)
}

// Release hands the memory of a stats report returned by DecodePooled back
// for reuse by a later DecodePooled. The caller must not use r, nor any map,
// slice or pointer taken from it, afterwards (strings are immutable and may
// be kept). Release does nothing for a nil report, for one built by hand or
// by Decode, and for one already released.
func (r *StatsReport) Release() {
	if r == nil || r.mem == nil {
		return
	}
	m := r.mem
	r.mem = nil
	statsPool.Put(m)
}

// statsPool holds the memory of released reports.
var statsPool = sync.Pool{New: func() any { return new(statsMem) }}

// statsMem is the reusable memory of one pooled StatsReport. The decoder
// keeps its own references to every map and buffer, so whatever a caller
// did to the report's fields before releasing it, nothing of the caller's
// is reused.
type statsMem struct {
	report  StatsReport
	stats   []StatsEntry
	total   entryMem
	entries []entryMem // parallel to stats
	errors  reuseMap[string, StatsError]
	classes reuseMap[string, int64]
	floats  []float64 // arena for the *float64 fields
	strs    []string  // arena for the *string fields
}

// entryMem is the reusable memory of one StatsEntry.
type entryMem struct {
	rt, reqs, fails []Count // the stats maps' pairs
	exact           []byte
	phases          []byte // KeyCicadaPhases
	name            string // the name this entry had last time (see nameLike)
}

// reuseMap is a map that is cleared and refilled. A map never shrinks, and
// clearing or iterating it costs its peak size, so one that once held far
// more entries than now needed is dropped for a fresh one.
type reuseMap[K comparable, V any] struct {
	m    map[K]V
	peak int
}

// get returns an empty map for about n entries.
func (r *reuseMap[K, V]) get(n int) map[K]V {
	if r.m == nil || r.peak > 4*n+64 {
		r.m = make(map[K]V, n)
		r.peak = n
		return r.m
	}
	clear(r.m)
	r.peak = max(r.peak, n)
	return r.m
}

// begin readies m for one report and lends its arenas to d.
func (m *statsMem) begin(d *decoder) *StatsReport {
	m.report = StatsReport{UserCount: -1, mem: m}
	d.floats, d.strs = m.floats[:0], m.strs[:0]
	return &m.report
}

// end takes back the arenas from d, keeping the last (largest) ones.
func (m *statsMem) end(d *decoder) {
	m.floats, m.strs = d.floats[:0], d.strs[:0]
	d.floats, d.strs = nil, nil
}

// entryStorage returns n zeroed entries and their memory.
func (m *statsMem) entryStorage(n int) ([]StatsEntry, []entryMem) {
	m.stats = slices.Grow(m.stats[:0], n)[:n]
	clear(m.stats)
	if len(m.entries) < n {
		m.entries = append(m.entries, make([]entryMem, n-len(m.entries))...)
	}
	return m.stats, m.entries[:n]
}

// binaryInto is binary copying into *reuse when it is large enough.
func (d *decoder) binaryInto(reuse *[]byte) ([]byte, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if c == 0xc0 { // nil
		d.skipBytes(1)
		return nil, nil
	}
	if !isStr(c) && !isBin(c) {
		return nil, malformed("want bin, got " + codeKind(c))
	}
	b, err := d.rawBytes()
	if err != nil {
		return nil, err
	}
	buf := *reuse
	if cap(buf) > 4*len(b)+4096 {
		buf = nil
	}
	buf = append(buf[:0], b...)
	if buf == nil {
		buf = []byte{} // present but empty: not nil, as with Decode
	}
	*reuse = buf
	return buf, nil
}
