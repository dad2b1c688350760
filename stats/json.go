package stats

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/cicada-load/cicada/internal/pyrepr"
)

// AppendJSON appends Locust's --json document (HEAD locust/stats.py,
// print_stats_json: json.dumps(stats.serialize_stats(), indent=4)): an
// array of one object per entry that has requests or failures, with
// StatsEntryDict's keys in its order (name, method, last_request_timestamp,
// start_time, num_requests, num_none_requests, num_failures,
// total_response_time, max_response_time, min_response_time,
// total_content_length, response_times, num_reqs_per_sec,
// num_fail_per_sec), Python's number forms and ensure_ascii escapes, and
// no trailing newline (print adds one). extra are objects appended as
// further elements, each already encoded at the element's indentation
// (cicada's thresholds' verdict).
//
// Differences from Locust: entries are in (name, method) order, where
// Locust uses their first appearance; response_times keys ascend; a master
// keeps the per-second counts of the last 16 seconds only (Locust's keeps
// every second of the run), so num_reqs_per_sec and num_fail_per_sec hold
// at most those; and Locust's serialize_stats resets every entry as it
// serializes (so its --json-file after --json gets []), where AppendJSON
// changes nothing.
func (s *Stats) AppendJSON(dst []byte, extra ...[]byte) []byte {
	s.mu.Lock()
	es := make([]*mentry, 0, len(s.mu.entries))
	for _, e := range s.mu.entries {
		if e.numRequests != 0 || e.numFailures != 0 {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b *mentry) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.method, b.method))
	})
	n := 0
	dst = append(dst, '[')
	var scratch []bucket
	for _, e := range es {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, "\n    {"...)
		scratch = e.rt.appendBuckets(scratch[:0])
		dst = e.appendJSON(dst, scratch)
		dst = append(dst, "\n    }"...)
	}
	s.mu.Unlock()
	for _, x := range extra {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, "\n    "...)
		dst = append(dst, x...)
	}
	if n > 0 {
		dst = append(dst, '\n')
	}
	return append(dst, ']')
}

func (e *mentry) appendJSON(dst []byte, buckets []bucket) []byte {
	key := func(k string) {
		dst = append(dst, "\n        "...)
		dst = pyrepr.AppendJSONString(dst, k)
		dst = append(dst, ": "...)
	}
	key("name")
	dst = pyrepr.AppendJSONString(dst, e.name)
	dst = append(dst, ',')
	key("method")
	if e.methodNil {
		dst = append(dst, "null"...)
	} else {
		dst = pyrepr.AppendJSONString(dst, e.method)
	}
	dst = append(dst, ',')
	key("last_request_timestamp")
	if e.hasLast {
		dst = pyrepr.AppendFloat(dst, e.lastReq)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, ',')
	key("start_time")
	dst = pyrepr.AppendFloat(dst, e.start)
	dst = append(dst, ',')
	for _, kv := range []struct {
		k string
		v int64
	}{{"num_requests", e.numRequests}, {"num_none_requests", e.numNone}, {"num_failures", e.numFailures}} {
		key(kv.k)
		dst = strconv.AppendInt(dst, kv.v, 10)
		dst = append(dst, ',')
	}
	key("total_response_time")
	dst = pyrepr.AppendFloat(dst, e.totalRT)
	dst = append(dst, ',')
	key("max_response_time")
	if e.hasMin {
		dst = pyrepr.AppendFloat(dst, e.maxRT)
	} else {
		dst = append(dst, '0')
	}
	dst = append(dst, ',')
	key("min_response_time")
	if e.hasMin {
		dst = pyrepr.AppendFloat(dst, e.minRT)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, ',')
	key("total_content_length")
	dst = strconv.AppendInt(dst, e.contentLength, 10)
	dst = append(dst, ',')
	dict := func(k string, keys, vals func(i int) int64, n int, last bool) {
		key(k)
		if n == 0 {
			dst = append(dst, "{}"...)
		} else {
			dst = append(dst, '{')
			for i := 0; i < n; i++ {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, "\n            \""...)
				dst = strconv.AppendInt(dst, keys(i), 10)
				dst = append(dst, "\": "...)
				dst = strconv.AppendInt(dst, vals(i), 10)
			}
			dst = append(dst, "\n        }"...)
		}
		if !last {
			dst = append(dst, ',')
		}
	}
	dict("response_times", func(i int) int64 { return buckets[i].Key }, func(i int) int64 { return buckets[i].Count }, len(buckets), false)
	reqs, fails := e.secs.counts()
	dict("num_reqs_per_sec", func(i int) int64 { return reqs[i].Key }, func(i int) int64 { return reqs[i].N }, len(reqs), false)
	dict("num_fail_per_sec", func(i int) int64 { return fails[i].Key }, func(i int) int64 { return fails[i].N }, len(fails), true)
	return dst
}
