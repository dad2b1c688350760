package stats

import (
	"errors"
	"fmt"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// ErrBadBulk is wrapped by RecordBulk for a Bulk whose numbers contradict
// each other (the bucket counts do not sum to Requests, more failures than
// requests, a negative count, Min above Max, ...). Nothing is recorded then.
var ErrBadBulk = errors.New("stats: inconsistent bulk sample")

// Bulk is a whole interval's samples of one (method, name), as an engine
// that counts requests itself (the data plane's stacks) hands them over:
// RecordBulk adds them at once instead of one Record call per request. The
// slices are only read during the call, so a caller reuses one Bulk.
//
// Every request of a Bulk is timed (Locust's None response times have no
// bulk form) and recorded at the time of the RecordBulk call: its second
// is the one of Locust's per-second counts, its time the entry's last
// request and its failures' first and last seen.
type Bulk struct {
	// Requests is the number of requests, failures included.
	Requests int64
	// Failures counts the failed requests by failure text (as Record's
	// failure: the repr Locust records). Texts must not be empty and
	// should be distinct (repeats are added up).
	Failures []BulkFailure
	// Buckets are the response times in Locust's buckets: Key is
	// BucketKey of a sample (ms), N the samples in it. They sum to
	// Requests.
	Buckets []protocol.Count
	// Total, Min and Max are the sum, the least and the largest response
	// time of the requests (ignored when Requests is 0).
	Total, Min, Max time.Duration
	// ContentLength is the sum of the response sizes in bytes.
	ContentLength int64
	// Exact, if set, are the response times in microseconds for the exact
	// histogram: Key a time in µs (rounded as Record rounds), N the samples
	// of that time; they sum to Requests. If nil, each Locust bucket's
	// samples enter the exact histogram at the bucket's key (clamped to
	// [Min, Max]): exact percentiles then have Locust's bucket resolution
	// (1 ms below 100 ms, 10 ms below 1 s, ...), and the exact minimum and
	// maximum stay exact.
	Exact []protocol.Count
}

// BulkFailure is a failure text of a Bulk and its count.
type BulkFailure struct {
	Text  string
	Count int64
}

// check returns an error wrapping ErrBadBulk if b contradicts itself.
func (b *Bulk) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadBulk}, args...)...)
	}
	if b.Requests < 0 || b.ContentLength < 0 {
		return bad("negative requests (%d) or content length (%d)", b.Requests, b.ContentLength)
	}
	var fails int64
	for _, f := range b.Failures {
		if f.Count < 0 || f.Text == "" {
			return bad("failure %q with count %d", f.Text, f.Count)
		}
		fails = addSat(fails, f.Count)
	}
	if fails > b.Requests {
		return bad("%d failures of %d requests", fails, b.Requests)
	}
	var n int64
	for _, c := range b.Buckets {
		if c.N < 0 || c.Key < 0 {
			return bad("bucket %d ms with count %d", c.Key, c.N)
		}
		n = addSat(n, c.N)
	}
	if n != b.Requests {
		return bad("buckets hold %d samples, not the %d requests", n, b.Requests)
	}
	if b.Exact != nil {
		n = 0
		for _, c := range b.Exact {
			if c.N < 0 || c.Key < 0 {
				return bad("exact time %d µs with count %d", c.Key, c.N)
			}
			n = addSat(n, c.N)
		}
		if n != b.Requests {
			return bad("exact times hold %d samples, not the %d requests", n, b.Requests)
		}
	}
	if b.Requests > 0 && (b.Min < 0 || b.Min > b.Max || b.Total < b.Max) {
		return bad("min %v, max %v, total %v", b.Min, b.Max, b.Total)
	}
	return nil
}

// RecordBulk adds b's samples to the entry (method, name) and returns nil,
// or an error wrapping ErrBadBulk (and records nothing) if b contradicts
// itself. The report is the one the same samples recorded one by one with
// Record in the same second would give: requests, failures and their error
// rows, Locust's buckets, per-second counts, content length, and the
// total, minimum and maximum response times, which Record keeps as exact
// nanoseconds and RecordBulk takes as given (Total, Min, Max). The exact
// histogram is the same when b.Exact is given, and has Locust's bucket
// resolution otherwise (see Bulk.Exact). Entry and error caps apply as in
// Record. It does not allocate once the entry and its error texts exist.
func (r *Recorder) RecordBulk(method, name string, b *Bulk) error {
	if err := b.check(); err != nil {
		return err
	}
	if b.Requests == 0 {
		return nil
	}
	now := pyTime(r.now())
	e := (*r.entries.Load())[entryKey{method, name}]
	if e == nil {
		e = r.newEntry(method, name, now)
	}
	var fails int64
	for _, f := range b.Failures {
		fails += f.Count // checked: at most Requests
	}
	minNs, maxNs := int64(b.Min), int64(b.Max)
	minUs, maxUs := toMicros(b.Min), toMicros(b.Max)

	e.mu.Lock()
	d := &e.d
	firstTimed := d.timed() == 0
	d.numRequests = addSat(d.numRequests, b.Requests)
	d.contentLength = addSat(d.contentLength, b.ContentLength)
	d.lastReq, d.hasLast = now, true
	d.secs.add(int64(now), b.Requests, fails)
	if firstTimed || minNs < d.minNs {
		d.minNs = minNs
	}
	if maxNs > d.maxNs {
		d.maxNs = maxNs
	}
	d.totalNs = addSat(d.totalNs, int64(b.Total))
	for _, c := range b.Buckets {
		if c.N != 0 {
			d.rt.add(c.Key, c.N)
		}
	}
	if b.Exact != nil {
		for _, c := range b.Exact {
			if c.N != 0 {
				d.exact.addN(exactIndex(uint64(c.Key)), uint64(c.N))
			}
		}
	} else {
		for _, c := range b.Buckets {
			if c.N != 0 {
				us := min(max(uint64(c.Key)*1000, minUs), maxUs)
				d.exact.addN(exactIndex(us), uint64(c.N))
			}
		}
	}
	d.exact.mergeMinMax(uint64(b.Requests), minUs, maxUs)
	warn := false
	if fails != 0 {
		d.numFailures = addSat(d.numFailures, fails)
		for _, f := range b.Failures {
			if f.Count != 0 && r.addErrorLocked(e, f.Text, f.Count, now) {
				warn = true
			}
		}
	}
	e.mu.Unlock()
	if warn {
		r.warnErrors()
	}
	return nil
}
