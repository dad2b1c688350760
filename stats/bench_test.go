package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// BenchmarkRecord measures Record on an existing entry from one goroutine,
// with time.Now as the clock and with a clock that costs nothing (Record
// reads the clock once; time.Now alone is 50–100 ns on some VMs).
func BenchmarkRecord(b *testing.B) {
	fixed := time.Unix(1e9, 0)
	for _, c := range []struct {
		name string
		now  func() time.Time
	}{{"clock=time.Now", nil}, {"clock=fixed", func() time.Time { return fixed }}} {
		b.Run(c.name, func(b *testing.B) {
			r := NewRecorder(c.now)
			r.Record("GET", "/api/items", 12*time.Millisecond, 512, "")
			b.ReportAllocs()
			var m cpuMeter
			m.start()
			i := 0
			for b.Loop() {
				i++
				r.Record("GET", "/api/items", time.Duration(i%50000)*time.Microsecond, 512, "")
			}
			m.stop(b)
		})
	}
}

// BenchmarkRecordParallel runs Record from 1 and 64 goroutines (b.SetParallelism
// relative to GOMAXPROCS), all on one name (worst case: one entry mutex) or
// spread over 64 names.
func BenchmarkRecordParallel(b *testing.B) {
	for _, goroutines := range []int{1, 64} {
		for _, names := range []int{1, 64} {
			b.Run(fmt.Sprintf("goroutines=%d/names=%d", goroutines, names), func(b *testing.B) {
				r := NewRecorder(nil)
				ns := make([]string, names)
				for i := range ns {
					ns[i] = fmt.Sprintf("/api/item-%d", i)
					r.Record("GET", ns[i], time.Millisecond, 0, "")
				}
				procs := runtime.GOMAXPROCS(0)
				if goroutines == 1 {
					runtime.GOMAXPROCS(1)
					defer runtime.GOMAXPROCS(procs)
				} else {
					b.SetParallelism((goroutines + procs - 1) / procs)
				}
				var id atomic.Int64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					name := ns[int(id.Add(1))%names]
					i := 0
					for pb.Next() {
						i++
						r.Record("GET", name, time.Duration(i%50000)*time.Microsecond, 512, "")
					}
				})
			})
		}
	}
}

// fill records n lognormal samples over 3 s under each of names.
func fill(r *Recorder, clk *fakeClock, names []string, n int, rng *rand.Rand) {
	for i := range n {
		clk.add(3 * time.Second / time.Duration(n))
		for _, name := range names {
			rt := time.Duration(math.Exp(rng.NormFloat64()*0.8+2.5) * 1e6)
			fail := ""
			if i%50 == 0 {
				fail = "HTTPError('500 Server Error')"
			}
			r.Record("GET", name, rt, 1024, fail)
		}
	}
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("/api/v1/resource-%04d", i)
	}
	return out
}

