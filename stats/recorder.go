package stats

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/internal/pyrepr"
	"github.com/cicada-load/cicada/protocol"
)

// entryKey identifies a stats entry.
type entryKey struct{ method, name string }

// Recorder is the worker side of the stats engine: it records request samples
// from any number of goroutines and turns them into Locust's periodic delta
// report (Locust 2.12.1 locust/stats.py,
// setup_distributed_stats_event_listeners.on_report_to_master).
//
// Record is cheap: a lock-free lookup of the entry in a copy-on-write map,
// then one short critical section under that entry's own mutex (counters,
// two dense bucket arrays and a ring of per-second counts; no allocation
// once the entry, its buckets and its error exist). The Aggregated total is
// not touched on the hot path: Report derives it from the entries, which is
// what Locust's own total amounts to, so goroutines recording different
// names never share a lock or a cache line. Goroutines recording the same
// name share its mutex; its critical section is a few tens of nanoseconds.
//
// Names beyond Options.MaxEntries are recorded under the entry
// (OtherMethod, OtherName); error texts beyond about Options.MaxErrors in
// one report window under OtherError in their entry. A warning is logged
// the first time (again after Clear). Reports therefore stay within
// protocol.MaxReportEntries and protocol.MaxReportErrors.
//
// All methods are safe for concurrent use. Lock order: Recorder.mu, then
// an entry's mu (Report and Clear); Record takes only the entry's mu (and
// Recorder.mu to create an entry).
type Recorder struct {
	now     func() time.Time
	opts    Options
	entries atomic.Pointer[map[entryKey]*wentry]
	// nErrs is about the number of error texts allocated in all entries
	// (fold rows not counted): Record adds one per new text, Report
	// recounts them.
	nErrs        atomic.Int64
	warnedErrors atomic.Bool  // the MaxErrors warning was logged since Clear
	dropped      atomic.Int64 // arrival-rate iterations dropped since the last Report (rate.go)
	droppedBy    struct {     // the same by request name (droppedby.go); its lock also covers dropped's swap
		sync.Mutex
		d droppedNames
	}

	mu struct {
		sync.Mutex
		order          []*wentry // creation order, as Locust's dict
		totalStart     float64
		totalMethodNil bool
		tot            entryData // scratch for the Aggregated total
		warnedEntries  bool      // the MaxEntries warning was logged since Clear
	}
}

type wentry struct {
	method, name string

	mu   sync.Mutex
	d    entryData
	errs map[string]*werr // by failure text
	ph   *phaseData       // phase timings (phases.go), nil until recorded
}

type werr struct {
	occurrences int64
	first, last float64
}

// entryData is one entry's numbers in Locust's model, times kept exactly.
type entryData struct {
	numRequests, numNone, numFailures int64
	totalNs, minNs, maxNs             int64 // over timed samples
	contentLength                     int64
	lastReq                           float64
	hasLast                           bool
	start                             float64
	rt                                rtHist
	secs                              secCounts
	exact                             exactHist
}

// NewRecorder returns an empty Recorder reading time from now (time.Now if
// nil). Like Locust's, its Aggregated total reports a nil method until the
// first Clear (a Locust worker clears on the first spawn of a test), and ""
// afterwards.
func NewRecorder(now func() time.Time) *Recorder {
	r, _ := NewRecorderWithOptions(Options{Now: now}) // the zero limits are valid
	return r
}

// NewRecorderWithOptions is NewRecorder with limits and a logger. Errors
// wrap ErrBadOption; MaxEntries must be below protocol.MaxReportEntries and
// MaxErrors+MaxEntries+1 at most protocol.MaxReportErrors, so that a master
// accepts every report.
func NewRecorderWithOptions(opts Options) (*Recorder, error) {
	opts, err := opts.normalizeRecorder()
	if err != nil {
		return nil, err
	}
	r := &Recorder{now: opts.Now, opts: opts}
	m := map[entryKey]*wentry{}
	r.entries.Store(&m)
	r.mu.totalStart = pyTime(r.now())
	r.mu.totalMethodNil = true
	r.mu.tot.secs.keepAll = true
	return r, nil
}

