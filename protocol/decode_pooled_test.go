package protocol

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"
)

// unpooled returns a message from DecodePooled in the form Decode gives: the
// pool link of a stats report removed. It fails t unless every entry's
// stats maps are nil or non-empty pairs with strictly ascending keys.
func unpooled(t testing.TB, m Message) Message {
	t.Helper()
	r, ok := m.Data.(*StatsReport)
	if !ok || r == nil {
		return m
	}
	c := *r
	c.mem = nil
	c.Stats = slices.Clone(r.Stats)
	for i := range len(c.Stats) + 1 {
		e := &c.Total
		if i < len(c.Stats) {
			e = &c.Stats[i]
		}
		for _, f := range []struct {
			name  string
			pairs []Count
		}{
			{"response_times", e.ResponseTimes},
			{"num_reqs_per_sec", e.NumReqsPerSec},
			{"num_fail_per_sec", e.NumFailPerSec},
		} {
			if (f.pairs != nil && len(f.pairs) == 0) || !CountsSorted(f.pairs) {
				t.Fatalf("DecodePooled entry %q %s: pairs %v; want nil or strictly ascending pairs", e.Name, f.name, f.pairs)
			}
		}
	}
	m.Data = &c
	return m
}

// decodePooledTwice decodes prev with DecodePooled, releases it, then
// decodes payload with DecodePooled: the second decode reuses the first's
// memory, which must not show through.
func decodePooledTwice(prev, payload []byte) (Message, error) {
	if p, err := DecodePooled(prev); err == nil {
		if r, ok := p.Data.(*StatsReport); ok {
			r.Release()
		}
	}
	return DecodePooled(payload)
}

// TestDecodePooledEqualsDecode: for captured frames and random messages,
// DecodePooled gives Decode's result (or error), whatever report was decoded
// and released before it.
func TestDecodePooledEqualsDecode(t *testing.T) {
	var payloads [][]byte
	for _, f := range loadFrames(t) {
		payloads = append(payloads, f.payload)
	}
	g := gen{rand.New(rand.NewPCG(5, 9))}
	n := 2000
	if testing.Short() {
		n = 300
	}
	for range n {
		m := g.message()
		if _, ok := m.Data.(*StatsReport); !ok && g.n(3) != 0 {
			continue
		}
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, b)
	}
	big, _ := Encode(benchStatsMessage())
	payloads = append(payloads, big)
	for i, p := range payloads {
		want, wantErr := Decode(p)
		for _, prev := range [][]byte{big, payloads[(i+1)%len(payloads)], payloads[(i+7)%len(payloads)]} {
			got, err := decodePooledTwice(prev, p)
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("payload %d: DecodePooled error %v; Decode error %v", i, err, wantErr)
			}
			if err == nil && !deepEqual(unpooled(t, got), want) {
				t.Fatalf("payload %d after %x:\nDecodePooled = %s\nDecode       = %s", i, prev[:min(len(prev), 16)], dump(got.Data), dump(want.Data))
			}
		}
	}
}

// TestDecodePooledReuses: a released report's memory serves the next one,
// and the new values replace the old ones entirely (fewer entries, absent
// keys, empty maps decode to nil as with Decode).
func TestDecodePooledReuses(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	full, _ := Encode(benchStatsMessage())
	small := env(TypeStats, mp(M(4), S("stats"), mp(A(1), entry(1, S("response_times"), M(0))),
		S("stats_total"), entry(0), S("errors"), M(0), S("user_classes_count"), M(0)))
	m1, err := DecodePooled(full)
	if err != nil {
		t.Fatal(err)
	}
	r1 := m1.Data.(*StatsReport)
	first := &r1.Stats[0]
	r1.Release()
	r1.Release() // a second release does nothing
	m2, err := DecodePooled(small)
	if err != nil {
		t.Fatal(err)
	}
	r2 := m2.Data.(*StatsReport)
	if r2 != r1 || &r2.Stats[0] != first {
		t.Errorf("DecodePooled did not reuse the released report")
	}
	want, _ := Decode(small)
	if !deepEqual(unpooled(t, m2), want) {
		t.Errorf("DecodePooled after reuse = %s; want %s", dump(m2.Data), dump(want.Data))
	}
	if r2.Stats[0].ResponseTimes != nil || r2.Errors != nil || r2.UserClassesCount != nil || r2.Total.Exact != nil {
		t.Errorf("stale values show through: %s", dump(r2))
	}
	// Reports not from DecodePooled ignore Release.
	var nilReport *StatsReport
	nilReport.Release()
	d, _ := Decode(full)
	d.Data.(*StatsReport).Release()
	if d2, _ := Decode(full); !deepEqual(d, d2) {
		t.Error("Release changed a report from Decode")
	}
}

