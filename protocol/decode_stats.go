package protocol

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// MaxReportEntries is the most entries the "stats" array of one stats
// report may hold: Decode refuses a longer array (ErrOutOfRange) before
// allocating anything for it. A cicada worker sends at most its Recorder's
// distinct-entry cap plus one folded row (stats.DefaultMaxEntries is
// 10,000); a master folds what exceeds its own cap.
const MaxReportEntries = 100_000

// MaxReportErrors is the most rows the "errors" map of one stats report may
// hold; Decode refuses a larger map (ErrOutOfRange) before allocating it.
const MaxReportErrors = 100_000

// The stats decoder is the master's hot path (one report per worker every
// 3 s, thousands of workers), so it walks the map keys itself instead of
// going through fields and closures, and compares keys as payload slices.

// statsReport decodes the data of a stats message (Locust 2.12.1
// locust/stats.py, setup_distributed_stats_event_listeners, and the
// report_to_master listener of WorkerRunner in locust/runners.py).
// Required keys: stats, stats_total, errors, user_classes_count (Locust's
// master reads all four); user_count is optional (-1 when absent).
func (d *decoder) statsReport() (*StatsReport, error) {
	n, err := d.mapLen()
	if err != nil {
		return nil, err
	}
	var r *StatsReport
	var mem *statsMem
	if d.pooled {
		mem = statsPool.Get().(*statsMem)
		r = mem.begin(d)
		defer mem.end(d)
	} else {
		r = &StatsReport{UserCount: -1}
	}
	var seen uint8
	for i := 0; i < n; i++ {
		k, ok, err := d.key(MaxDepth - 2)
		if err != nil {
			return nil, at(err, "[key "+strconv.Itoa(i)+"]")
		}
		if !ok {
			if err := d.skip(MaxDepth - 2); err != nil {
				return nil, at(err, "["+strconv.Itoa(i)+"]")
			}
			continue
		}
		switch string(k) {
		case "stats":
			seen |= 1
			err = d.statsEntries(r, mem)
		case "stats_total":
			seen |= 2
			var em *entryMem
			if mem != nil {
				em = &mem.total
			} else {
				em = new(entryMem) // Decode: nothing to reuse
			}
			err = d.statsEntry(&r.Total, em, MaxDepth-3) // level 3
		case "errors":
			seen |= 4
			var reuse *reuseMap[string, StatsError]
			if mem != nil {
				reuse = &mem.errors
			}
			r.Errors, err = d.statsErrors(reuse)
		case "user_classes_count":
			seen |= 8
			if mem != nil {
				r.UserClassesCount, err = d.strIntMapInto(&mem.classes)
			} else {
				r.UserClassesCount, err = d.strIntMap()
			}
		case "user_count":
			r.UserCount, err = d.int64()
		case KeyCicadaDropped:
			r.Dropped, err = d.int64()
			if err == nil && r.Dropped < 0 {
				err = outOfRange("negative " + KeyCicadaDropped)
			}
		case KeyCicadaDroppedBy:
			r.DroppedBy, err = d.droppedBy() // droppedby.go
		default:
			err = d.skip(MaxDepth - 2)
		}
		if err != nil {
			return nil, at(err, string(k))
		}
	}
	for i, k := range [...]string{"stats", "stats_total", "errors", "user_classes_count"} {
		if seen&(1<<i) == 0 {
			return nil, missing(k)
		}
	}
	return r, nil
}

func (d *decoder) statsEntries(r *StatsReport, mem *statsMem) error {
	n, err := d.arrayLen()
	if err != nil || n == 0 {
		return err
	}
	if n > MaxReportEntries {
		return outOfRange(strconv.Itoa(n) + " entries, more than MaxReportEntries (" + strconv.Itoa(MaxReportEntries) + ")")
	}
	var ems []entryMem
	if mem != nil {
		r.Stats, ems = mem.entryStorage(n)
	} else {
		r.Stats = make([]StatsEntry, n)
	}
	for i := range r.Stats {
		var em *entryMem
		if ems != nil {
			em = &ems[i]
		} else {
			em = new(entryMem) // Decode: nothing to reuse
		}
		if err := d.statsEntry(&r.Stats[i], em, MaxDepth-4); err != nil { // level 4
			return at(err, "["+strconv.Itoa(i)+"]")
		}
	}
	return nil
}

