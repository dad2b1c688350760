package protocol

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// checkAgainstReference decodes payload with Decode, with DecodePooled
// after releasing a report decoded from prev, and with the reference
// decoder (refdecode_test.go). All three must give equal values, or errors
// with the same text, except where Decode refuses a stats value out of
// range (ErrOutOfRange), which the reference accepts: then the reference's
// result must hold such a value (statsValueProblem), or the reference fail
// further on; Decode and DecodePooled still agree.
func checkAgainstReference(t testing.TB, prev, payload []byte) {
	t.Helper()
	want, wantErr := refDecode(payload)
	got, err := Decode(payload)
	pooled, pooledErr := decodePooledTwice(prev, payload)
	if wantErr == nil && err == nil {
		if p := statsValueProblem(want); p != "" {
			t.Fatalf("payload %x:\nDecode accepted a value out of range: %s", payload, p)
		}
	}
	if errors.Is(err, ErrOutOfRange) {
		if wantErr == nil && statsValueProblem(want) == "" {
			t.Fatalf("payload %x:\nDecode error: %v\nreference: no error, no value out of range", payload, err)
		}
		if pooledErr == nil || pooledErr.Error() != err.Error() {
			t.Fatalf("payload %x:\nDecode error: %v\nDecodePooled error: %v", payload, err, pooledErr)
		}
		if r, ok := pooled.Data.(*StatsReport); ok {
			r.Release()
		}
		return
	}
	for _, c := range []struct {
		name string
		m    Message
		err  error
	}{{"Decode", got, err}, {"DecodePooled", unpooled(t, pooled), pooledErr}} {
		if (c.err == nil) != (wantErr == nil) || (c.err != nil && c.err.Error() != wantErr.Error()) {
			t.Fatalf("payload %x:\n%s error: %v\nreference error: %v", payload, c.name, c.err, wantErr)
		}
		if c.err == nil && !deepEqual(c.m, want) {
			t.Fatalf("payload %x:\n%s = %s %s\nreference = %s %s", payload, c.name, c.m.Type, dump(c.m.Data), want.Type, dump(want.Data))
		}
	}
	if r, ok := pooled.Data.(*StatsReport); ok {
		r.Release()
	}
}

// mutationCodes are the bytes written over a payload position by
// referencePayloads: every msgpack header class, including the ones whose
// length or value bytes then run past the end.
var mutationCodes = []byte{
	0x00, 0x05, 0x7f, 0x80, 0x81, 0x8f, 0x90, 0x93, 0x9f, 0xa0, 0xa3, 0xbf,
	0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xca, 0xcb, 0xcc, 0xcd,
	0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3, 0xd4, 0xd8, 0xd9, 0xda, 0xdb, 0xdc,
	0xdd, 0xde, 0xdf, 0xe0, 0xff,
}

// referencePayloads returns the captured frames, random messages, the
// benchmark reports and heartbeats, and damaged copies of them: truncated
// at sampled lengths and with sampled bytes overwritten by mutationCodes.
func referencePayloads(t testing.TB, rng *rand.Rand, n int) [][]byte {
	var base [][]byte
	for _, f := range loadFrames(t) {
		base = append(base, f.payload)
	}
	g := gen{rng}
	for range n {
		b, err := Encode(g.message())
		if err != nil {
			t.Fatal(err)
		}
		base = append(base, b)
	}
	big, _ := Encode(benchStatsMessage())
	hb, _ := Encode(Message{Type: TypeHeartbeat, Data: &Heartbeat{State: "running", CPUUsage: 12.5, MemoryUsage: 56696832,
		Connections: &ConnCounters{Open: 3, Closes: map[string]int64{"eof": 2}}}, NodeID: node2121})
	base = append(base, big, hb)
	out := append([][]byte{}, base...)
	for _, b := range base {
		// Truncations: every length for short payloads, a sample otherwise.
		for i := 0; i < len(b); i++ {
			if len(b) <= 256 || rng.IntN(len(b)/64+1) == 0 {
				out = append(out, b[:i])
			}
		}
		// Overwrites at sampled positions.
		for range min(len(b), 24) {
			c := append([]byte{}, b...)
			c[rng.IntN(len(c))] = mutationCodes[rng.IntN(len(mutationCodes))]
			out = append(out, c)
		}
	}
	return out
}

// TestDecodeMatchesReference: the cursor decoder gives the values and the
// error texts of the msgpack-library decoder it replaced, on valid and
// damaged payloads, pooled or not.
func TestDecodeMatchesReference(t *testing.T) {
	n := 600
	if testing.Short() || raceEnabled {
		n = 150
	}
	rng := rand.New(rand.NewPCG(11, 12))
	payloads := referencePayloads(t, rng, n)
	big, _ := Encode(benchStatsMessage())
	for i, p := range payloads {
		prev := big
		if i%2 == 1 {
			prev = payloads[(i*7)%len(payloads)]
		}
		checkAgainstReference(t, prev, p)
	}
}

// FuzzDecodeMatchesReference is TestDecodeMatchesReference on any input.
func FuzzDecodeMatchesReference(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, fr := range loadFrames(f) {
		f.Add(fr.payload)
	}
	g := gen{rng}
	for range 40 {
		b, _ := Encode(g.message())
		f.Add(b)
	}
	prev, _ := Encode(benchStatsMessage())
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkAgainstReference(t, prev, payload)
	})
}
