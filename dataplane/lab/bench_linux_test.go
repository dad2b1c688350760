package lab_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// benchOpen is the client's open-connection bound in the benchmarks, like
// wrk's -c.
const benchOpen = 2048

// shortConns runs b.N short connections (SYN, GET, response, FIN) through
// the client stack with at most benchOpen open and reports connections/s.
func shortConns(b *testing.B, s *stack.Stack, w engine.Waiter) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	loop := &engine.Loop{Stack: s, MaxOpen: benchOpen, Total: b.N, Waiter: w,
		Until: func(c *stack.Counters, n int) bool {
			return n == b.N && c.SocketsClosed == uint64(b.N) || c.SocketsFailed > 0
		}}
	b.ResetTimer()
	start := time.Now()
	err := loop.Run(ctx)
	el := time.Since(start)
	b.StopTimer()
	if c := s.Counters(); err != nil || c.SocketsFailed != 0 || c.HTTP2xx != uint64(b.N) {
		b.Fatalf("loop (%v) after %d launches: %+v", err, loop.Launched(), c)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "conn/s")
	b.ReportMetric(0, "ns/op")
}

// allPorts is the client side of the benchmarks: 50,000 ports reused in
// turn.
func allPorts() stack.Config {
	c := labRTO
	c.PortMin, c.PortMax = 10000, 59999
	return c
}

// BenchmarkLabShortConnsStack: client stack to server stack, each over
// AF_PACKET on its veth end, each loop on its own goroutine (on this 2-core
// VM each has one core at most, shared with the kernel's veth work).
func BenchmarkLabShortConnsStack(b *testing.B) {
	r := newStackRun(b, allPorts(), labRTO)
	shortConns(b, r.client, r.clink)
}

// BenchmarkLabShortConnsNginx: client stack over AF_PACKET to nginx (one
// worker process) in the server namespace.
func BenchmarkLabShortConnsNginx(b *testing.B) {
	r := newKernelRun(b, testpeer.NginxConfig{}, allPorts(), false)
	shortConns(b, r.client, r.link)
}

var wrkRate = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// BenchmarkLabShortConnsWrk is the kernel-socket figure on the same nginx:
// wrk (one thread, benchOpen connections, "Connection: close" so that every
// request is a new connection) from a kernel client namespace, for about
// b.N/10,000 seconds.
func BenchmarkLabShortConnsWrk(b *testing.B) {
	r := newKernelRun(b, testpeer.NginxConfig{}, allPorts(), false)
	k, err := r.lab.KernelClient(r.p)
	if err != nil {
		b.Fatalf("KernelClient = %v", err)
	}
	d := max(1, b.N/10000)
	b.ResetTimer()
	out, err := k.Output("wrk", "-t1", "-c"+strconv.Itoa(benchOpen), "-d"+strconv.Itoa(d)+"s",
		"-H", "Connection: close", "http://"+lab.ServerIP+":"+strconv.Itoa(r.nginx.Port)+"/")
	b.StopTimer()
	m := wrkRate.FindStringSubmatch(out)
	if err != nil || m == nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	rate, _ := strconv.ParseFloat(m[1], 64)
	b.ReportMetric(rate, "conn/s")
	b.ReportMetric(0, "ns/op")
}
