package stats

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// scramblePairs puts the stats maps' pairs of every entry of r in a random
// order, with a stale pair ahead of its key's last one: the same map, in
// the form a report built by hand may have.
func scramblePairs(rng *rand.Rand, r *protocol.StatsReport) {
	scramble := func(c []protocol.Count) []protocol.Count {
		if len(c) == 0 {
			return c
		}
		c = slices.Clone(c)
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		stale := protocol.Count{Key: c[rng.IntN(len(c))].Key, N: rng.Int64N(1000)}
		return append([]protocol.Count{stale}, c...)
	}
	for i := range len(r.Stats) + 1 {
		e := &r.Total
		if i < len(r.Stats) {
			e = &r.Stats[i]
		}
		e.ResponseTimes, e.NumReqsPerSec, e.NumFailPerSec = scramble(e.ResponseTimes), scramble(e.NumReqsPerSec), scramble(e.NumFailPerSec)
	}
}

// mergeTwin merges every payload into two Stats on one clock: one gets
// DecodePooled's report (stats maps as strictly ascending pairs), released
// after merging, the other Decode's with its pairs scrambled
// (scramblePairs). After each report their state and outputs must be
// identical.
func mergeTwin(t *testing.T, clk *fakeClock, payloads [][]byte, at func(i int) float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(len(payloads)), 5))
	viaMaps, viaPairs := New(clk.now), New(clk.now)
	merged := 0
	for i, p := range payloads {
		clk.set(at(i))
		m, err := protocol.Decode(p)
		if err != nil {
			continue
		}
		r, ok := m.Data.(*protocol.StatsReport)
		if !ok {
			continue
		}
		pm, err := protocol.DecodePooled(p)
		if err != nil {
			t.Fatalf("payload %d: DecodePooled: %v; Decode gave no error", i, err)
		}
		pr := pm.Data.(*protocol.StatsReport)
		scramblePairs(rng, r)
		viaMaps.Merge(r)
		viaPairs.Merge(pr)
		pr.Release()
		merged++
		if err := sameStats(viaMaps, viaPairs, merged%8 == 0 || i == len(payloads)-1); err != nil {
			t.Fatalf("payload %d (%x...): merged from scrambled and from ascending pairs differ: %v", i, p[:min(len(p), 24)], err)
		}
	}
	if merged == 0 {
		t.Fatal("no stats report merged")
	}
}

// sameStats compares the state of two Stats (entries with their buckets,
// per-second rings and cached snapshots, errors) and, with outputs set,
// their snapshots and outputs.
func sameStats(a, b *Stats, outputs bool) error {
	a.mu.Lock()
	b.mu.Lock()
	err := func() error {
		if len(a.mu.entries) != len(b.mu.entries) {
			return fmt.Errorf("%d entries vs %d", len(a.mu.entries), len(b.mu.entries))
		}
		for k, ea := range a.mu.entries {
			if eb := b.mu.entries[k]; eb == nil || !sameEntryState(ea, eb) {
				return fmt.Errorf("entry %v: %+v vs %+v", k, ea, eb)
			}
		}
		if !sameEntryState(a.mu.total, b.mu.total) {
			return fmt.Errorf("total: %+v vs %+v", a.mu.total, b.mu.total)
		}
		if !reflect.DeepEqual(a.mu.errOrder, b.mu.errOrder) || a.mu.malformedExact != b.mu.malformedExact {
			return fmt.Errorf("errors differ")
		}
		return nil
	}()
	a.mu.Unlock()
	b.mu.Unlock()
	if err != nil || !outputs {
		return err
	}
	sa, sb := a.Snapshot(), b.Snapshot()
	if !reflect.DeepEqual(sa, sb) {
		return fmt.Errorf("snapshots differ:\n%+v\n%+v", sa, sb)
	}
	for _, w := range []func(*bytes.Buffer, *Snapshot) error{
		func(b *bytes.Buffer, s *Snapshot) error { return WriteStatsCSV(b, s) },
		func(b *bytes.Buffer, s *Snapshot) error { return WriteFailuresCSV(b, s) },
		func(b *bytes.Buffer, s *Snapshot) error { return Format{}.WriteStatsTable(b, s, true) },
		func(b *bytes.Buffer, s *Snapshot) error { return Format{}.WritePercentileTable(b, s) },
	} {
		var ba, bb bytes.Buffer
		if err := w(&ba, sa); err != nil {
			return err
		}
		if err := w(&bb, sb); err != nil {
			return err
		}
		if !bytes.Equal(ba.Bytes(), bb.Bytes()) {
			return fmt.Errorf("outputs differ:\n%s\n%s", ba.Bytes(), bb.Bytes())
		}
	}
	return nil
}

// sameEntryState compares two entries' state, their hints aside.
func sameEntryState(a, b *mentry) bool {
	ca, cb := *a, *b
	ca.nextHint, cb.nextHint = nil, nil
	return reflect.DeepEqual(ca, cb)
}