// TestDecodePooledAllocs: a steady stream of released reports decodes
// without allocating.
func TestDecodePooledAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	st, _ := Encode(benchStatsMessage())
	a := testing.AllocsPerRun(50, func() {
		m, err := DecodePooled(st)
		if err != nil {
			t.Fatal(err)
		}
		m.Data.(*StatsReport).Release()
	})
	if a > 2 {
		t.Errorf("DecodePooled(stats, 50 entries) then Release allocs = %v; want ≤ 2", a)
	}
}

// TestDecodePooledConcurrent decodes on some goroutines and releases on
// others, as a master's receive and event loops do. Run it with -race.
func TestDecodePooledConcurrent(t *testing.T) {
	frames := loadFrames(t)
	var payloads [][]byte
	var want [][]byte
	for _, f := range frames {
		m, err := Decode(f.payload)
		if err != nil {
			continue
		}
		enc, _ := Encode(m)
		payloads, want = append(payloads, f.payload), append(want, enc)
	}
	errs := make(chan error, 4)
	for range 4 {
		ch := make(chan Message, 8)
		done := make(chan error, 1)
		go func() { // the "loop": check, then release
			var err error
			i := 0
			for m := range ch {
				if enc, _ := Encode(m); err == nil && !bytes.Equal(enc, want[i%len(want)]) {
					err = fmt.Errorf("message %d re-encodes to %s", i, hex.EncodeToString(enc[:min(len(enc), 32)]))
				}
				if r, ok := m.Data.(*StatsReport); ok {
					r.Release()
				}
				i++
			}
			done <- err
		}()
		go func() { // the "receiver"
			for range 3 {
				for _, p := range payloads {
					m, err := DecodePooled(p)
					if err != nil {
						close(ch)
						<-done
						errs <- err
						return
					}
					ch <- m
				}
			}
			close(ch)
			errs <- <-done
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// FuzzDecodePooled: DecodePooled agrees with Decode on any input, after a
// previous pooled report was released.
func FuzzDecodePooled(f *testing.F) {
	for _, fr := range loadFrames(f) {
		f.Add(fr.payload)
	}
	g := gen{rand.New(rand.NewPCG(3, 3))}
	for added := 0; added < 30; {
		if m := g.message(); m.Type == TypeStats {
			b, _ := Encode(m)
			f.Add(b)
			added++
		}
	}
	prev, _ := Encode(benchStatsMessage())
	f.Fuzz(func(t *testing.T, payload []byte) {
		want, wantErr := Decode(payload)
		got, err := decodePooledTwice(prev, payload)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("DecodePooled error %v; Decode error %v", err, wantErr)
		}
		if err == nil && !deepEqual(unpooled(t, got), want) {
			t.Fatalf("DecodePooled = %s; Decode = %s", dump(got.Data), dump(want.Data))
		}
	})
}

// BenchmarkDecodePooledStats is BenchmarkDecodeStats for a master that
// releases each report after merging it.
func BenchmarkDecodePooledStats(b *testing.B) {
	payload, err := Encode(benchStatsMessage())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	c0 := processCPU()
	for b.Loop() {
		m, err := DecodePooled(payload)
		if err != nil {
			b.Fatal(err)
		}
		m.Data.(*StatsReport).Release()
	}
	reportCPU(b, c0)
}

// processCPU is the CPU time of this process (garbage collection
// included), for benchmarks on a machine shared with other work, where
// wall time is not the cost.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the metric cpu-ns/op: process CPU time since c0 per op.
func reportCPU(b *testing.B, c0 time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkDecodePooledHeartbeat is BenchmarkDecodeHeartbeat through
// DecodePooled, as the master receives it.
func BenchmarkDecodePooledHeartbeat(b *testing.B) {
	payload, _ := Encode(Message{Type: TypeHeartbeat, Data: &Heartbeat{State: "running", CPUUsage: 12.5, MemoryUsage: 56696832},
		NodeID: "worker-host_0123456789abcdef0123456789abcdef"})
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodePooled(payload); err != nil {
			b.Fatal(err)
		}
	}
}