// statsEntry decodes one StatsEntry. Locust's master copies only the keys it
// knows and keeps a fresh entry's defaults for the others; likewise only
// name, method and start_time are required here (Locust defaults start_time
// to "now", which a codec cannot know). Unknown keys are ignored. em lends
// its buffers: DecodePooled's hold earlier reports' memory, Decode's are
// new (empty), so every buffer is allocated. depth is the nesting its keys
// and ignored values may open (see skip), which differs between stats_total
// and the entries of stats. Counts, times and sizes must be finite and not
// negative (ErrOutOfRange), keys of the stats maps included.
func (d *decoder) statsEntry(s *StatsEntry, em *entryMem, depth int) error {
	// Only the rare paths read the depth; kept in d rather than in a
	// variable live across the loop, it costs the common keys nothing
	// (a register less in the loop was 1 % of the stats decode).
	d.entryDepth = depth
	n, err := d.mapLen()
	if err != nil {
		return err
	}
	var seen uint8
	for i := 0; i < n; i++ {
		// d.key, with its fixstr fast path inlined.
		var k []byte
		if p := d.off; p < len(d.buf) && d.buf[p]&0xe0 == msgpcode.FixedStrLow && p+1+int(d.buf[p]&msgpcode.FixedStrMask) <= len(d.buf) {
			e := p + 1 + int(d.buf[p]&msgpcode.FixedStrMask)
			k, d.off = d.buf[p+1:e:e], e
		} else {
			var ok bool
			k, ok, err = d.keySlow(d.entryDepth)
			if err != nil {
				return at(err, "[key "+strconv.Itoa(i)+"]")
			}
			if !ok {
				if err := d.skip(d.entryDepth); err != nil {
					return at(err, "["+strconv.Itoa(i)+"]")
				}
				continue
			}
		}
		switch string(k) {
		case "name":
			seen |= 1
			s.Name, err = d.nameLike(&em.name)
		case "method":
			seen |= 2
			var m string
			var ok bool
			if m, ok, err = d.method(); ok {
				s.Method = d.methodPtr(m)
			}
		case "start_time":
			seen |= 4
			s.StartTime, err = d.nonNegFloat()
		case "last_request_timestamp":
			s.LastRequestTimestamp, err = d.nonNegFloatOrNil()
		case "num_requests":
			s.NumRequests, err = d.count()
		case "num_none_requests":
			s.NumNoneRequests, err = d.count()
		case "num_failures":
			s.NumFailures, err = d.count()
		case "total_response_time":
			s.TotalResponseTime, err = d.nonNegFloat()
		case "max_response_time":
			s.MaxResponseTime, err = d.nonNegFloat()
		case "min_response_time":
			s.MinResponseTime, err = d.nonNegFloatOrNil()
		case "total_content_length":
			s.TotalContentLength, err = d.count()
		case "response_times":
			s.ResponseTimes, err = d.countsInto(&em.rt)
		case "num_reqs_per_sec":
			s.NumReqsPerSec, err = d.countsInto(&em.reqs)
		case "num_fail_per_sec":
			s.NumFailPerSec, err = d.countsInto(&em.fails)
		case KeyCicadaLatency:
			s.Exact, err = d.binaryInto(&em.exact)
		case KeyCicadaPhases:
			s.Phases, err = d.binaryInto(&em.phases)
		default:
			err = d.skip(d.entryDepth)
		}
		if err != nil {
			return at(err, string(k))
		}
	}
	switch {
	case seen&1 == 0:
		return missing("name")
	case seen&2 == 0:
		return missing("method")
	case seen&4 == 0:
		return missing("start_time")
	}
	return nil
}

