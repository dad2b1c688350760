package protocol

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCanonCounts: canonCounts gives the pairs of the map that holds the
// input pairs (of equal keys the last wins), strictly ascending, for short
// (insertion sort) and long (stable sort) inputs.
func TestCanonCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		n := rng.IntN(90)
		keys := int64(1 + rng.IntN(2*n+1)) // small key ranges repeat keys
		if i%3 == 0 {
			keys = math.MaxInt64
		}
		pairs := make([]Count, n)
		for j := range pairs {
			pairs[j] = Count{rng.Int64N(keys) - keys/2, int64(j)}
			if i%5 == 0 {
				pairs[j].Key = int64(j) // sorted: returned as is
			}
		}
		want := Counts(CountMap(pairs))
		in := slices.Clone(pairs)
		got := canonCounts(in)
		if !CountsSorted(got) || len(got) != len(want) || (len(want) > 0 && !slices.Equal(got, want)) {
			t.Fatalf("canonCounts(%v) = %v; want %v", pairs, got, want)
		}
		if n > 0 && CountsSorted(pairs) && &got[0] != &in[0] {
			t.Fatalf("canonCounts copied sorted pairs")
		}
	}
	if canonCounts(nil) != nil {
		t.Error("canonCounts(nil) != nil")
	}
}

// TestCountsMaps checks Counts and CountMap.
func TestCountsMaps(t *testing.T) {
	if Counts(nil) != nil || Counts(map[int64]int64{}) != nil || CountMap(nil) != nil || CountMap([]Count{}) != nil {
		t.Error("empty Counts/CountMap not nil")
	}
	m := map[int64]int64{5: 1, -3: 2, 1 << 40: 3}
	if got, want := Counts(m), []Count{{-3, 2}, {5, 1}, {1 << 40, 3}}; !slices.Equal(got, want) {
		t.Errorf("Counts = %v; want %v", got, want)
	}
	if got := CountMap([]Count{{7, 1}, {2, 2}, {7, 3}}); !deepEqual(got, map[int64]int64{7: 3, 2: 2}) {
		t.Errorf("CountMap = %v", got)
	}
}

// statsMapPayload is a stats report whose one entry has the given
// response_times map body (header included) and per-second maps.
func statsMapPayload(rt, reqs, fails []byte) []byte {
	return env("stats", report(mp(A(1), entry(3, S("response_times"), rt, S("num_reqs_per_sec"), reqs,
		S("num_fail_per_sec"), fails)), entry(0)))
}