// pyTime converts t to the float Python's time.time() would return.
func pyTime(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}

// Record logs one request of the given method (request type) and name with
// response time rt and a response size. failure is "" for a success, or the
// error as a Locust worker sends it: the repr of the exception (for example
// CatchResponseError('boom') or HTTPError('404 Client Error: ...')). It does
// not allocate when the entry (and, for a failure, that error text) has been
// seen before.
func (r *Recorder) Record(method, name string, rt time.Duration, contentLength int64, failure string) {
	r.record(method, name, rt, rt, false, contentLength, failure, nil)
}

// RecordNone logs a request whose response time is None in Locust's terms
// (counted as a request, excluded from times and buckets).
func (r *Recorder) RecordNone(method, name string, contentLength int64, failure string) {
	r.record(method, name, 0, 0, true, contentLength, failure, nil)
}

func (r *Recorder) record(method, name string, rt, exactRT time.Duration, none bool, contentLength int64, failure string, p *Phases) {
	now := pyTime(r.now())
	e := (*r.entries.Load())[entryKey{method, name}]
	if e == nil {
		e = r.newEntry(method, name, now)
	}
	sec := int64(now)
	var fails int64
	if failure != "" {
		fails = 1
	}
	var key int64
	var us uint64
	if !none {
		if rt < 0 {
			rt = 0
		}
		key = BucketKey(rt)
		us = toMicros(max(exactRT, rt))
	}

	contentLength = max(contentLength, 0)

	e.mu.Lock()
	d := &e.d
	d.numRequests++
	d.contentLength = addSat(d.contentLength, contentLength)
	d.lastReq, d.hasLast = now, true
	d.secs.add(sec, 1, fails)
	if none {
		d.numNone++
	} else {
		ns := int64(rt)
		if d.numRequests-d.numNone == 1 || ns < d.minNs {
			d.minNs = ns
		}
		if ns > d.maxNs {
			d.maxNs = ns
		}
		d.totalNs = addSat(d.totalNs, ns)
		d.rt.add(key, 1)
		d.exact.record(us)
	}
	if p != nil {
		e.recordPhases(p)
	}
	warn := false
	if fails != 0 {
		d.numFailures++
		warn = r.addErrorLocked(e, failure, 1, now)
	}
	e.mu.Unlock()
	if warn {
		r.warnErrors()
	}
}

// addErrorLocked adds n occurrences of failure at now to e's errors,
// folding a new text into OtherError once the window holds MaxErrors
// texts. It reports whether the MaxErrors warning is due (the first fold
// since Clear). Precondition: e.mu held.
func (r *Recorder) addErrorLocked(e *wentry, failure string, n int64, now float64) (warn bool) {
	er := e.errs[failure]
	if er == nil && failure != OtherError && r.nErrs.Load() >= int64(r.opts.MaxErrors) {
		failure = OtherError
		er = e.errs[failure]
		warn = !r.warnedErrors.Load() && r.warnedErrors.CompareAndSwap(false, true)
	}
	if er == nil {
		if e.errs == nil {
			e.errs = make(map[string]*werr)
		}
		er = &werr{first: now}
		e.errs[failure] = er
		if failure != OtherError {
			r.nErrs.Add(1)
		}
	}
	er.occurrences = addSat(er.occurrences, n)
	er.last = now
	return warn
}

func (r *Recorder) warnErrors() {
	r.opts.Logger.Warn("More than " + strconv.Itoa(r.opts.MaxErrors) + " distinct errors in one report: further errors are counted as " +
		OtherError + " (stats limit MaxErrors)")
}

// newEntry returns the entry for (method, name), created if there is room,
// else the folded entry (created on first use).
func (r *Recorder) newEntry(method, name string, now float64) *wentry {
	r.mu.Lock()
	e, warn := r.newEntryLocked(method, name, now)
	r.mu.Unlock()
	if warn {
		r.opts.Logger.Warn("More than " + strconv.Itoa(r.opts.MaxEntries) + " distinct request names: the requests of further names are counted under " +
			OtherMethod + " " + OtherName + " (stats limit MaxEntries)")
	}
	return e
}