// count is int64 for a value that must not be negative (counts, sizes):
// the fast path's encodings cannot be, the others are checked.
func (d *decoder) count() (int64, error) {
	if v, q := uintAt(d.buf, d.off); q != 0 {
		d.off = q
		return v, nil
	}
	return d.countSlow()
}

func (d *decoder) countSlow() (int64, error) {
	v, err := d.int64Slow()
	if err == nil && v < 0 {
		err = negative(v)
	}
	return v, err
}

// negative is the error for a negative count, size or key.
func negative(v int64) error {
	return outOfRange(strconv.FormatInt(v, 10) + " is negative")
}

// nonNegFloat is float64 for a value that must be a finite number ≥ 0
// (times and durations): NaN, ±Inf and negative values are errors.
func (d *decoder) nonNegFloat() (float64, error) {
	if p := d.off; p+9 <= len(d.buf) && d.buf[p] == msgpcode.Double {
		if v := math.Float64frombits(binary.BigEndian.Uint64(d.buf[p+1:])); validFloat(v) {
			d.off = p + 9
			return v, nil
		}
	}
	return d.nonNegFloatSlow()
}

func (d *decoder) nonNegFloatSlow() (float64, error) {
	v, err := d.float64Slow()
	if err == nil && !validFloat(v) {
		err = badFloat(v)
	}
	return v, err
}

// nonNegFloatOrNil is floatOrNil for a value that must be nil or a finite
// number ≥ 0, with floatOrNil's common case (a valid float64) inlined.
func (d *decoder) nonNegFloatOrNil() (*float64, error) {
	if p := d.off; p+9 <= len(d.buf) && d.buf[p] == msgpcode.Double && len(d.floats) < cap(d.floats) {
		if v := math.Float64frombits(binary.BigEndian.Uint64(d.buf[p+1:])); validFloat(v) {
			d.off = p + 9
			d.floats = append(d.floats, v)
			return &d.floats[len(d.floats)-1], nil
		}
	}
	f, err := d.floatOrNil()
	if err == nil && f != nil && !validFloat(*f) {
		err = badFloat(*f)
	}
	return f, err
}

// validFloat reports whether v is a finite number ≥ 0 (NaN fails both
// comparisons).
func validFloat(v float64) bool { return v >= 0 && v <= math.MaxFloat64 }

func badFloat(v float64) error {
	return outOfRange(strconv.FormatFloat(v, 'g', -1, 64) + " is not a finite number >= 0")
}

// nameLike is stringOrNil (nil reads as "") for an entry name, given the
// name the same entry of the previous report held: a worker reports the same
// names in the same order every time, so comparing with it mostly saves the
// intern lookup. prev is updated.
func (d *decoder) nameLike(prev *string) (string, error) {
	if p := d.off; p < len(d.buf) && d.buf[p] == msgpcode.Nil {
		d.off = p + 1
		return "", nil
	}
	b, err := d.strRaw()
	if err != nil {
		return "", err
	}
	if string(b) == *prev { // *prev is valid UTF-8
		return *prev, nil
	}
	s, err := d.internValid(b)
	if err == nil {
		*prev = s
	}
	return s, err
}

// method is stringOrNil returning constants for the common HTTP methods.
func (d *decoder) method() (s string, ok bool, err error) {
	if p := d.off; p < len(d.buf) && d.buf[p] == msgpcode.Nil {
		d.off = p + 1
		return "", false, nil
	}
	b, err := d.strRaw()
	if err != nil {
		return "", false, err
	}
	switch string(b) {
	case "GET":
		return "GET", true, nil
	case "POST":
		return "POST", true, nil
	case "PUT":
		return "PUT", true, nil
	case "DELETE":
		return "DELETE", true, nil
	case "PATCH":
		return "PATCH", true, nil
	case "HEAD":
		return "HEAD", true, nil
	case "OPTIONS":
		return "OPTIONS", true, nil
	case "":
		return "", true, nil
	}
	s, err = d.internValid(b)
	return s, err == nil, err
}

