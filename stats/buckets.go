package stats

import (
	"cmp"
	"encoding/binary"
	"slices"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// BucketKey returns the response-time bucket Locust 2.12.1 files a sample of
// duration rt under (locust/stats.py, StatsEntry._log_response_time): with
// t = rt in milliseconds, round(t) below 100 ms, round(t, -1) below 1 s,
// round(t, -2) below 10 s and round(t, -3) above, where Python's round goes
// half to even on the exact value. The arithmetic is done on integer
// nanoseconds, which gives exactly Python's result for the float t = ns/1e6
// (the float is a tie if and only if the integer is). Negative durations
// count as 0.
func BucketKey(rt time.Duration) int64 {
	ns := int64(rt)
	if ns < 0 {
		ns = 0
	}
	var unit, scale int64 // unit in ns, scale = unit in ms
	switch {
	case ns < 100e6:
		unit, scale = 1e6, 1
	case ns < 1000e6:
		unit, scale = 10e6, 10
	case ns < 10000e6:
		unit, scale = 100e6, 100
	default:
		unit, scale = 1000e6, 1000
	}
	q, r := ns/unit, ns%unit
	if r*2 > unit || (r*2 == unit && q%2 == 1) {
		q++
	}
	return q * scale
}

// bucket is one key of Locust's response-time histogram with its count.
type bucket struct {
	Key   int64
	Count int64
}

// rtHist is Locust's response-time histogram {bucket ms: count}. The
// canonical keys below 100 s live in four lazily allocated dense chunks (an
// increment is an index computation, no hashing); anything else (keys of 100
// s and more, or non-canonical keys sent by other workers) goes to a map.
type rtHist struct {
	chunks [4]*[100]int64
	over   map[int64]int64
}

// slot maps a key to its dense chunk and index, or ok=false for the map.
func slot(k int64) (c, i int, ok bool) {
	switch {
	case k < 0:
		return 0, 0, false
	case k < 100:
		return 0, int(k), true
	case k < 1000:
		if k%10 == 0 {
			return 1, int(k-100) / 10, true
		}
	case k < 10000:
		if k%100 == 0 {
			return 2, int(k-1000) / 100, true
		}
	case k < 100000:
		if k%1000 == 0 {
			return 3, int(k-10000) / 1000, true
		}
	}
	return 0, 0, false
}

var chunkBase = [4]int64{0, 100, 1000, 10000}
var chunkStep = [4]int64{1, 10, 100, 1000}

func (h *rtHist) add(k, n int64) {
	if c, i, ok := slot(k); ok {
		ch := h.chunks[c]
		if ch == nil {
			ch = new([100]int64)
			h.chunks[c] = ch
		}
		ch[i] = addSat(ch[i], n)
		return
	}
	if h.over == nil {
		h.over = make(map[int64]int64)
	}
	h.over[k] = addSat(h.over[k], n)
}

// empty reports whether no key has a non-zero count.
func (h *rtHist) empty() bool {
	for _, ch := range h.chunks {
		if ch == nil {
			continue
		}
		for _, n := range ch {
			if n != 0 {
				return false
			}
		}
	}
	for _, n := range h.over {
		if n != 0 {
			return false
		}
	}
	return true
}

// reset zeroes the counts and keeps the memory.
func (h *rtHist) reset() {
	for _, ch := range h.chunks {
		if ch != nil {
			*ch = [100]int64{}
		}
	}
	clear(h.over)
}

// appendBuckets appends the non-zero buckets in ascending key order.
func (h *rtHist) appendBuckets(dst []bucket) []bucket {
	start := len(dst)
	for c, ch := range h.chunks {
		if ch == nil {
			continue
		}
		for i, n := range ch {
			if n != 0 {
				dst = append(dst, bucket{chunkBase[c] + int64(i)*chunkStep[c], n})
			}
		}
	}
	if len(h.over) > 0 {
		for k, n := range h.over {
			if n != 0 {
				dst = append(dst, bucket{k, n})
			}
		}
		slices.SortFunc(dst[start:], func(a, b bucket) int {
			switch {
			case a.Key < b.Key:
				return -1
			case a.Key > b.Key:
				return 1
			}
			return 0
		})
	}
	return dst
}

// counts returns the buckets as Locust's wire map: pairs in ascending key
// order, nil for none.
func (h *rtHist) counts() []protocol.Count {
	var out []protocol.Count
	for c, ch := range h.chunks {
		if ch == nil {
			continue
		}
		for i, n := range ch {
			if n != 0 {
				out = append(out, protocol.Count{Key: chunkBase[c] + int64(i)*chunkStep[c], N: n})
			}
		}
	}
	if len(h.over) == 0 {
		return out // the chunks are in ascending key order
	}
	for k, n := range h.over {
		if n != 0 {
			out = append(out, protocol.Count{Key: k, N: n})
		}
	}
	return sumSorted(out)
}

// sumSorted sorts pairs by key and adds up (saturating) the counts of equal
// keys, in place; nil for no pairs.
func sumSorted(pairs []protocol.Count) []protocol.Count {
	if len(pairs) == 0 {
		return nil
	}
	slices.SortFunc(pairs, func(a, b protocol.Count) int { return cmp.Compare(a.Key, b.Key) })
	out := pairs[:1]
	for _, p := range pairs[1:] {
		if last := &out[len(out)-1]; p.Key == last.Key {
			last.N = addSat(last.N, p.N)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// secSlot holds the requests and failures of one unix second.
type secSlot struct {
	sec, reqs, fails int64
}

// secRingSize is the number of seconds a secCounts keeps in its ring; it
// covers Locust's current-rate window (the 13 seconds up to the last request).
const secRingSize = 16

// secCounts is Locust's num_reqs_per_sec and num_fail_per_sec, kept as a ring
// of the latest secRingSize seconds. Seconds pushed out of the ring go to the
// overflow map when keepAll is set (worker: nothing is lost between two
// reports) and are dropped otherwise (master: only the current-rate window
// is ever read, and it only moves forward).
type secCounts struct {
	ring    [secRingSize]secSlot
	keepAll bool
	over    map[int64]secSlot
}

func (s *secCounts) add(sec, reqs, fails int64) {
	sl := &s.ring[uint64(sec)%secRingSize]
	switch {
	case sl.sec == sec:
	case sl.reqs == 0 && sl.fails == 0:
		sl.sec = sec
	case sl.sec < sec:
		if s.keepAll {
			s.spill(*sl)
		}
		*sl = secSlot{sec: sec}
	default: // sec is older than the second holding its slot
		if s.keepAll {
			s.spill(secSlot{sec, reqs, fails})
		}
		return
	}
	sl.reqs = addSat(sl.reqs, reqs)
	sl.fails = addSat(sl.fails, fails)
}

// addCounts adds a worker's num_reqs_per_sec (or, with fails set,
// num_fail_per_sec) in the order of its pairs: ascending seconds, as Decode
// gives them, so that the result never depends on the order a Go map would
// have had (it could when counts of zero, or counts that sum to zero, meet
// in one ring slot).
func (s *secCounts) addCounts(pairs []protocol.Count, fails bool) {
	for _, p := range pairs {
		s.addOne(p.Key, p.N, fails)
	}
}

func (s *secCounts) addOne(sec, n int64, fails bool) {
	if fails {
		s.add(sec, 0, n)
	} else {
		s.add(sec, n, 0)
	}
}

func (s *secCounts) spill(sl secSlot) {
	if s.over == nil {
		s.over = make(map[int64]secSlot)
	}
	o := s.over[sl.sec]
	o.sec = sl.sec
	o.reqs = addSat(o.reqs, sl.reqs)
	o.fails = addSat(o.fails, sl.fails)
	s.over[sl.sec] = o
}

// get returns the requests and failures recorded for sec.
func (s *secCounts) get(sec int64) (reqs, fails int64) {
	sl := &s.ring[uint64(sec)%secRingSize]
	if sl.sec == sec {
		reqs, fails = sl.reqs, sl.fails
	}
	if o, ok := s.over[sec]; ok {
		reqs = addSat(reqs, o.reqs)
		fails = addSat(fails, o.fails)
	}
	return reqs, fails
}

func (s *secCounts) reset() {
	s.ring = [secRingSize]secSlot{}
	clear(s.over)
}

// counts returns Locust's num_reqs_per_sec and num_fail_per_sec as pairs in
// ascending order of seconds, nil for none.
func (s *secCounts) counts() (reqs, fails []protocol.Count) {
	put := func(sl secSlot) {
		if sl.reqs != 0 {
			reqs = append(reqs, protocol.Count{Key: sl.sec, N: sl.reqs})
		}
		if sl.fails != 0 {
			fails = append(fails, protocol.Count{Key: sl.sec, N: sl.fails})
		}
	}
	for _, sl := range s.ring {
		put(sl)
	}
	for _, sl := range s.over {
		put(sl)
	}
	return sumSorted(reqs), sumSorted(fails)
}

// packBuckets appends ascending buckets as varints: the key's difference
// from the previous key (zigzag), then the count.
func packBuckets(dst []byte, bs []bucket) []byte {
	var prev int64
	for _, b := range bs {
		dst = binary.AppendVarint(dst, b.Key-prev)
		dst = binary.AppendVarint(dst, b.Count)
		prev = b.Key
	}
	return dst
}

// unpackBuckets reverses packBuckets (its input is always our own).
func unpackBuckets(p []byte) []bucket {
	out := make([]bucket, 0, len(p)/2)
	var key int64
	for len(p) > 0 {
		d, n := binary.Varint(p)
		p = p[n:]
		c, m := binary.Varint(p)
		p = p[m:]
		if n <= 0 || m <= 0 {
			break
		}
		key += d
		out = append(out, bucket{key, c})
	}
	return out
}
