package stack

// Locust's response-time buckets (locust/stats.py): milliseconds, exact
// below 100, rounded to 10 below 1,000, to 100 below 10,000, to 1,000 above,
// with Python's round (half to even). A fixed array holds them up to
// HistMaxMs; slower responses count in the last bucket and in
// StatsRow.HistClamped.
const (
	// HistMaxMs is the largest bucket key (one hour).
	HistMaxMs = 3_600_000
	// HistBuckets is the number of buckets: keys 0..99, 100..990 by 10,
	// 1,000..9,900 by 100, 10,000..HistMaxMs by 1,000.
	HistBuckets = 100 + 90 + 90 + (HistMaxMs-10_000)/1000 + 1
	// MaxFailStatuses is how many distinct failing status codes a stats
	// row tells apart; more count in StatsRow.FailStatusOther.
	MaxFailStatuses = 16
)

// HistKey returns the bucket key in milliseconds of histogram index i
// (0..HistBuckets-1), the key Locust would use in response_times.
func HistKey(i int) int {
	switch {
	case i < 100:
		return i
	case i < 190:
		return 100 + (i-100)*10
	case i < 280:
		return 1000 + (i-190)*100
	}
	return 10_000 + (i-280)*1000
}

// HistIndex returns the histogram index of a response time of rt
// nanoseconds, rounded as Locust rounds the same time in milliseconds, and
// whether it was clamped to the last bucket. A negative rt counts as 0.
func HistIndex(rt int64) (int, bool) {
	const ms = int64(1e6)
	if rt < 0 {
		rt = 0
	}
	var res int64
	switch {
	case rt < 100*ms:
		res = 1
	case rt < 1000*ms:
		res = 10
	case rt < 10_000*ms:
		res = 100
	default:
		res = 1000
	}
	unit := res * ms
	q, rem := rt/unit, rt%unit
	if half := unit / 2; rem > half || rem == half && q&1 == 1 {
		q++
	}
	k := q * res
	switch {
	case k < 100:
		return int(k), false
	case k < 1000:
		return 100 + int(k-100)/10, false
	case k < 10_000:
		return 190 + int(k-1000)/100, false
	case k <= HistMaxMs:
		return 280 + int(k-10_000)/1000, false
	}
	return HistBuckets - 1, true
}

// StatusCount is one failing status code and how many responses had it.
type StatusCount struct {
	Status uint16
	Count  uint64
}

// StatsRow is one stats row's accumulation: Locust's per-name entry for the
// requests that count into it. Every completed or failed request counts in
// Requests and, with the time from its first transmission (or from the SYN
// for a connection that failed) to its end, in the response-time fields and
// the histogram, as Locust logs a failed request's time too.
type StatsRow struct {
	// Requests is Locust's num_requests: successes and failures.
	Requests uint64
	// Failures is the sum of the failure kinds below.
	Failures uint64
	// FailStatus holds the first FailStatusN distinct statuses that were
	// not accepted, in order of first appearance, with their counts.
	FailStatus  [MaxFailStatuses]StatusCount
	FailStatusN int
	// FailStatusOther counts not accepted responses whose status did not
	// fit in FailStatus.
	FailStatusOther uint64
	// FailTimeout: no complete response within IdleTimeout of silence, or
	// the request's retransmissions exhausted.
	FailTimeout uint64
	// FailReset: the connection was reset or closed by the peer before
	// the response completed.
	FailReset uint64
	// FailConnect: the connection failed (SYN retries exhausted, or a
	// reset answered the SYN); counted against the request the user was
	// about to send.
	FailConnect uint64
	// FailMalformed: the response could not be parsed (or its framing is
	// not supported).
	FailMalformed uint64
	// RespTimeSumUs, RespTimeMinUs and RespTimeMaxUs are in microseconds;
	// min and max are meaningful when Requests > 0.
	RespTimeSumUs, RespTimeMinUs, RespTimeMaxUs uint64
	// ContentBytes sums the body bytes of complete responses
	// (Content-Length, or the chunk sizes).
	ContentBytes uint64
	// HistClamped counts response times above HistMaxMs (in the last
	// bucket).
	HistClamped uint64
	// Hist counts response times by bucket; HistKey gives each key.
	Hist [HistBuckets]uint64
}