// methodPtr returns a pointer to m from a per-message arena, so the methods
// of a report cost one allocation together rather than one each.
func (d *decoder) methodPtr(m string) *string {
	if len(d.strs) == cap(d.strs) {
		d.strs = make([]string, 0, max(64, 2*cap(d.strs)))
	}
	d.strs = append(d.strs, m)
	return &d.strs[len(d.strs)-1]
}

// countsInto decodes a stats map (response_times, num_reqs_per_sec,
// num_fail_per_sec) as pairs into *reuse (replaced when too small or far too
// large) and returns them in strictly ascending key order (canonCounts).
// Keys may be any int width or a float (Locust 2.12.1 sends 140.0),
// truncated toward zero; of repeated keys the last value wins, as in a
// Python dict. An empty map decodes to nil. cicada workers and Locust's
// per-second maps send ascending keys; Locust's response_times come in
// first-seen order and are sorted here.
func (d *decoder) countsInto(reuse *[]Count) ([]Count, error) {
	n, err := d.mapLen()
	if err != nil || n == 0 {
		return nil, err
	}
	buf := *reuse
	if cap(buf) < n || cap(buf) > 4*n+1024 {
		buf = make([]Count, n)
		*reuse = buf
	}
	buf = buf[:n]
	sorted := true
	prev := int64(-1 << 63)
	buf0, p := d.buf, d.off
	for i := range buf {
		var k, v int64
		// intIntPair's fast paths, inlined, with a positive fixint value
		// (most counts) read in place.
		ok := false
		if c0, c1, fix := fixPair(buf0, p); fix {
			k, v, p, ok = int64(c0), int64(c1), p+2, true
		} else if kk, q := uintAt(buf0, p); q != 0 {
			if q < len(buf0) && buf0[q] <= msgpcode.PosFixedNumHigh {
				k, v, p, ok = kk, int64(buf0[q]), q+1, true
			} else if vv, r := uintAt(buf0, q); r != 0 {
				k, v, p, ok = kk, vv, r, true
			}
		}
		if !ok {
			d.off = p
			if k, v, err = d.intIntPair(i); err != nil {
				return nil, err
			}
			p = d.off
		}
		buf[i] = Count{k, v}
		if k <= prev {
			sorted = false
		}
		prev = k
	}
	d.off = p
	if !sorted {
		buf = canonCounts(buf)
	}
	return buf[:len(buf):len(buf)], nil
}

// fixPair returns the key and value at buf[p:] when both are positive
// fixints (most response-time buckets).
func fixPair(buf []byte, p int) (k, v byte, ok bool) {
	if p+1 < len(buf) {
		if c0, c1 := buf[p], buf[p+1]; c0|c1 <= msgpcode.PosFixedNumHigh {
			return c0, c1, true
		}
	}
	return 0, 0, false
}

// intIntPair decodes the i-th key and value of a stats map. Fast paths: key
// and value are both positive fixints (most response-time buckets), or
// non-negative ints up to uint32 (the per-second maps' timestamps). Neither
// key nor value may be negative.
func (d *decoder) intIntPair(i int) (k, v int64, err error) {
	buf, p := d.buf, d.off
	if c0, c1, ok := fixPair(buf, p); ok {
		d.off = p + 2
		return int64(c0), int64(c1), nil
	}
	if k, v, q := uintPair(buf, p); q != 0 {
		d.off = q
		return k, v, nil
	}
	k, err = d.count()
	if err != nil {
		return 0, 0, at(err, "[key "+strconv.Itoa(i)+"]")
	}
	v, err = d.count()
	if err != nil {
		return 0, 0, at(err, "["+strconv.FormatInt(k, 10)+"]")
	}
	return k, v, nil
}