// newEntryLocked is newEntry; warn reports that the entry limit was hit for
// the first time since Clear.
// Precondition: r.mu is held.
func (r *Recorder) newEntryLocked(method, name string, now float64) (e *wentry, warn bool) {
	old := *r.entries.Load()
	k := entryKey{method, name}
	if e := old[k]; e != nil {
		return e, false
	}
	if len(old) >= r.opts.MaxEntries {
		warn = !r.mu.warnedEntries
		r.mu.warnedEntries = true
		k = entryKey{OtherMethod, OtherName}
		if e := old[k]; e != nil {
			return e, warn
		}
		method, name = k.method, k.name
	}
	e = &wentry{method: method, name: name}
	e.d.start = now
	e.d.secs.keepAll = true
	m := make(map[entryKey]*wentry, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[k] = e
	r.mu.order = append(r.mu.order, e)
	r.entries.Store(&m)
	return e, warn
}

// Report returns the delta report since the previous Report (or Clear) in
// Locust's stats message format and resets the statistics, as a Locust worker
// does every 3 s (Locust 2.12.1 locust/runners.py,
// WorkerRunner.stats_reporter; locust/stats.py, on_report_to_master and
// StatsEntry.get_stripped_report): Stats holds the entries with at least one
// request, in creation order; Total is the Aggregated entry (always present;
// its start time is the previous report's); Errors is keyed like Locust's
// (SHA-256 of method.name.repr(error)) and carries FirstSeen/LastSeen as
// Locust ≥ 2.44 workers do. Every entry carries its exact histogram in Exact.
//
// The report differs from a Python worker's in one respect: response-time
// sums are exact sums of the nanosecond samples converted once, where Python
// adds the float milliseconds one by one (last-bit differences at most).
// The caller owns the result; userClassesCount is stored as given (nil
// becomes an empty map).
func (r *Recorder) Report(userClassesCount map[string]int64, userCount int64) *protocol.StatsReport {
	now := pyTime(r.now())
	if userClassesCount == nil {
		userClassesCount = map[string]int64{} // Locust always sends a map
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := &protocol.StatsReport{
		Errors:           map[string]protocol.StatsError{},
		UserClassesCount: userClassesCount,
		UserCount:        userCount,
	}
	rep.Dropped, rep.DroppedBy = r.takeDropped()
	tot := &r.mu.tot
	tot.reset(r.mu.totalStart)
	var nErrs int64 // error texts kept allocated, fold rows not counted
	for _, e := range r.mu.order {
		e.mu.Lock()
		if e.d.numRequests > 0 || e.d.numFailures > 0 {
			m := e.method
			rep.Stats = append(rep.Stats, e.d.toWire(e.name, &m))
			rep.Stats[len(rep.Stats)-1].Phases = e.takePhases()
			tot.merge(&e.d)
			// Only reported entries are reset (an idle entry keeps the start
			// time of its last report, as in Locust's serialize_stats).
			e.d.reset(now)
			for text, er := range e.errs {
				if er.occurrences == 0 {
					continue
				}
				masked := maskAddress(text)
				key := errorKey(e.method, e.name, masked)
				first, last := er.first, er.last
				occ := er.occurrences
				if prev, ok := rep.Errors[key]; ok {
					// Texts that differ only in an object address are one
					// row, as in Locust.
					occ = addSat(occ, prev.Occurrences)
					first, last = min(first, *prev.FirstSeen), max(last, *prev.LastSeen)
				}
				rep.Errors[key] = protocol.StatsError{
					Name: e.name, Method: e.method, Error: masked,
					Occurrences: occ, FirstSeen: &first, LastSeen: &last,
				}
			}
		}
		// Keep the errors of this window allocated for the next one (the
		// common case of a recurring failure) and drop the others, so that
		// a stream of distinct error texts does not accumulate.
		for text, er := range e.errs {
			if er.occurrences == 0 {
				delete(e.errs, text)
			} else if text != OtherError {
				nErrs++
			}
			er.occurrences = 0
		}
		e.mu.Unlock()
	}
	// Records of entries already visited may have added texts meanwhile;
	// the next Report counts them.
	r.nErrs.Store(nErrs)
	var tm *string
	if !r.mu.totalMethodNil {
		tm = new(string)
	}
	rep.Total = tot.toWire("Aggregated", tm)
	r.mu.totalStart = now
	return rep
}

// Clear removes every entry and error, as a Locust worker does when a new
// test starts; from then on the total's method is "".
func (r *Recorder) Clear() {
	now := pyTime(r.now())
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[entryKey]*wentry{}
	r.entries.Store(&m)
	r.mu.order = nil
	r.mu.totalStart = now
	r.mu.totalMethodNil = false
	r.clearDropped()
	r.mu.warnedEntries = false
	r.nErrs.Store(0)
	r.warnedErrors.Store(false)
}

// errorKey is Locust's StatsError.create_key for an error text that is
// already the (masked) repr of the exception.
func errorKey(method, name, text string) string {
	sum := sha256.Sum256([]byte(method + "." + name + "." + pyrepr.String(text)))
	return hex.EncodeToString(sum[:])
}

// ErrorKey returns the key Locust uses for an error row: the hex SHA-256 of
// method + "." + name + "." + repr(text), where text is the error as a
// worker sends it (the masked repr of the exception).
func ErrorKey(method, name, text string) string {
	return errorKey(method, name, maskAddress(text))
}

func (d *entryData) reset(now float64) {
	d.numRequests, d.numNone, d.numFailures = 0, 0, 0
	d.totalNs, d.minNs, d.maxNs = 0, 0, 0
	d.contentLength = 0
	d.lastReq, d.hasLast = 0, false
	d.start = now
	d.rt.reset()
	d.secs.reset()
	d.exact.reset()
}

func (d *entryData) timed() int64 { return d.numRequests - d.numNone }

// merge adds o into d (the worker's derivation of the total).
func (d *entryData) merge(o *entryData) {
	if o.timed() > 0 {
		if d.timed() == 0 || o.minNs < d.minNs {
			d.minNs = o.minNs
		}
		if o.maxNs > d.maxNs {
			d.maxNs = o.maxNs
		}
	}
	d.numRequests = addSat(d.numRequests, o.numRequests)
	d.numNone = addSat(d.numNone, o.numNone)
	d.numFailures = addSat(d.numFailures, o.numFailures)
	d.totalNs = addSat(d.totalNs, o.totalNs)
	d.contentLength = addSat(d.contentLength, o.contentLength)
	if o.hasLast && (!d.hasLast || o.lastReq > d.lastReq) {
		d.lastReq, d.hasLast = o.lastReq, true
	}
	for c, ch := range o.rt.chunks {
		if ch == nil {
			continue
		}
		for i, n := range ch {
			if n != 0 {
				d.rt.add(chunkBase[c]+int64(i)*chunkStep[c], n)
			}
		}
	}
	for k, n := range o.rt.over {
		if n != 0 {
			d.rt.add(k, n)
		}
	}
	for _, sl := range o.secs.ring {
		if sl.reqs != 0 || sl.fails != 0 {
			d.secs.add(sl.sec, sl.reqs, sl.fails)
		}
	}
	for _, sl := range o.secs.over {
		d.secs.add(sl.sec, sl.reqs, sl.fails)
	}
	d.exact.merge(&o.exact)
}

func (d *entryData) toWire(name string, method *string) protocol.StatsEntry {
	s := protocol.StatsEntry{
		Name:               name,
		Method:             method,
		StartTime:          d.start,
		NumRequests:        d.numRequests,
		NumNoneRequests:    d.numNone,
		NumFailures:        d.numFailures,
		TotalResponseTime:  float64(d.totalNs) / 1e6,
		MaxResponseTime:    float64(d.maxNs) / 1e6,
		TotalContentLength: d.contentLength,
		ResponseTimes:      d.rt.counts(),
		Exact:              d.exact.appendEncoded(nil),
	}
	if d.hasLast {
		last := d.lastReq
		s.LastRequestTimestamp = &last
	}
	if d.timed() > 0 {
		mn := float64(d.minNs) / 1e6
		s.MinResponseTime = &mn
	}
	s.NumReqsPerSec, s.NumFailPerSec = d.secs.counts()
	return s
}
