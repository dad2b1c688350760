package protocol

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// benchReport builds a realistic worker stats report: n entries, each with
// about 20 response-time buckets and 3 per-second keys, a total with the
// merged buckets, and 4 error rows. It is deterministic.
func benchReport(n int) *StatsReport {
	rng := rand.New(rand.NewPCG(1, 2))
	const now = 1796011105.0
	r := &StatsReport{
		Errors:           map[string]StatsError{},
		UserClassesCount: map[string]int64{"WebUser": 70, "ApiUser": 25, "AdminUser": 5},
		UserCount:        100,
	}
	total := StatsEntry{Name: "Aggregated", Method: sp(""), StartTime: now}
	totRT, totReqs, totFails := map[int64]int64{}, map[int64]int64{}, map[int64]int64{}
	methods := []string{"GET", "GET", "GET", "POST", "PUT"}
	for i := 0; i < n; i++ {
		e := StatsEntry{
			Name:                 "/api/v1/resource/" + strconv.Itoa(i) + "/items",
			Method:               sp(methods[i%len(methods)]),
			LastRequestTimestamp: fp(now + 2.9 + rng.Float64()/10),
			StartTime:            now + rng.Float64()/10,
		}
		rt, reqs, fails := map[int64]int64{}, map[int64]int64{}, map[int64]int64{}
		min, max := 1e9, 0.0
		for b := 0; b < 20; b++ {
			var k int64
			switch {
			case b < 12:
				k = int64(2 + b*7) // < 100 ms: 1 ms buckets
			case b < 18:
				k = int64(100 + (b-12)*130/10*10) // 10 ms buckets
			default:
				k = int64(1000 + (b-18)*1300/100*100) // 100 ms buckets
			}
			c := int64(1 + rng.IntN(40))
			rt[k] += c
			totRT[k] += c
			e.NumRequests += c
			e.TotalResponseTime += float64(k*c) + rng.Float64()
			min, max = minF(min, float64(k)-0.3), maxF(max, float64(k)+0.4)
		}
		e.MinResponseTime, e.MaxResponseTime = fp(min), max
		e.TotalContentLength = e.NumRequests * 512
		for s := int64(0); s < 3; s++ {
			reqs[1796011105+s] = e.NumRequests / 3
			totReqs[1796011105+s] += e.NumRequests / 3
		}
		if i%10 == 0 {
			e.NumFailures = 3
			fails[1796011106] = 3
			totFails[1796011106] += 3
			key := strconv.FormatUint(rng.Uint64(), 16) + strconv.FormatUint(rng.Uint64(), 16)
			r.Errors[key] = StatsError{Name: e.Name, Method: *e.Method,
				Error: "HTTPError('500 Server Error: Internal Server Error for url: " + e.Name + "')", Occurrences: 3}
		}
		total.NumRequests += e.NumRequests
		total.NumFailures += e.NumFailures
		total.TotalResponseTime += e.TotalResponseTime
		total.TotalContentLength += e.TotalContentLength
		total.MaxResponseTime = maxF(total.MaxResponseTime, e.MaxResponseTime)
		if total.MinResponseTime == nil || *total.MinResponseTime > min {
			total.MinResponseTime = fp(min)
		}
		total.LastRequestTimestamp = e.LastRequestTimestamp
		e.ResponseTimes, e.NumReqsPerSec, e.NumFailPerSec = Counts(rt), Counts(reqs), Counts(fails)
		r.Stats = append(r.Stats, e)
	}
	total.ResponseTimes, total.NumReqsPerSec, total.NumFailPerSec = Counts(totRT), Counts(totReqs), Counts(totFails)
	r.Total = total
	return r
}

func minF(a, b float64) float64 {
	if a < b {
		return a
	}
	return b
}

func maxF(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

func benchStatsMessage() Message {
	return Message{Type: TypeStats, Data: benchReport(50), NodeID: "worker-host_0123456789abcdef0123456789abcdef"}
}

// BenchmarkEncodeStats is a worker encoding its 3-second report (50 entries)
// into a reused buffer.
func BenchmarkEncodeStats(b *testing.B) {
	m := benchStatsMessage()
	buf, err := AppendEncode(nil, m)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendEncode(buf[:0], m)
	}
}

// BenchmarkEncodeStatsFresh is Encode, which returns a new slice.
func BenchmarkEncodeStatsFresh(b *testing.B) {
	m := benchStatsMessage()
	buf, _ := Encode(m)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Encode(m)
	}
}

// BenchmarkDecodeStats is the master decoding one worker report.
func BenchmarkDecodeStats(b *testing.B) {
	payload, err := Encode(benchStatsMessage())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	c0 := processCPU()
	for b.Loop() {
		if _, err := Decode(payload); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, c0)
}

// BenchmarkDecodeHeartbeat is the most frequent message at the master.
func BenchmarkDecodeHeartbeat(b *testing.B) {
	payload, _ := Encode(Message{Type: TypeHeartbeat, Data: &Heartbeat{State: "running", CPUUsage: 12.5, MemoryUsage: 56696832},
		NodeID: "worker-host_0123456789abcdef0123456789abcdef"})
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(payload); err != nil {
			b.Fatal(err)
		}
	}
}
