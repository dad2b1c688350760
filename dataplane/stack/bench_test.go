package stack

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
)

// dperfConnsPerCore is dperf's published figure: new connections per
// second per core.
const dperfConnsPerCore = 2_000_000

func resolvedPair(b *testing.B, cc, sc Config) *pair {
	p := newPair(b, cc, sc, pipe.Config{Frames: 8192})
	p.run(b, 100, func() bool { return p.c.Resolved() })
	return p
}

func reportCommon(b *testing.B) {
	b.ReportMetric(dperfConnsPerCore, "dperf-conn/s/core")
	b.ReportMetric(float64(unsafe.Sizeof(conn{})), "B/record")
}

// BenchmarkCeilingShortConns: the stack's own ceiling over the pipe, client
// and server polled by one goroutine (so one core runs both sides): short
// connections (SYN, GET, 128-byte page, FIN), one per op.
func BenchmarkCeilingShortConns(b *testing.B) {
	p := resolvedPair(b, Config{PortMin: 10000, PortMax: 59999}, Config{PortMin: 10000, PortMax: 59999})
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := uint64(b.N)
	launched := uint64(0)
	for turn := 0; p.c.ctr.SocketsClosed < n || p.s.ctr.SocketsClosed < n; turn++ {
		if turn > 100*b.N+1000 {
			b.Fatalf("stuck: client %+v", p.c.Counters())
		}
		p.now += step
		if launched < n {
			launched += uint64(p.c.Launch(p.now, int(min(32, n-launched))))
		}
		p.poll()
	}
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(n)/el, "conn/s")
	b.ReportMetric(float64(p.c.ctr.HTTP2xx)/el, "req/s")
	reportCommon(b)
	if p.c.ctr.SocketsFailed != 0 || p.c.ctr.HTTP2xx != n {
		b.Errorf("failed %d, 2xx %d; want 0, %d", p.c.ctr.SocketsFailed, p.c.ctr.HTTP2xx, n)
	}
}

// BenchmarkCeilingRequests: requests on 1,000 held keep-alive connections,
// one request per op.
func BenchmarkCeilingRequests(b *testing.B) {
	const conns = 1000
	p := resolvedPair(b, Config{PortMin: 10000, PortMax: 10000 + conns - 1, RequestsPerConn: 65535, Hold: true},
		Config{PortMin: 10000, PortMax: 10000 + conns - 1})
	p.c.Launch(p.now, conns)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := uint64(b.N)
	for turn := 0; p.c.ctr.HTTP2xx < n; turn++ {
		if turn > 100*b.N+1000 {
			b.Fatalf("stuck: client %+v", p.c.Counters())
		}
		p.now += step
		p.poll()
	}
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(p.c.ctr.HTTP2xx)/el, "req/s")
	reportCommon(b)
}

// BenchmarkGCWithTable: a full garbage collection with a 1,000,000-record
// table live (100 client IPs x 10,000 ports), one per op; the table holds
// no pointers, so the collector does not scan it.
func BenchmarkGCWithTable(b *testing.B) {
	a, _, _ := pipe.New(pipe.Config{Frames: 64})
	s, err := New(Config{Mode: Client, Link: a, ClientIP: clientIP, ClientIPs: 100, PortMin: 10000, PortMax: 19999, ServerIP: 0x0b000001})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
	}
	b.ReportMetric(float64(s.Conns()), "records")
	b.ReportMetric(float64(uint64(s.Conns())*uint64(unsafe.Sizeof(conn{})))/(1<<20), "table-MiB")
	runtime.KeepAlive(s)
}