// uintPair decodes a key and a value that are both uintAt's; next is 0 when
// either is not.
func uintPair(buf []byte, p int) (k, v int64, next int) {
	k, q := uintAt(buf, p)
	if q == 0 {
		return 0, 0, 0
	}
	v, next = uintAt(buf, q)
	return k, v, next
}

// uintAt decodes the positive fixint, uint8, uint16 or uint32 at buf[p:]
// (the stats maps' keys and values); next is the offset after it, or 0 when
// buf[p:] holds anything else or is too short.
func uintAt(buf []byte, p int) (v int64, next int) {
	if p >= len(buf) {
		return 0, 0
	}
	switch c := buf[p]; {
	case c <= msgpcode.PosFixedNumHigh:
		return int64(c), p + 1
	case c == msgpcode.Uint8:
		if p+2 <= len(buf) {
			return int64(buf[p+1]), p + 2
		}
	case c == msgpcode.Uint16:
		if p+3 <= len(buf) {
			return int64(binary.BigEndian.Uint16(buf[p+1:])), p + 3
		}
	case c == msgpcode.Uint32:
		if p+5 <= len(buf) {
			return int64(binary.BigEndian.Uint32(buf[p+1:])), p + 5
		}
	}
	return 0, 0
}

// statsErrors decodes the errors map: key → {name, method, error,
// occurrences[, first_seen, last_seen]}. An empty map decodes to nil. A
// non-nil reuse lends its map.
func (d *decoder) statsErrors(reuse *reuseMap[string, StatsError]) (map[string]StatsError, error) {
	n, err := d.mapLen()
	if err != nil || n == 0 {
		return nil, err
	}
	if n > MaxReportErrors {
		return nil, outOfRange(strconv.Itoa(n) + " error rows, more than MaxReportErrors (" + strconv.Itoa(MaxReportErrors) + ")")
	}
	var m map[string]StatsError
	if reuse != nil {
		m = reuse.get(n)
	} else {
		m = make(map[string]StatsError, n)
	}
	for i := 0; i < n; i++ {
		k, err := d.string()
		if err != nil {
			return nil, at(err, "[key "+strconv.Itoa(i)+"]")
		}
		var se StatsError
		if err := d.statsError(&se); err != nil {
			return nil, at(err, "["+strconv.Quote(k)+"]")
		}
		m[k] = se
	}
	return m, nil
}

// statsError decodes one error row. name, method, error and occurrences are
// required (Locust's StatsError.unserialize indexes them); name, method and
// error may be nil, read as "". occurrences must not be negative, the times
// must be finite and not negative.
func (d *decoder) statsError(se *StatsError) error {
	n, err := d.mapLen()
	if err != nil {
		return err
	}
	var seen uint8
	for i := 0; i < n; i++ {
		k, ok, err := d.key(MaxDepth - 4) // an error row is at level 4
		if err != nil {
			return at(err, "[key "+strconv.Itoa(i)+"]")
		}
		if !ok {
			if err := d.skip(MaxDepth - 4); err != nil {
				return at(err, "["+strconv.Itoa(i)+"]")
			}
			continue
		}
		switch string(k) {
		case "name":
			seen |= 1
			se.Name, _, err = d.stringOrNil()
		case "method":
			seen |= 2
			se.Method, _, err = d.stringOrNil()
		case "error":
			seen |= 4
			se.Error, _, err = d.stringOrNil()
		case "occurrences":
			seen |= 8
			se.Occurrences, err = d.count()
		case "first_seen":
			se.FirstSeen, err = d.nonNegFloatOrNil()
		case "last_seen":
			se.LastSeen, err = d.nonNegFloatOrNil()
		default:
			err = d.skip(MaxDepth - 4)
		}
		if err != nil {
			return at(err, string(k))
		}
	}
	for i, k := range [...]string{"name", "method", "error", "occurrences"} {
		if seen&(1<<i) == 0 {
			return missing(k)
		}
	}
	return nil
}