// TestDecodePooledCounts: Decode and DecodePooled give the stats maps as
// strictly ascending pairs holding what a Python dict holds, for the key
// orders seen
// in practice (ascending from cicada and for Locust's seconds, first-seen
// order in Locust's response_times) and hostile ones (repeated keys, float
// keys that truncate to the same int, negative and extreme keys).
func TestDecodePooledCounts(t *testing.T) {
	u32 := func(v uint32) []byte { return []byte{0xce, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
	i64 := func(v int64) []byte {
		return []byte{0xd3, byte(v >> 56), byte(v >> 48), byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	}
	long := [][]byte{M(60)}
	var longWant []Count
	for i := range 60 {
		k := (i * 37) % 45 // 45 distinct keys, 15 repeated, in no order
		long = append(long, I(k), I(i))
	}
	longWant = Counts(func() map[int64]int64 {
		m := map[int64]int64{}
		for i := range 60 {
			m[int64((i*37)%45)] = int64(i)
		}
		return m
	}())
	cases := []struct {
		name            string
		rt, reqs, fails []byte
		want            [3][]Count
	}{
		{"ascending (cicada)", mp(M(3), I(2), I(1), H("cc 96"), I(4), H("cd 1388"), I(1)),
			mp(M(2), u32(1796011105), I(3), u32(1796011106), I(1)), M(0),
			[3][]Count{{{2, 1}, {150, 4}, {5000, 1}}, {{1796011105, 3}, {1796011106, 1}}, nil}},
		{"first-seen order, float keys (Locust 2.12.1)", mp(M(5), F(160), I(1), I(4), I(2), I(3), I(1), F(130), I(6), I(2), I(9)),
			mp(M(1), u32(1796011105), I(5)), mp(M(1), u32(1796011105), I(1)),
			[3][]Count{{{2, 9}, {3, 1}, {4, 2}, {130, 6}, {160, 1}}, {{1796011105, 5}}, {{1796011105, 1}}}},
		{"repeated keys keep the last", mp(M(5), F(140), I(2), I(3), I(1), F32(150), I(1), H("cc 8c"), I(5), F(140.9), I(7)),
			mp(M(3), I(1), I(1), I(1), I(2), I(1), I(3)), mp(M(2), I(0), I(0), F(-0.5), I(4)),
			[3][]Count{{{3, 1}, {140, 7}, {150, 1}}, {{1, 3}}, {{0, 4}}}},
		{"extreme keys and counts", mp(M(3), i64(math.MaxInt64), I(1), I(5), I(0), I(0), i64(math.MaxInt64)),
			M(0), mp(M(2), i64(math.MaxInt64), I(1), i64(math.MaxInt64), I(2)),
			[3][]Count{{{0, math.MaxInt64}, {5, 0}, {math.MaxInt64, 1}}, nil, {{math.MaxInt64, 2}}}},
		{"long, unordered, repeated", mp(long...), M(0), M(0), [3][]Count{longWant, nil, nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			payload := statsMapPayload(c.rt, c.reqs, c.fails)
			want, err := Decode(payload)
			if err != nil {
				t.Fatal(err)
			}
			for _, prev := range [][]byte{payload, nil} {
				got, err := decodePooledTwice(prev, payload)
				if err != nil {
					t.Fatal(err)
				}
				e := got.Data.(*StatsReport).Stats[0]
				for i, p := range [][]Count{e.ResponseTimes, e.NumReqsPerSec, e.NumFailPerSec} {
					if !slices.Equal(p, c.want[i]) || (p == nil) != (c.want[i] == nil) {
						t.Errorf("map %d = %v; want %v", i, p, c.want[i])
					}
				}
				if !deepEqual(unpooled(t, got), want) {
					t.Errorf("DecodePooled = %s; Decode = %s", dump(got.Data), dump(want.Data))
				}
				got.Data.(*StatsReport).Release()
			}
		})
	}
}

// TestEncodeCounts: an entry's stats maps are written in ascending key
// order, and decode to the pairs they were given; unordered or repeated
// pairs are written as the map holding them would be.
func TestEncodeCounts(t *testing.T) {
	rt := map[int64]int64{150: 1, 50: 1, 100: 1, 7: 2, 1 << 40: 3}
	reqs := map[int64]int64{1796011106: 1, 1796011105: 2}
	fails := map[int64]int64{1796011105: 1}
	ascending := StatsEntry{Name: "/x", Method: sp("GET"), StartTime: 1,
		ResponseTimes: Counts(rt), NumReqsPerSec: Counts(reqs), NumFailPerSec: Counts(fails)}
	encode := func(e StatsEntry) []byte {
		t.Helper()
		b, err := Encode(Message{Type: TypeStats, NodeID: "n", Data: &StatsReport{Stats: []StatsEntry{e}, Total: e, UserCount: -1}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	want := encode(ascending)
	// The response_times map as Locust writes it: sorted, smallest ints.
	if !bytes.Contains(want, mp(S("response_times"), H("85 07 02 32 01 64 01 cc 96 01 cf 0000010000000000 03"))) {
		t.Errorf("Encode = %x; want response_times in ascending order", want)
	}
	d, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Data.(*StatsReport).Stats[0]; !deepEqual(got, ascending) {
		t.Errorf("Decode(Encode(e)) = %s; want %s", dumpEntry(&got), dumpEntry(&ascending))
	}
	for name, e := range map[string]StatsEntry{
		"unordered, repeated pairs": {ResponseTimes: []Count{{150, 9}, {1 << 40, 3}, {50, 1}, {7, 2}, {150, 1}, {100, 1}},
			NumReqsPerSec: []Count{{1796011106, 1}, {1796011105, 2}}, NumFailPerSec: []Count{{1796011105, 0}, {1796011105, 1}}},
	} {
		e.Name, e.Method, e.StartTime = ascending.Name, ascending.Method, ascending.StartTime
		before := slices.Clone(e.ResponseTimes)
		if got := encode(e); !bytes.Equal(got, want) {
			t.Errorf("%s: Encode = %x; want %x", name, got, want)
		}
		if !slices.Equal(e.ResponseTimes, before) {
			t.Errorf("%s: Encode changed the pairs", name)
		}
	}
	// A pooled report re-encodes to its payload, without allocating.
	m, err := DecodePooled(want)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Data.(*StatsReport).Release()
	buf := make([]byte, 0, 2*len(want))
	if got, _ := AppendEncode(buf, m); !bytes.Equal(got, want) {
		t.Errorf("pooled report re-encodes to %x; want %x", got, want)
	}
	if raceEnabled {
		return
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = AppendEncode(buf, m) }); a != 0 {
		t.Errorf("AppendEncode of a pooled report allocs = %v; want 0", a)
	}
}
