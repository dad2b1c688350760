package stats

import (
	"cmp"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// cacheSize is the number of per-second histogram snapshots kept for the
// "current" percentiles (Locust's CURRENT_RESPONSE_TIME_PERCENTILE_WINDOW +
// 10).
const cacheSize = 20

// Stats is the master side of the stats engine: it merges ("extends")
// worker reports, Python's and cicada's alike, into Locust's global
// statistics and hands out immutable Snapshots for tables, CSV files and the
// web UI. Everything is computed as Locust 2.12.1's master computes it
// (locust/stats.py, StatsEntry and RequestStats); beside Locust's buckets it
// keeps the exact histograms that cicada workers send in StatsEntry.Exact.
//
// Distinct entries, error rows and exceptions are capped (Options); what
// exceeds a cap is counted under one folded row (OtherName, OtherError,
// OtherException), a deliberate difference from Locust, whose master grows
// without bound (each entry costs several KB).
//
// All methods are safe for concurrent use.
type Stats struct {
	now  func() time.Time
	opts Options

	mu struct {
		sync.Mutex
		entries map[entryKey]*mentry
		total   *mentry
		// firstHint is the first entry of the last report merged (see
		// mentry.nextHint).
		firstHint      *mentry
		errors         map[string]*merr
		errOrder       []*merr
		exceptions     map[string]*mexc
		excOrder       []*mexc
		malformedExact int64
		// malformedPhases counts "cicada_phases" that failed to decode.
		malformedPhases int64
		scratch         []bucket
		fresh           []*merr // Merge's new errors, reused
		snapScratch     snapScratch
		warned          folds        // limits already logged since the last Clear
		overKeys        int          // keys in the entries' rtHist.over maps (addBucketLocked)
		dropped         int64        // arrival-rate iterations dropped (rate.go)
		droppedBy       droppedNames // the same by request name (droppedby.go)
	}
}

// folds is a set of limits that folded a row.
type folds uint8

const (
	foldEntries folds = 1 << iota
	foldErrors
	foldExceptions
)

// warn logs, once per limit in f and Clear, that the limit folds rows.
// It is called without s.mu held, with the limits newly hit.
func (s *Stats) warn(f folds) {
	if f&foldEntries != 0 {
		s.opts.Logger.Warn("More than " + strconv.Itoa(s.opts.MaxEntries) + " distinct request names: the requests of further names are counted under " +
			OtherMethod + " " + OtherName + " (stats limit MaxEntries)")
	}
	if f&foldErrors != 0 {
		s.opts.Logger.Warn("More than " + strconv.Itoa(s.opts.MaxErrors) + " distinct errors: further errors are counted under " +
			OtherMethod + " " + OtherName + ": " + OtherError + " (stats limit MaxErrors)")
	}
	if f&foldExceptions != 0 {
		s.opts.Logger.Warn("More than " + strconv.Itoa(s.opts.MaxExceptions) + " distinct exceptions: further exceptions are counted under " +
			OtherException + " (stats limit MaxExceptions)")
	}
}

// foldLocked records that limit f folded a row; it returns f if that is
// new since the last Clear (to be logged once s.mu is released), else 0.
// Precondition: s.mu is held.
func (s *Stats) foldLocked(f folds) folds {
	if s.mu.warned&f != 0 {
		return 0
	}
	s.mu.warned |= f
	return f
}

// mentry is one entry of the master's statistics, in Locust's model.
type mentry struct {
	name, method  string
	methodNil     bool
	numRequests   int64
	numNone       int64
	numFailures   int64
	totalRT       float64
	minRT, maxRT  float64
	hasMin        bool
	contentLength int64
	lastReq       float64
	hasLast       bool
	start         float64
	rt            rtHist
	secs          secCounts
	cache         []cached // insertion order, at most cacheSize
	exact         exactHist
	exactComplete bool
	ph            *phaseData // phase timings (phases.go), nil until merged
	// nextHint is the entry that followed this one in the last report
	// merged that had it: workers list their entries in a stable order,
	// so Merge tries it before looking the next entry up in the map.
	nextHint *mentry
}

// cached is one of Locust's response_times_cache values, its buckets packed
// (packBuckets) to keep the 20 copies per entry small.
type cached struct {
	sec         int64
	packed      []byte // reused by cacheLocked; copied out by findCache
	numRequests int64
}

type merr struct {
	key                string
	method, name, text string
	occurrences        int64
	firstSeen          *float64
	lastSeen           *float64
}

type mexc struct {
	count   int64
	msg, tb string
	nodes   []string
}

// New returns empty statistics reading time from now (time.Now if nil),
// with the default limits. Like Locust's, the Aggregated entry has a nil
// method until the first Clear.
func New(now func() time.Time) *Stats {
	s, _ := NewWithOptions(Options{Now: now}) // the zero limits are valid
	return s
}

// NewWithOptions is New with limits and a logger; errors wrap ErrBadOption.
func NewWithOptions(opts Options) (*Stats, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	s := &Stats{now: opts.Now, opts: opts}
	t := pyTime(s.now())
	s.mu.entries = map[entryKey]*mentry{}
	s.mu.total = s.newEntryLocked("Aggregated", "", t)
	s.mu.total.methodNil = true
	s.mu.errors = map[string]*merr{}
	s.mu.exceptions = map[string]*mexc{}
	return s, nil
}

// entryLocked returns the entry for k, created with start time now (read
// when first needed into *now) if there is room, else the folded entry;
// f collects a newly hit limit.
// Precondition: s.mu is held.
func (s *Stats) entryLocked(k entryKey, now *float64, f *folds) *mentry {
	if len(s.mu.entries) >= s.opts.MaxEntries {
		k = entryKey{OtherMethod, OtherName}
		*f |= s.foldLocked(foldEntries)
		if e := s.mu.entries[k]; e != nil {
			return e
		}
	}
	if *now == 0 {
		*now = pyTime(s.now())
	}
	e := s.newEntryLocked(k.name, k.method, *now)
	s.mu.entries[k] = e
	return e
}

// newEntryLocked creates an entry as Locust's StatsEntry constructor does:
// start time now and a first cached snapshot at int(now).
// Precondition: s.mu is held.
func (s *Stats) newEntryLocked(name, method string, now float64) *mentry {
	e := &mentry{name: name, method: method, cache: make([]cached, 0, cacheSize+1)}
	e.resetLocked(s, now)
	return e
}

// resetLocked is Locust's StatsEntry.reset on a master.
// Precondition: s.mu is held.
func (e *mentry) resetLocked(s *Stats, now float64) {
	e.numRequests, e.numNone, e.numFailures = 0, 0, 0
	e.totalRT, e.minRT, e.maxRT, e.hasMin = 0, 0, 0, false
	e.contentLength = 0
	e.lastReq, e.hasLast = 0, false
	e.start = now
	e.rt.reset()
	e.secs.reset()
	e.exact.reset()
	e.exactComplete = true
	if e.ph != nil {
		e.ph.reset()
	}
	e.cache = e.cache[:0]
	e.cacheLocked(s, int64(now))
}

// cacheLocked stores a copy of the buckets under second t, keeping Locust's
// OrderedDict semantics: an existing second keeps its place, the oldest of
// more than cacheSize is dropped. The packed bytes of a replaced or dropped
// snapshot are reused (Snapshot copies them out under the lock), so that a
// full cache takes new snapshots without allocating.
// Precondition: s.mu is held.
func (e *mentry) cacheLocked(s *Stats, t int64) {
	s.mu.scratch = e.rt.appendBuckets(s.mu.scratch[:0])
	for i := range e.cache {
		if c := &e.cache[i]; c.sec == t {
			c.packed = packBuckets(c.packed[:0], s.mu.scratch)
			c.numRequests = e.numRequests
			return
		}
	}
	var buf []byte
	if len(e.cache) == cacheSize {
		buf = e.cache[0].packed[:0]
		copy(e.cache, e.cache[1:])
		e.cache = e.cache[:cacheSize-1]
	}
	e.cache = append(e.cache, cached{sec: t, packed: packBuckets(buf, s.mu.scratch), numRequests: e.numRequests})
}

// extendLocked is Locust's StatsEntry.extend.
// Precondition: s.mu is held.
func (e *mentry) extendLocked(s *Stats, o *protocol.StatsEntry) {
	oldLast, oldHas := e.lastReq, e.hasLast
	if o.LastRequestTimestamp != nil {
		if !e.hasLast || *o.LastRequestTimestamp > e.lastReq {
			e.lastReq = *o.LastRequestTimestamp
		}
		e.hasLast = true
	}
	if o.StartTime < e.start { // min, a NaN ignored
		e.start = o.StartTime
	}
	e.numRequests = addSat(e.numRequests, o.NumRequests)
	e.numNone = addSat(e.numNone, o.NumNoneRequests)
	e.numFailures = addSat(e.numFailures, o.NumFailures)
	e.totalRT = addSatF(e.totalRT, o.TotalResponseTime)
	if o.MaxResponseTime > e.maxRT {
		e.maxRT = o.MaxResponseTime
	}
	if o.MinResponseTime != nil && (!e.hasMin || *o.MinResponseTime < e.minRT) {
		e.minRT, e.hasMin = *o.MinResponseTime, true
	}
	e.contentLength = addSat(e.contentLength, o.TotalContentLength)
	ch0 := e.rt.chunks[0] // keys below 100 ms, inlined; nil: rt.add allocates
	for _, p := range canonCounts(o.ResponseTimes) {
		if uint64(p.Key) < 100 && ch0 != nil {
			ch0[p.Key] = addSat(ch0[p.Key], p.N)
		} else {
			e.addBucketLocked(s, p.Key, p.N)
		}
	}
	e.secs.addCounts(canonCounts(o.NumReqsPerSec), false)
	e.secs.addCounts(canonCounts(o.NumFailPerSec), true)
	switch {
	case o.Exact != nil:
		if err := e.exact.addEncoded(o.Exact); err != nil {
			e.exactComplete = false
			s.mu.malformedExact++
		}
	case o.NumRequests-o.NumNoneRequests > 0:
		e.exactComplete = false
	}
	if o.Phases != nil {
		e.addPhasesLocked(s, o.Phases)
	}
	if e.hasLast && e.lastReq != 0 {
		last := int64(e.lastReq)
		var old int64
		if oldHas && oldLast != 0 {
			old = int64(oldLast)
		}
		if last != 0 && last > old {
			e.cacheLocked(s, last)
		}
	}
}

// addBucketLocked adds n samples under bucket key k. Keys off Locust's
// dense grid (100 s and more, or not rounded as Locust rounds) go to the
// histogram's map; once the Stats hold Options.MaxBuckets such keys in all,
// a new one is replaced by the largest power of two not above it (at most
// 63 more keys per entry).
// Precondition: s.mu is held.
func (e *mentry) addBucketLocked(s *Stats, k, n int64) {
	if c, i, ok := slot(k); ok {
		ch := e.rt.chunks[c]
		if ch == nil {
			ch = new([100]int64)
			e.rt.chunks[c] = ch
		}
		ch[i] = addSat(ch[i], n)
		return
	}
	if _, ok := e.rt.over[k]; !ok {
		if s.mu.overKeys >= s.opts.MaxBuckets && k > 0 {
			k = 1 << (bits.Len64(uint64(k)) - 1)
			if _, ok := e.rt.over[k]; !ok {
				s.mu.overKeys++
			}
		} else {
			s.mu.overKeys++
		}
	}
	if e.rt.over == nil {
		e.rt.over = make(map[int64]int64)
	}
	e.rt.over[k] = addSat(e.rt.over[k], n)
}

// canonCounts returns a stats map's pairs strictly ascending, as Decode
// gives them (returned as they are, the common case); pairs built by hand
// out of order are taken as the map holding them (of equal keys the last
// wins), so that the result never depends on their order.
func canonCounts(pairs []protocol.Count) []protocol.Count {
	if protocol.CountsSorted(pairs) {
		return pairs
	}
	return protocol.Counts(protocol.CountMap(pairs))
}

// Merge adds a worker's report (Locust's worker_report handler): every entry
// is extended into the master's entry of the same name and method (created
// on first sight), errors add up by key, and the report's total is extended
// into the Aggregated entry, which therefore comes only from the workers'
// totals. A nil method is taken as "". An entry's stats maps are added
// without map operations when their pairs are strictly ascending, as
// protocol.Decode, DecodePooled and the Recorder give them; pairs in any
// other order count as the map holding them (protocol.StatsEntry).
//
// Errors new to the master are appended to the error report's order; the
// wire map has no order, so new errors of one report are ordered by
// FirstSeen (cicada and Locust ≥ 2.44 workers send it), then by key.
//
// Names beyond Options.MaxEntries and errors beyond Options.MaxErrors are
// counted in the folded rows (a warning is logged the first time). Sums
// saturate instead of wrapping (see the package doc); the report should
// hold the values protocol.Decode accepts (no NaN, no negative counts).
func (s *Stats) Merge(r *protocol.StatsReport) {
	if r == nil {
		return
	}
	s.mu.Lock()
	f := s.mergeLocked(r)
	s.mu.Unlock()
	if f != 0 {
		s.warn(f)
	}
}

// mergeLocked is Merge; it returns the limits newly hit.
// Precondition: s.mu is held.
func (s *Stats) mergeLocked(r *protocol.StatsReport) folds {
	var f folds
	s.mu.dropped = addSat(s.mu.dropped, max(r.Dropped, 0))
	s.mergeDroppedLocked(r.DroppedBy)
	var now float64 // a new entry's start time, read when first needed
	hint := &s.mu.firstHint
	for i := range r.Stats {
		st := &r.Stats[i]
		var method string
		if st.Method != nil {
			method = *st.Method
		}
		e := *hint
		if e == nil || e.name != st.Name || e.method != method {
			k := entryKey{clip(method, s.opts.MaxText), clip(st.Name, s.opts.MaxText)}
			if e = s.mu.entries[k]; e == nil {
				e = s.entryLocked(k, &now, &f)
			}
			*hint = e
		}
		e.extendLocked(s, st)
		hint = &e.nextHint
	}
	fresh := s.mu.fresh[:0]
	for key, er := range r.Errors {
		key = clip(key, s.opts.MaxText)
		me := s.mu.errors[key]
		if me == nil && len(s.mu.errors) >= s.opts.MaxErrors {
			key, er.Method, er.Name, er.Error = otherErrorKey, OtherMethod, OtherName, OtherError
			f |= s.foldLocked(foldErrors)
			me = s.mu.errors[key]
		}
		if me != nil {
			me.occurrences = addSat(me.occurrences, er.Occurrences)
			me.firstSeen = minSeen(me.firstSeen, er.FirstSeen, false)
			me.lastSeen = minSeen(me.lastSeen, er.LastSeen, true)
			continue
		}
		me = &merr{key: key, method: clip(er.Method, s.opts.MaxText), name: clip(er.Name, s.opts.MaxText),
			text: clip(er.Error, s.opts.MaxText), occurrences: er.Occurrences}
		me.firstSeen = minSeen(nil, er.FirstSeen, false)
		me.lastSeen = minSeen(nil, er.LastSeen, true)
		s.mu.errors[key] = me
		fresh = append(fresh, me)
	}
	slices.SortFunc(fresh, func(a, b *merr) int {
		switch {
		case a.firstSeen != nil && b.firstSeen == nil:
			return -1
		case a.firstSeen == nil && b.firstSeen != nil:
			return 1
		case a.firstSeen != nil && *a.firstSeen != *b.firstSeen:
			return cmp.Compare(*a.firstSeen, *b.firstSeen)
		}
		return cmp.Compare(a.key, b.key)
	})
	s.mu.errOrder = append(s.mu.errOrder, fresh...)
	clear(fresh)
	s.mu.fresh = fresh[:0]
	s.mu.total.extendLocked(s, &r.Total)
	return f
}

// minSeen combines two optional times: the smaller, or with larger set the
// larger. a is the master's own (updated in place); b is the report's,
// copied into a fresh pointer when a is nil so that reports are not
// retained.
func minSeen(a, b *float64, larger bool) *float64 {
	switch {
	case b == nil:
		return a
	case a == nil:
		v := *b
		return &v
	case (!larger && *b < *a) || (larger && *b > *a):
		*a = *b
	}
	return a
}

// AddException records a task exception (Locust's runner.log_exception):
// rows are keyed by traceback, count occurrences, keep the first message and
// the set of nodes (insertion order; "local" for standalone). Tracebacks
// beyond Options.MaxExceptions are counted in the folded row.
func (s *Stats) AddException(msg, traceback, node string) {
	var f folds
	msg, traceback, node = clip(msg, s.opts.MaxText), clip(traceback, s.opts.MaxText), clip(node, s.opts.MaxText)
	s.mu.Lock()
	defer func() {
		s.mu.Unlock()
		if f != 0 {
			s.warn(f)
		}
	}()
	x := s.mu.exceptions[traceback]
	if x == nil && len(s.mu.exceptions) >= s.opts.MaxExceptions {
		msg, traceback = OtherException, OtherException
		f = s.foldLocked(foldExceptions)
		x = s.mu.exceptions[traceback]
	}
	if x == nil {
		x = &mexc{msg: msg, tb: traceback}
		s.mu.exceptions[traceback] = x
		s.mu.excOrder = append(s.mu.excOrder, x)
	}
	x.count++
	if !slices.Contains(x.nodes, node) {
		x.nodes = append(x.nodes, node)
	}
}

// Clear is Locust's clear when a new test starts (RequestStats.clear_all plus
// the runner's exceptions): every entry, error and exception is removed and
// the Aggregated entry is recreated with method "".
func (s *Stats) Clear() {
	now := pyTime(s.now())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.entries = map[entryKey]*mentry{}
	s.mu.firstHint = nil
	s.mu.total = s.newEntryLocked("Aggregated", "", now)
	s.mu.errors = map[string]*merr{}
	s.mu.errOrder = nil
	s.mu.exceptions = map[string]*mexc{}
	s.mu.excOrder = nil
	s.mu.warned = 0
	s.mu.overKeys = 0
	s.mu.dropped = 0
	clear(s.mu.droppedBy.m)
}

// Reset is Locust's RequestStats.reset_all (--reset-stats, /stats/reset):
// every entry is zeroed but kept, the errors are removed. Exceptions are
// kept; /stats/reset also calls ClearExceptions.
func (s *Stats) Reset() {
	now := pyTime(s.now())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.total.resetLocked(s, now)
	s.mu.dropped = 0
	clear(s.mu.droppedBy.m)
	for _, e := range s.mu.entries {
		e.resetLocked(s, now)
	}
	s.mu.overKeys = 0
	s.mu.errors = map[string]*merr{}
	s.mu.errOrder = nil
}

// ClearExceptions empties the exceptions table.
func (s *Stats) ClearExceptions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.exceptions = map[string]*mexc{}
	s.mu.excOrder = nil
}
