package stack

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
)

const (
	clientIP = 0x0a000001 // 10.0.0.1
	serverIP = 0x0a000101 // 10.0.1.1
	step     = int64(time.Millisecond)
)

// pair is a client and a server stack joined by a pipe, polled by one
// goroutine on a fake clock that advances one step per turn.
type pair struct {
	c, s   *Stack
	ca, sb *pipe.End
	now    int64
}

func newPair(t testing.TB, cc, sc Config, pc pipe.Config) *pair {
	t.Helper()
	a, b, err := pipe.New(pc)
	if err != nil {
		t.Fatalf("pipe.New = %v", err)
	}
	cc.Mode, cc.Link, sc.Mode, sc.Link = Client, a, Server, b
	for _, c := range []*Config{&cc, &sc} {
		if c.ClientIP == 0 {
			c.ClientIP = clientIP
		}
		if c.ServerIP == 0 {
			c.ServerIP = serverIP
		}
	}
	p := &pair{ca: a, sb: b}
	if p.c, err = New(cc); err != nil {
		t.Fatalf("New(client) = %v", err)
	}
	if p.s, err = New(sc); err != nil {
		t.Fatalf("New(server) = %v", err)
	}
	return p
}

// run polls both stacks until done returns true, at most turns times and
// for at most 30 s of wall time; done may launch connections.
func (p *pair) run(t testing.TB, turns int, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for turn := 0; turn < turns; turn++ {
		p.now += step
		p.poll()
		if done() {
			return
		}
		if turn%1024 == 0 && time.Now().After(deadline) {
			break
		}
	}
	t.Fatalf("not done after %d turns (fake time %v)\nclient %+v\nserver %+v", turns,
		time.Duration(p.now), p.c.Counters(), p.s.Counters())
}

// poll runs both stacks until neither received a frame, at most 16 times:
// one turn of an engine's loop at one clock reading.
func (p *pair) poll() {
	for range 16 {
		if p.c.Poll(p.now)+p.s.Poll(p.now) == 0 {
			return
		}
	}
}

// launcher returns a done function that launches total connections, perTurn
// a turn, and is done when both sides closed closeWant sockets (or, with
// closeWant 0, when cond holds).
func (p *pair) launcher(total, perTurn int, cond func() bool) func() bool {
	opened := 0
	return func() bool {
		if opened < total {
			opened += p.c.Launch(p.now, min(perTurn, total-opened))
		}
		return opened == total && cond()
	}
}

// same reports the first of the named counter pairs that differ.
type want struct {
	name      string
	got, want uint64
}

func check(t testing.TB, side string, ws []want) {
	t.Helper()
	for _, w := range ws {
		if w.got != w.want {
			t.Errorf("%s %s = %d; want %d", side, w.name, w.got, w.want)
		}
	}
}