// Stats is a set of stats rows, indexed like ProgramRequest.Stat.
type Stats struct {
	Rows []StatsRow
}

// Reset zeroes every row, keeping the storage.
func (s *Stats) Reset() {
	for i := range s.Rows {
		s.Rows[i].reset()
	}
}

func (r *StatsRow) reset() {
	if r.Requests == 0 && r.Failures == 0 {
		return
	}
	*r = StatsRow{}
}

// Add adds o's counts into r.
func (r *StatsRow) Add(o *StatsRow) {
	if o.Requests == 0 && o.Failures == 0 {
		return
	}
	if r.Requests == 0 {
		r.RespTimeMinUs, r.RespTimeMaxUs = o.RespTimeMinUs, o.RespTimeMaxUs
	} else if o.Requests != 0 {
		r.RespTimeMinUs = min(r.RespTimeMinUs, o.RespTimeMinUs)
		r.RespTimeMaxUs = max(r.RespTimeMaxUs, o.RespTimeMaxUs)
	}
	r.Requests += o.Requests
	r.Failures += o.Failures
	for _, sc := range o.FailStatus[:o.FailStatusN] {
		r.failStatus(sc.Status, sc.Count)
	}
	r.FailStatusOther += o.FailStatusOther
	r.FailTimeout += o.FailTimeout
	r.FailReset += o.FailReset
	r.FailConnect += o.FailConnect
	r.FailMalformed += o.FailMalformed
	r.RespTimeSumUs += o.RespTimeSumUs
	r.ContentBytes += o.ContentBytes
	r.HistClamped += o.HistClamped
	for i, v := range o.Hist {
		r.Hist[i] += v
	}
}

// failStatus adds n responses of a not accepted status.
func (r *StatsRow) failStatus(status uint16, n uint64) {
	for k := range r.FailStatus[:r.FailStatusN] {
		if r.FailStatus[k].Status == status {
			r.FailStatus[k].Count += n
			return
		}
	}
	if r.FailStatusN < MaxFailStatuses {
		r.FailStatus[r.FailStatusN] = StatusCount{status, n}
		r.FailStatusN++
		return
	}
	r.FailStatusOther += n
}

// sample counts one request that ended after rt nanoseconds.
func (r *StatsRow) sample(rt int64) {
	if rt < 0 {
		rt = 0
	}
	us := uint64(rt / 1000)
	if r.Requests == 0 {
		r.RespTimeMinUs, r.RespTimeMaxUs = us, us
	} else {
		r.RespTimeMinUs = min(r.RespTimeMinUs, us)
		r.RespTimeMaxUs = max(r.RespTimeMaxUs, us)
	}
	r.Requests++
	r.RespTimeSumUs += us
	i, clamped := HistIndex(rt)
	r.Hist[i]++
	if clamped {
		r.HistClamped++
	}
}

// Failure kinds of a request (stat* constants), for Stack.fail.
const (
	failTimeout uint8 = iota + 1
	failReset
	failConnect
	failMalformed
)

func (r *StatsRow) fail(kind uint8) {
	r.Failures++
	switch kind {
	case failTimeout:
		r.FailTimeout++
	case failReset:
		r.FailReset++
	case failConnect:
		r.FailConnect++
	case failMalformed:
		r.FailMalformed++
	}
}

// TakeStats moves the per-row accumulations since the last call into dst
// (added to what dst holds, so one dst can sum several stacks; call
// dst.Reset first for one stack's share) and zeroes them. dst.Rows grows to
// the stack's row count when shorter, the only allocation; a reused dst
// allocates nothing. A client stack with a Program has Program.Stats() rows;
// one with a single Request has one row; a server stack none.
func (s *Stack) TakeStats(dst *Stats) {
	if len(dst.Rows) < len(s.rows) {
		dst.Rows = append(dst.Rows, make([]StatsRow, len(s.rows)-len(dst.Rows))...)
	}
	for i := range s.rows {
		r := &s.rows[i]
		if r.Requests == 0 && r.Failures == 0 {
			continue
		}
		dst.Rows[i].Add(r)
		r.reset()
	}
}

// StatsRows returns how many stats rows TakeStats fills.
func (s *Stack) StatsRows() int { return len(s.rows) }
