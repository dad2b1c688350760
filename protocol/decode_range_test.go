package protocol

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestDecodeStatsOutOfRange: a stats report holding a NaN or infinite
// float, a negative count, time, size or map key or value, or more entries
// or error rows than the limits is refused by Decode and DecodePooled with
// an error wrapping ErrMalformed and ErrOutOfRange that names the field.
func TestDecodeStatsOutOfRange(t *testing.T) {
	i64 := func(v int64) []byte { return mp(H("d3"), bigEndian(uint64(v))) }
	one := func(kv ...[]byte) []byte {
		return env("stats", report(mp(A(1), entry(len(kv)/2, kv...)), entry(0)))
	}
	// start is a report whose one entry starts at start, total at total.
	start := func(start, total []byte) []byte {
		e := func(name string, v []byte) []byte {
			return mp(M(3), S("name"), S(name), S("method"), S("GET"), S("start_time"), v)
		}
		return env("stats", report(mp(A(1), e("/x", start)), e("Aggregated", total)))
	}
	errRow := func(occ []byte, kv ...[]byte) []byte {
		row := mp(append([][]byte{M(4 + len(kv)/2), S("name"), S("/x"), S("method"), S("GET"), S("error"), S("e"),
			S("occurrences"), occ}, kv...)...)
		return env("stats", mp(M(4), S("stats"), A(0), S("stats_total"), entry(0),
			S("errors"), mp(M(1), S("k"), row), S("user_classes_count"), M(0)))
	}
	// A header announcing n elements followed by n nil bytes: enough for
	// the length check against the payload, never decoded.
	bigArray := func(n int) []byte {
		b := mp(H("dd"), bigEndian32(uint32(n)))
		return env("stats", mp(M(4), S("stats"), b, bytes.Repeat(Nil, n)))
	}
	bigErrors := func(n int) []byte {
		b := mp(H("df"), bigEndian32(uint32(n)))
		return env("stats", mp(M(4), S("errors"), b, bytes.Repeat(Nil, 2*n)))
	}
	tests := []struct {
		name, where string
		in          []byte
	}{
		{"NaN start_time", "stats[0].start_time: NaN", start(F(math.NaN()), F(1))},
		{"inf total start_time", "stats_total.start_time: +Inf", start(F(1), F(math.Inf(1)))},
		{"negative int start_time", "stats[0].start_time: -1 ", start(I(-1), F(1))},
		{"NaN total_response_time", "stats[0].total_response_time: NaN", one(S("total_response_time"), F(math.NaN()))},
		{"float32 inf max_response_time", "stats[0].max_response_time: +Inf", one(S("max_response_time"), F32(float32(math.Inf(1))))},
		{"negative min_response_time", "stats[0].min_response_time: -0.5", one(S("min_response_time"), F(-0.5))},
		{"-inf last_request_timestamp", "stats[0].last_request_timestamp: -Inf", one(S("last_request_timestamp"), F(math.Inf(-1)))},
		{"negative num_requests", "stats[0].num_requests: -1 is negative", one(S("num_requests"), I(-1))},
		{"negative num_none_requests", "stats[0].num_none_requests: -32", one(S("num_none_requests"), I(-32))},
		{"negative num_failures", "stats[0].num_failures: -9223372036854775808", one(S("num_failures"), i64(math.MinInt64))},
		{"negative total_content_length", "stats[0].total_content_length: -5", one(S("total_content_length"), I(-5))},
		{"negative response_times key", "stats[0].response_times[key 0]: -3", one(S("response_times"), mp(M(1), I(-3), I(1)))},
		{"negative float key", "stats[0].response_times[key 1]: -2", one(S("response_times"), mp(M(2), I(1), I(1), F(-2.5), I(1)))},
		{"negative response_times count", "stats[0].response_times[4]: -1", one(S("response_times"), mp(M(1), I(4), I(-1)))},
		{"negative num_reqs_per_sec count", "stats[0].num_reqs_per_sec[7]: -2", one(S("num_reqs_per_sec"), mp(M(1), I(7), I(-2)))},
		{"negative num_fail_per_sec key", "stats[0].num_fail_per_sec[key 0]: -7", one(S("num_fail_per_sec"), mp(M(1), I(-7), I(1)))},
		{"negative occurrences", `errors["k"].occurrences: -4`, errRow(I(-4))},
		{"NaN first_seen", `errors["k"].first_seen: NaN`, errRow(I(1), S("first_seen"), F(math.NaN()))},
		{"negative last_seen", `errors["k"].last_seen: -1`, errRow(I(1), S("last_seen"), F(-1))},
		{"too many entries", "stats: 100001 entries, more than MaxReportEntries (100000)", bigArray(MaxReportEntries + 1)},
		{"a million entries", "stats: 1000000 entries, more than MaxReportEntries", bigArray(1_000_000)},
		{"too many error rows", "errors: 100001 error rows, more than MaxReportErrors (100000)", bigErrors(MaxReportErrors + 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for name, decode := range map[string]func([]byte) (Message, error){"Decode": Decode, "DecodePooled": DecodePooled} {
				m, err := decode(tc.in)
				if err == nil {
					t.Fatalf("%s(%s) = %s; want an error", name, tc.name, dump(m.Data))
				}
				if !errors.Is(err, ErrMalformed) || !errors.Is(err, ErrOutOfRange) || !strings.Contains(err.Error(), tc.where) {
					t.Errorf("%s(%s) error = %v; want ErrMalformed and ErrOutOfRange at %q", name, tc.name, err, tc.where)
				}
			}
		})
	}
}

