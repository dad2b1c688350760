package stack

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
)

// heldClass is a user class of one task of request 0 and an hour's wait:
// users that only work when woken.
func heldClass() *Program {
	return oneClass(ProgramClass{Wait: Wait{Kind: WaitConstant, Min: time.Hour}, Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}})
}

// ended collects SetOnTaskEnd's calls.
type ended struct {
	recs []uint32
	ok   int
}

func (e *ended) hook(rec uint32, _ int64, ok bool) {
	e.recs = append(e.recs, rec)
	if ok {
		e.ok++
	}
}

func TestWake(t *testing.T) {
	const users = 20
	tests := []struct {
		name string
		prog *Program
		sc   Config
		// idle: turns to run between the first round and the wakes.
		idle           int
		wantOK         int // task ends ok after the wakes (of 2*users)
		wantReconnects uint64
		wantHTTPFailed bool
	}{
		{name: "held connections", prog: heldClass(), wantOK: 2 * users},
		{name: "the server closed them while idle", prog: heldClass(), sc: Config{IdleTimeout: 20 * time.Millisecond}, idle: 100, wantOK: 2 * users, wantReconnects: users},
		{name: "status not accepted", prog: &Program{Requests: []ProgramRequest{{Raw: BuildRequest("POST", "/", "10.0.1.1", nil)}},
			Classes: heldClass().Classes}, wantOK: 0, wantHTTPFailed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.sc.IdleTimeout == 0 {
				tt.sc.IdleTimeout = time.Hour
			}
			p := usersPair(t, tt.prog, users, Config{}, tt.sc, pipe.Config{})
			var e ended
			p.c.SetOnTaskEnd(e.hook)
			p.run(t, 1000, p.launcherClass(0, users, users, func() bool { return len(e.recs) == users }))
			for range tt.idle {
				p.now += step
				p.poll()
			}
			if p.c.Wake(p.now, uint32(users)) || p.c.Wake(p.now, ^uint32(0)) {
				t.Fatal("Wake of a record outside the table = true")
			}
			first := e.recs
			e.recs = nil
			for _, rec := range first {
				if !p.c.Wake(p.now, rec) {
					t.Fatalf("Wake(%d) of an idle user = false", rec)
				}
				if p.c.Wake(p.now, rec) {
					t.Fatalf("Wake(%d) of a user just woken = true", rec)
				}
			}
			p.run(t, 1000, func() bool { return len(e.recs) == users })
			if e.ok != tt.wantOK {
				t.Errorf("ok task ends %d; want %d", e.ok, tt.wantOK)
			}
			c := p.c.Counters()
			if c.Reconnects != tt.wantReconnects || c.HTTPRequests != 2*users || (c.HTTPOther > 0) != tt.wantHTTPFailed {
				t.Errorf("counters %+v; want %d reconnects, %d requests", c, tt.wantReconnects, 2*users)
			}
			// Stopped users are not woken.
			if n := p.c.StopClass(p.now, 0, users); n != users {
				t.Fatalf("StopClass = %d", n)
			}
			for _, rec := range e.recs {
				if p.c.Wake(p.now, rec) {
					t.Fatalf("Wake(%d) of a stopped user = true", rec)
				}
			}
		})
	}
}

// A connection still closing when woken reconnects once it has closed.
func TestWakeWhileClosing(t *testing.T) {
	p := usersPair(t, heldClass(), 1, Config{}, Config{IdleTimeout: time.Hour}, pipe.Config{})
	var e ended
	p.c.SetOnTaskEnd(e.hook)
	p.run(t, 100, p.launcherClass(0, 1, 1, func() bool { return len(e.recs) == 1 }))
	c := &p.c.conns[e.recs[0]]
	p.c.now = p.now
	p.c.disarm(e.recs[0])
	p.c.sendFin(e.recs[0], p.now) // as after a Connection: close response
	if !p.c.Wake(p.now, e.recs[0]) {
		t.Fatal("Wake of a closing user = false")
	}
	if c.state == stClosed || c.flags&fAwait != 0 {
		t.Fatalf("state %d flags %b: woken before its connection closed", c.state, c.flags)
	}
	p.run(t, 200, func() bool { return len(e.recs) == 2 })
	if got := p.c.Counters(); got.Reconnects != 1 || got.HTTP2xx != 2 {
		t.Fatalf("counters %+v; want 1 reconnect, 2 responses", got)
	}
}

func TestWakeWithoutProgram(t *testing.T) {
	p := newPair(t, Config{Hold: true, PortMin: 10000, PortMax: 10000}, Config{PortMin: 10000, PortMax: 10000}, pipe.Config{})
	p.run(t, 100, p.launcher(1, 1, func() bool { return p.c.Counters().HTTP2xx == 1 }))
	if p.c.Wake(p.now, 0) {
		t.Fatal("Wake without a Program = true")
	}
}

// BenchmarkWake: one wake of a held user, its request and response over
// the pipe, and the task-end callback, per op.
func BenchmarkWake(b *testing.B) {
	const users = 64
	p := usersPair(b, heldClass(), users, Config{}, Config{IdleTimeout: time.Hour}, pipe.Config{})
	idle := make([]uint32, 0, users)
	p.c.SetOnTaskEnd(func(rec uint32, _ int64, _ bool) { idle = append(idle, rec) })
	p.run(b, 1000, p.launcherClass(0, users, users, func() bool { return len(idle) == users }))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := idle[0]
		idle = append(idle[:0], idle[1:]...)
		if !p.c.Wake(p.now, rec) {
			b.Fatalf("Wake(%d) = false", rec)
		}
		p.drain(b)
		p.now += step
	}
	b.StopTimer()
	if len(idle) != users {
		b.Fatalf("%d idle users; want %d", len(idle), users)
	}
}
