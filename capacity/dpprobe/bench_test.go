package dpprobe

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/stack"
)

// BenchmarkKeepAliveTransaction: one TPS transaction per op on 16 held
// connections over the pipe, the server stack polled in the same loop: the
// open loop's bookkeeping (turn, taskEnd), the stack's Wake, the request
// and its response.
func BenchmarkKeepAliveTransaction(b *testing.B) {
	const conns = 16
	a, e, err := pipe.New(pipe.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := stack.New(stack.Config{Mode: stack.Server, Link: e, ClientIP: clientIP, ServerIP: serverIP, PortMin: 10000, PortMax: 60000, IdleTimeout: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	p, err := New(Options{Link: a, ClientIP: clientIP, ServerIP: serverIP, PortMin: 10000, PortMax: 10000 + conns - 1, Conns: conns})
	if err != nil {
		b.Fatal(err)
	}
	s, err := p.newStack(10000, 10000+conns-1, p.heldProgram(), nil)
	if err != nil {
		b.Fatal(err)
	}
	k := &keepAlive{rate: 1e12, n: b.N, idle: make([]uint32, s.Conns()), busy: make([]int64, s.Conns())}
	for i := range k.busy {
		k.busy[i] = -1
	}
	s.SetOnTaskEnd(k.taskEnd)
	now := int64(0)
	poll := func() {
		now += int64(time.Microsecond)
		for range 16 {
			if s.Poll(now)+srv.Poll(now) == 0 {
				return
			}
		}
	}
	for turn := 0; !s.Resolved() || k.warmEnded < conns; turn++ {
		if turn > 100000 {
			b.Fatalf("%d of %d connections answered", k.warmEnded, conns)
		}
		if s.Resolved() && s.Users(0) < conns {
			s.LaunchClass(now, 0, conns)
		}
		poll()
	}
	k.measuring, k.start = true, now
	b.ReportAllocs()
	b.ResetTimer()
	for k.sent < k.n || k.inFlight > 0 {
		k.turn(s, now, time.Hour, time.Hour)
		poll()
	}
	b.StopTimer()
	if k.ok != int64(b.N) {
		b.Fatalf("%d of %d answered", k.ok, b.N)
	}
}