// randomStatsPayload is an encoded random report at about second sec, with
// hostile corners: non-canonical, negative and huge bucket keys, counts of
// zero and below, per-second maps spread wider than the master's ring, nil
// methods and last-request times, invalid exact bytes.
func randomStatsPayload(t *testing.T, rng *rand.Rand, sec int64) []byte {
	names := []string{"/a", "/b", "/c", "/d", "/e", "/f"}
	methods := []*string{nil, ptr("GET"), ptr("POST"), ptr("")}
	intMap := func(n int, key func() int64) []protocol.Count {
		m := map[int64]int64{}
		for range n {
			m[key()] = rng.Int64N(40) - 2
		}
		return protocol.Counts(m)
	}
	rtKey := func() int64 {
		switch rng.IntN(6) {
		case 0:
			return rng.Int64N(300000) - 10
		case 1:
			return rng.Int64()
		default:
			return BucketKey(time.Duration(rng.ExpFloat64() * float64(80*time.Millisecond)))
		}
	}
	secKey := func() int64 {
		if rng.IntN(4) == 0 {
			return sec - 40 + rng.Int64N(45)
		}
		return sec - rng.Int64N(4)
	}
	entry := func(name string, method *string) protocol.StatsEntry {
		e := protocol.StatsEntry{Name: name, Method: method, StartTime: float64(sec - 100 + rng.Int64N(100)),
			NumRequests: rng.Int64N(100), NumNoneRequests: rng.Int64N(3), NumFailures: rng.Int64N(5),
			TotalResponseTime: rng.Float64() * 1e4, MaxResponseTime: rng.Float64() * 1e3, TotalContentLength: rng.Int64N(1e6),
			ResponseTimes: intMap(rng.IntN(40), rtKey), NumReqsPerSec: intMap(rng.IntN(12), secKey),
			NumFailPerSec: intMap(rng.IntN(4), secKey)}
		if rng.IntN(5) != 0 {
			e.LastRequestTimestamp = ptr(float64(sec) + rng.Float64())
			e.MinResponseTime = ptr(rng.Float64() * 10)
		}
		if rng.IntN(8) == 0 {
			e.Exact = []byte{0xff, 0x01}
		}
		return e
	}
	r := &protocol.StatsReport{Total: entry("Aggregated", nil), UserCount: -1,
		UserClassesCount: map[string]int64{"U": 1}}
	for _, i := range rng.Perm(len(names))[:rng.IntN(len(names)+1)] {
		r.Stats = append(r.Stats, entry(names[i], methods[rng.IntN(len(methods))]))
	}
	if rng.IntN(3) == 0 {
		r.Errors = map[string]protocol.StatsError{fmt.Sprint("e", rng.IntN(4)): {Name: "/a", Method: "GET", Error: "boom", Occurrences: 1 + rng.Int64N(3)}}
	}
	p, err := protocol.Encode(protocol.Message{Type: protocol.TypeStats, Data: r, NodeID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMergeAnyPairOrder: merging DecodePooled's reports (strictly ascending
// pairs) gives exactly the state and outputs that merging the same reports
// with their pairs in any order, stale repeated keys included, gives (as
// the map holding them), for random reports and for every report captured
// from real Locust workers (whose response_times come in first-seen order,
// with float keys).
func TestMergeAnyPairOrder(t *testing.T) {
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		n := 600
		if testing.Short() {
			n = 150
		}
		const start = 1_796_000_000
		var payloads [][]byte
		for i := range n {
			payloads = append(payloads, randomStatsPayload(t, rng, start+int64(i)))
		}
		mergeTwin(t, newFakeClock(start), payloads, func(i int) float64 { return start + float64(i) + 0.5 })
	})
	t.Run("locust-frames", func(t *testing.T) {
		// The captures are committed beside the protocol package's tests.
		dir := filepath.Join("..", "protocol", "testdata", "locust-frames")
		paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("filepath.Glob(%s/*.jsonl) = %d files, %v; want the committed captures", dir, len(paths), err)
		}
		for _, path := range paths {
			t.Run(filepath.Base(path), func(t *testing.T) {
				payloads, at := capturedStats(t, path)
				if len(payloads) == 0 {
					t.Skip("no stats frames")
				}
				mergeTwin(t, newFakeClock(at[0]), payloads, func(i int) float64 { return at[i] })
			})
		}
	})
}

// capturedStats returns a capture's worker stats payloads and, for each, a
// clock time just after its total's last request (or start time).
func capturedStats(t *testing.T, path string) (payloads [][]byte, at []float64) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var fr struct{ Dir, Hex string }
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			t.Fatal(err)
		}
		p, err := hex.DecodeString(fr.Hex)
		if err != nil || fr.Dir != "W->M" {
			continue
		}
		m, err := protocol.Decode(p)
		if err != nil || m.Type != protocol.TypeStats {
			continue
		}
		tot := m.Data.(*protocol.StatsReport).Total
		when := tot.StartTime
		if tot.LastRequestTimestamp != nil {
			when = *tot.LastRequestTimestamp
		}
		payloads, at = append(payloads, p), append(at, when+0.1)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return payloads, at
}