// BenchmarkReport1000 builds one report of 1,000 names, each with 100
// samples over 3 s (the recording is not timed).
func BenchmarkReport1000(b *testing.B) {
	clk := newFakeClock(1e9)
	r := NewRecorder(clk.now)
	ns := names(1000)
	rng := rand.New(rand.NewPCG(1, 1))
	fill(r, clk, ns, 100, rng)
	r.Report(nil, 0)
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu int64
	for b.Loop() {
		b.StopTimer()
		fill(r, clk, ns, 100, rng)
		b.StartTimer()
		t0 := threadCPU()
		r.Report(nil, 0)
		cpu += threadCPU() - t0
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkMerge1000 merges one 1,000-name report (100 samples per name)
// into master statistics.
func BenchmarkMerge1000(b *testing.B) {
	clk := newFakeClock(1e9)
	r := NewRecorder(clk.now)
	ns := names(1000)
	rng := rand.New(rand.NewPCG(2, 2))
	var reps []*protocol.StatsReport
	for range 8 {
		fill(r, clk, ns, 100, rng)
		reps = append(reps, r.Report(nil, 0))
	}
	s := New(clk.now)
	b.ReportAllocs()
	var m cpuMeter
	m.start()
	i := 0
	for b.Loop() {
		s.Merge(reps[i%len(reps)])
		i++
	}
	m.stop(b)
}

// BenchmarkSnapshot1000 takes a snapshot of master statistics with 1,000
// names and writes the stats CSV from it.
func BenchmarkSnapshot1000(b *testing.B) {
	clk := newFakeClock(1e9)
	r := NewRecorder(clk.now)
	ns := names(1000)
	rng := rand.New(rand.NewPCG(3, 3))
	s := New(clk.now)
	for range 8 {
		fill(r, clk, ns, 100, rng)
		s.Merge(r.Report(nil, 0))
	}
	b.ReportAllocs()
	var m cpuMeter
	m.start()
	for b.Loop() {
		snap := s.Snapshot()
		if err := WriteStatsCSV(discard{}, snap); err != nil {
			b.Fatal(err)
		}
	}
	m.stop(b)
}

// cpuMeter reports the benchmark's own thread CPU time per op as
// "cpu-ns/op" (see threadCPU); call start before the loop and stop after.
type cpuMeter struct{ t0 int64 }

func (m *cpuMeter) start() {
	runtime.LockOSThread()
	m.t0 = threadCPU()
}

func (m *cpuMeter) stop(b *testing.B) {
	if t := threadCPU() - m.t0; t > 0 && b.N > 0 {
		b.ReportMetric(float64(t)/float64(b.N), "cpu-ns/op")
	}
	runtime.UnlockOSThread()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkEntryMemory reports the heap held per entry by a Recorder and by
// master Stats (including its 20 cached per-second snapshots) for 1,000
// names that each saw 30 s of lognormal traffic (2–100 ms).
func BenchmarkEntryMemory(b *testing.B) {
	for b.Loop() {
		clk := newFakeClock(1e9)
		ns := names(1000)
		rng := rand.New(rand.NewPCG(4, 4))
		before := heapInUse()
		r := NewRecorder(clk.now)
		fill(r, clk, ns, 100, rng)
		worker := heapInUse() - before
		s := New(clk.now)
		before = heapInUse()
		for range 10 {
			s.Merge(r.Report(nil, 0))
			fill(r, clk, ns, 100, rng)
		}
		master := heapInUse() - before
		b.ReportMetric(float64(worker)/1000, "worker-B/entry")
		b.ReportMetric(float64(master)/1000, "master-B/entry")
		runtime.KeepAlive(r)
		runtime.KeepAlive(s)
	}
}

// workerReport20 is the report of bench/master's simulated workers: 20
// names with 10 samples each (one failure every fifth name), encoded.
func workerReport20(b *testing.B, clk *fakeClock) []byte {
	r := NewRecorder(clk.now)
	for i := range 20 {
		name := fmt.Sprintf("/api/endpoint/%d", i)
		for k := range 10 {
			r.Record("GET", name, time.Duration(2+k*3)*time.Millisecond, 512, "")
		}
		if i%5 == 0 {
			r.Record("GET", name, 40*time.Millisecond, 0, "HTTPError('500 Server Error')")
		}
	}
	rep := r.Report(map[string]int64{"WebUser": 1, "ApiUser": 0}, 1)
	payload, err := protocol.Encode(protocol.Message{Type: protocol.TypeStats, Data: rep, NodeID: "benchhost_0123456789abcdef0123456789abcdef"})
	if err != nil {
		b.Fatal(err)
	}
	return payload
}

// BenchmarkMergeWorker20 merges one decoded 20-name worker report (the
// master's per-report cost at bench/master's load, decoding excluded),
// decoded as the master decodes it (DecodePooled: stats maps as pairs).
func BenchmarkMergeWorker20(b *testing.B) {
	benchMergeWorker20(b, protocol.DecodePooled)
}

func benchMergeWorker20(b *testing.B, decode func([]byte) (protocol.Message, error)) {
	clk := newFakeClock(1e9)
	m, err := decode(workerReport20(b, clk))
	if err != nil {
		b.Fatal(err)
	}
	rep := m.Data.(*protocol.StatsReport)
	s := New(clk.now)
	b.ReportAllocs()
	var cm cpuMeter
	cm.start()
	for b.Loop() {
		clk.add(time.Millisecond)
		s.Merge(rep)
	}
	cm.stop(b)
}

// BenchmarkDecodeMergeWorker20 is the master's whole per-report cost:
// Decode, then Merge.
func BenchmarkDecodeMergeWorker20(b *testing.B) {
	clk := newFakeClock(1e9)
	payload := workerReport20(b, clk)
	s := New(clk.now)
	b.ReportAllocs()
	for b.Loop() {
		clk.add(time.Millisecond)
		m, err := protocol.Decode(payload)
		if err != nil {
			b.Fatal(err)
		}
		s.Merge(m.Data.(*protocol.StatsReport))
	}
}

// BenchmarkDecodePooledMergeWorker20 is BenchmarkDecodeMergeWorker20 as the
// master does it: DecodePooled, Merge, Release.
func BenchmarkDecodePooledMergeWorker20(b *testing.B) {
	clk := newFakeClock(1e9)
	payload := workerReport20(b, clk)
	s := New(clk.now)
	b.ReportAllocs()
	var cm cpuMeter
	cm.start()
	for b.Loop() {
		clk.add(time.Millisecond)
		m, err := protocol.DecodePooled(payload)
		if err != nil {
			b.Fatal(err)
		}
		r := m.Data.(*protocol.StatsReport)
		s.Merge(r)
		r.Release()
	}
	cm.stop(b)
}

// manyWorkerReports returns n reports shaped like workerReport20's, decoded
// as the master decodes them (DecodePooled, never released), one per
// simulated worker, each in its own memory: per-worker sample values, and
// names in a per-worker order (a worker lists its entries in the order it
// first recorded them).
func manyWorkerReports(b testing.TB, n int) []*protocol.StatsReport {
	b.Helper()
	const variants = 64
	payloads := make([][]byte, variants)
	for v := range payloads {
		clk := newFakeClock(1e9)
		r := NewRecorder(clk.now)
		rng := rand.New(rand.NewPCG(uint64(v), 7))
		for j := range 20 {
			i := (j + v) % 20
			name := fmt.Sprintf("/api/endpoint/%d", i)
			for range 10 {
				r.Record("GET", name, time.Duration(math.Exp(rng.NormFloat64()*0.6+2.3)*1e6), 512, "")
			}
			if i%5 == 0 {
				r.Record("GET", name, 40*time.Millisecond, 0, "HTTPError('500 Server Error')")
			}
		}
		rep := r.Report(map[string]int64{"WebUser": 1, "ApiUser": 0}, 1)
		p, err := protocol.Encode(protocol.Message{Type: protocol.TypeStats, Data: rep, NodeID: fmt.Sprintf("benchhost_%032d", v)})
		if err != nil {
			b.Fatal(err)
		}
		payloads[v] = p
	}
	reps := make([]*protocol.StatsReport, n)
	for i := range reps {
		m, err := protocol.DecodePooled(payloads[i%variants])
		if err != nil {
			b.Fatal(err)
		}
		reps[i] = m.Data.(*protocol.StatsReport)
	}
	return reps
}

// BenchmarkMergeManyWorkers merges the reports of 4,000 simulated workers
// round-robin, each from its own memory, as a master under bench/master's
// load does (every 3 s per worker): unlike BenchmarkMergeWorker20 the
// reports are not in the CPU caches. Before every round (untimed) each
// report is re-dated to its worker's send time in that round (last request,
// per-second counts, error times), so that the master's per-second state
// and cached histograms advance at the real rate; cpu-ns/op counts the
// timed part only.
func BenchmarkMergeManyWorkers(b *testing.B) {
	const workers = 4000
	clk := newFakeClock(1e9)
	reps := manyWorkerReports(b, workers)
	s := New(clk.now)
	round := 0
	sendTime := func(w int) float64 { return 1e9 + 3*float64(round) + 3*float64(w)/workers }
	redate := func() {
		round++
		for w, r := range reps {
			redateReport(r, sendTime(w))
		}
	}
	for w, r := range reps {
		clk.set(sendTime(w))
		s.Merge(r)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	var cpu int64
	b.ResetTimer()
	t0 := threadCPU()
	for i := range b.N {
		w := i % workers
		if w == 0 {
			cpu += threadCPU() - t0
			b.StopTimer()
			redate()
			b.StartTimer()
			t0 = threadCPU()
		}
		clk.set(sendTime(w))
		s.Merge(reps[w])
	}
	cpu += threadCPU() - t0
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// redateReport moves a report of bench workers (all of whose requests fell
// in one second) to time t.
func redateReport(r *protocol.StatsReport, t float64) {
	sec := int64(t)
	movePairs := func(c []protocol.Count) []protocol.Count {
		var n int64
		for _, p := range c {
			n += p.N
		}
		if n == 0 {
			return nil
		}
		return append(c[:0], protocol.Count{Key: sec, N: n})
	}
	for i := range len(r.Stats) + 1 {
		e := &r.Total
		if i < len(r.Stats) {
			e = &r.Stats[i]
		}
		if e.LastRequestTimestamp != nil {
			*e.LastRequestTimestamp = t
		}
		e.NumReqsPerSec = movePairs(e.NumReqsPerSec)
		e.NumFailPerSec = movePairs(e.NumFailPerSec)
	}
	for k, er := range r.Errors {
		if er.FirstSeen != nil {
			*er.FirstSeen = t
		}
		if er.LastSeen != nil {
			*er.LastSeen = t
		}
		r.Errors[k] = er
	}
}

// BenchmarkExactAddEncoded merges an encoded exact histogram of 10 and of
// 1,000 lognormal samples (2–100 ms) into a master-side histogram.
func BenchmarkExactAddEncoded(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("samples=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(5, 5))
			var src exactHist
			for range n {
				src.record(uint64(math.Exp(rng.NormFloat64()*0.8+2.5) * 1e3))
			}
			enc := src.appendEncoded(nil)
			var h exactHist
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if err := h.addEncoded(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// hugeReport is one stats message of n minimal entries (name, method,
// start_time: what Locust's master requires), built directly as msgpack:
// 1,000,000 entries make about 46 MB, within the 64 MiB frame limit.
func hugeReport(n int) []byte {
	b := []byte{0x93, 0xa5, 's', 't', 'a', 't', 's', 0x84, 0xa5, 's', 't', 'a', 't', 's', 0xdd,
		byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	entry := func(name string) {
		b = append(b, 0x83, 0xa4, 'n', 'a', 'm', 'e', 0xa0|byte(len(name)))
		b = append(b, name...)
		b = append(b, 0xa6, 'm', 'e', 't', 'h', 'o', 'd', 0xa3, 'G', 'E', 'T')
		b = append(b, 0xaa, 's', 't', 'a', 'r', 't', '_', 't', 'i', 'm', 'e', 0xcb, 0x41, 0xd9, 0, 0, 0, 0, 0, 0)
	}
	for i := range n {
		entry(fmt.Sprintf("/n%07d", i))
	}
	b = append(b, 0xab, 's', 't', 'a', 't', 's', '_', 't', 'o', 't', 'a', 'l')
	entry("Aggregated")
	b = append(b, 0xa6, 'e', 'r', 'r', 'o', 'r', 's', 0x80)
	b = append(b, 0xb2, 'u', 's', 'e', 'r', '_', 'c', 'l', 'a', 's', 's', 'e', 's', '_', 'c', 'o', 'u', 'n', 't', 0x80)
	return append(b, 0xa1, 'w')
}

// BenchmarkHugeReport is the master's receive path (DecodePooled, Merge,
// Release) for one report of many minimal entries, as a hostile worker
// sends it: it reports the heap the Stats keep afterwards (heap-MB), the
// memory the process took from the OS meanwhile (sys-MB, about its peak
// RSS growth; meaningful in a process of its own: -bench
// 'HugeReport/entries=1000000$' -benchtime 1x), the entries kept and
// whether the report was refused at decode.
func BenchmarkHugeReport(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			payload := hugeReport(n)
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				sys0, heap0 := ms.Sys, ms.HeapAlloc
				s := New(nil)
				refused := 0.0
				m, err := protocol.DecodePooled(payload)
				if err != nil {
					refused = 1
				} else {
					r := m.Data.(*protocol.StatsReport)
					s.Merge(r)
					r.Release()
				}
				runtime.GC()
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapAlloc-min(heap0, ms.HeapAlloc))/(1<<20), "heap-MB")
				b.ReportMetric(float64(ms.Sys-sys0)/(1<<20), "sys-MB")
				b.ReportMetric(float64(len(s.Snapshot().Entries)), "entries")
				b.ReportMetric(refused, "refused")
				runtime.KeepAlive(s)
			}
		})
	}
}