// TestDecodeStatsInRange: the edges of the accepted values decode: zero,
// negative zero, the largest finite float, the largest counts, and exactly
// MaxReportEntries entries.
func TestDecodeStatsInRange(t *testing.T) {
	e := mp(M(8), S("name"), S("/x"), S("method"), S("GET"), S("start_time"), F(math.Copysign(0, -1)),
		S("total_response_time"), F(math.MaxFloat64), S("min_response_time"), F(0),
		S("num_requests"), mp(H("cf"), bigEndian(math.MaxInt64)), S("response_times"), mp(M(1), F(-0.9), I(1)),
		S("num_reqs_per_sec"), mp(M(1), mp(H("cf"), bigEndian(math.MaxInt64)), mp(H("cf"), bigEndian(math.MaxInt64))))
	if _, err := Decode(env("stats", report(mp(A(1), e), entry(0)))); err != nil {
		t.Errorf("Decode(edge values) error: %v", err)
	}
	var b bytes.Buffer
	b.Write(mp(H("dd"), bigEndian32(MaxReportEntries)))
	for range MaxReportEntries {
		b.Write(entry(0))
	}
	m, err := DecodePooled(env("stats", report(b.Bytes(), entry(0))))
	if err != nil {
		t.Fatalf("DecodePooled(%d entries) error: %v", MaxReportEntries, err)
	}
	r := m.Data.(*StatsReport)
	if len(r.Stats) != MaxReportEntries {
		t.Errorf("DecodePooled(%d entries) gave %d entries", MaxReportEntries, len(r.Stats))
	}
	r.Release()
}

// statsValueProblem is an independent check of what Decode must refuse
// (ErrOutOfRange) in a decoded message: "" if nothing, else what is wrong.
func statsValueProblem(m Message) string {
	r, ok := m.Data.(*StatsReport)
	if !ok {
		return ""
	}
	if len(r.Stats) > MaxReportEntries {
		return "too many entries"
	}
	if len(r.Errors) > MaxReportErrors {
		return "too many errors"
	}
	badF := func(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) || f < 0 }
	badP := func(p *float64) bool { return p != nil && badF(*p) }
	badM := func(c []Count) bool {
		for _, p := range c {
			if p.Key < 0 || p.N < 0 {
				return true
			}
		}
		return false
	}
	for i, e := range append(r.Stats[:len(r.Stats):len(r.Stats)], r.Total) {
		switch {
		case badF(e.StartTime) || badF(e.TotalResponseTime) || badF(e.MaxResponseTime) ||
			badP(e.MinResponseTime) || badP(e.LastRequestTimestamp):
			return "entry " + strconv.Itoa(i) + ": float"
		case e.NumRequests < 0 || e.NumNoneRequests < 0 || e.NumFailures < 0 || e.TotalContentLength < 0:
			return "entry " + strconv.Itoa(i) + ": int"
		case badM(e.ResponseTimes) || badM(e.NumReqsPerSec) || badM(e.NumFailPerSec):
			return "entry " + strconv.Itoa(i) + ": map"
		}
	}
	for k, se := range r.Errors {
		if se.Occurrences < 0 || badP(se.FirstSeen) || badP(se.LastSeen) {
			return "error " + k
		}
	}
	return ""
}

func bigEndian(v uint64) []byte {
	return []byte{byte(v >> 56), byte(v >> 48), byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}

func bigEndian32(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
