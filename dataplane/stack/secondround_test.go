package stack

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
)

// BenchmarkSecondRound: one second round of 10,000 held users waiting
// 900 s, answered over the pipe (requests out, responses in, counted),
// one round per op; ns/user is the cost per user of the walk, the
// request and its response.
func BenchmarkSecondRound(b *testing.B) {
	const users = 10000
	prog := oneClass(ProgramClass{Wait: Wait{Kind: WaitConstant, Min: 900 * time.Second},
		Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}})
	p := usersPair(b, prog, users, Config{}, Config{IdleTimeout: time.Hour}, pipe.Config{Frames: 32768})
	p.run(b, 1000, p.launcherClass(0, users, 1024, func() bool { return p.c.Counters().HTTP2xx == users }))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if got := p.c.SecondRound(p.now); got != users {
			b.Fatalf("SecondRound = %d; want %d", got, users)
		}
		p.drain(b)
	}
	b.StopTimer()
	if c := p.c.Counters(); c.SecondRoundOK != c.SecondRoundSent || c.SecondRoundSent != uint64(b.N)*users {
		b.Fatalf("sent %d, OK %d; want %d each", c.SecondRoundSent, c.SecondRoundOK, uint64(b.N)*users)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*users), "ns/user")
}

// TestSecondRoundAccounting: users cycling through short tasks over a
// lossy pipe (some connects and requests fail), launched, stopped and
// asked for rounds at random turns: after every turn the pending gauge
// equals the marked records and the requests in flight equal sent minus
// answered, within the window (the default, and 2 so that users queue
// while others stop, fail and close); at the end every user taken in is
// counted once, OK or failed.
func TestSecondRoundAccounting(t *testing.T) {
	const conns = 300
	prog := &Program{Requests: []ProgramRequest{{Raw: get("/login")}, {Raw: get("/a"), Stat: 1}, {Raw: get("/b"), Stat: 2}},
		Classes: []ProgramClass{{OnStart: []int{0}, Wait: Wait{Kind: WaitBetween, Min: time.Millisecond, Max: 20 * time.Millisecond},
			Tasks: []ProgramTask{{Weight: 1, Requests: []int{1, 2}}, {Weight: 1, Requests: []int{2}}}}}}
	for _, run := range []struct{ seed, window uint64 }{{1, 0}, {2, 0}, {3, 0}, {1, 2}, {2, 2}, {3, 2}} {
		seed, window := run.seed, run.window
		p := usersPair(t, prog, conns, Config{SecondRoundWindow: int(window), MaxRetries: 2, RetransmitTimeout: 5 * time.Millisecond, IdleTimeout: 50 * time.Millisecond},
			Config{MaxRetries: 2, RetransmitTimeout: 5 * time.Millisecond}, pipe.Config{Loss: 0.05, Seed: seed})
		rng := seed * 0x9e3779b97f4a7c15
		next := func(n uint64) uint64 { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng % n }
		var taken uint64
		maxQueued := 0
		invariants := func(turn int) {
			var marked, inflight uint64
			for i := range p.c.conns {
				f := p.c.conns[i].uflags
				if f&uRound != 0 {
					marked++
				}
				if f&uSecond != 0 {
					inflight++
				}
			}
			c := p.c.Counters()
			queued := roundQueue(t, p.c)
			maxQueued = max(maxQueued, queued)
			if uint64(queued) > marked || uint64(p.c.roundInFlight) != inflight ||
				window != 0 && inflight > window {
				t.Fatalf("seed %d window %d turn %d: %d queued, %d marked, %d in flight (stack counts %d)",
					seed, window, turn, queued, marked, inflight, p.c.roundInFlight)
			}
			if c.SecondRoundPending != marked || c.SecondRoundSent-c.SecondRoundOK-(c.SecondRoundFailed-c.SecondRoundLost) != inflight {
				t.Fatalf("seed %d turn %d: pending %d, marked %d; sent %d ok %d failed %d lost %d, in flight %d",
					seed, turn, c.SecondRoundPending, marked, c.SecondRoundSent, c.SecondRoundOK, c.SecondRoundFailed, c.SecondRoundLost, inflight)
			}
		}
		for turn := range 3000 {
			p.now += step
			switch next(16) {
			case 0:
				p.c.LaunchClass(p.now, 0, int(next(64)))
			case 1:
				taken += uint64(p.c.SecondRound(p.now))
			case 2:
				p.c.StopClass(p.now, 0, int(next(16)))
			}
			p.poll()
			invariants(turn)
		}
		p.c.StopClass(p.now, 0, conns)
		p.run(t, 20000, func() bool { return p.c.Counters().SocketsCurrent == 0 })
		invariants(-1)
		c := p.c.Counters()
		t.Logf("seed %d window %d: taken %d, sent %d, ok %d, failed %d (lost %d), requests %d, failed sockets %d", seed, window, taken,
			c.SecondRoundSent, c.SecondRoundOK, c.SecondRoundFailed, c.SecondRoundLost, c.HTTPRequests, c.SocketsFailed)
		if taken == 0 || c.SecondRoundSent == 0 || c.SecondRoundLost == 0 || c.SecondRoundOK+c.SecondRoundFailed != taken || c.SecondRoundPending != 0 {
			t.Errorf("seed %d window %d: taken %d; sent %d ok %d failed %d lost %d pending %d; want ok + failed = taken, some sent and some lost, none pending",
				seed, window, taken, c.SecondRoundSent, c.SecondRoundOK, c.SecondRoundFailed, c.SecondRoundLost, c.SecondRoundPending)
		}
		if window != 0 && maxQueued == 0 {
			t.Errorf("seed %d window %d: no user ever queued", seed, window)
		}
	}
}

// roundQueue checks the second round's queue of s: linked both ways, every
// queued record marked; it returns its length.
func roundQueue(t *testing.T, s *Stack) int {
	t.Helper()
	n, prev := 0, uint32(0)
	for q := s.rqHead; q != 0; q = s.conns[q-1].qnext {
		c := &s.conns[q-1]
		if c.qprev != prev || c.uflags&uRound == 0 || c.uflags&uSecond != 0 {
			t.Fatalf("queued record %d: qprev %d (want %d), uflags %#x", q-1, c.qprev, prev, c.uflags)
		}
		if n++; n > len(s.conns) {
			t.Fatalf("the round's queue loops")
		}
		prev = q
	}
	if s.rqTail != prev {
		t.Fatalf("queue tail %d; want %d", s.rqTail, prev)
	}
	return n
}

// TestSecondRoundWindow: a round of held users over the pipe, its
// requests bounded by Config.SecondRoundWindow: after every turn the
// requests in flight never exceed the window (and reach it when users
// outnumber it), the queue holds the rest, and every user finishes exactly
// once, without a new SYN; with loss, OK + failed still equals the users.
func TestSecondRoundWindow(t *testing.T) {
	const users = 600
	prog := oneClass(ProgramClass{Wait: Wait{Kind: WaitConstant, Min: 900 * time.Second},
		Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}})
	tests := []struct {
		name   string
		window int
		loss   float64
	}{
		{"window 1", 1, 0},
		{"window 7", 7, 0},
		{"window 64", 64, 0},
		{"default window", 0, 0},
		{"window 1 with loss", 1, 0.05},
		{"window 32 with loss", 32, 0.05},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := Config{SecondRoundWindow: tt.window, MaxRetries: 8, RetransmitTimeout: 5 * time.Millisecond, MaxRetransmitTimeout: 20 * time.Millisecond}
			p := usersPair(t, prog, users, cc, Config{IdleTimeout: time.Hour, MaxRetries: 8, RetransmitTimeout: 5 * time.Millisecond}, pipe.Config{Loss: tt.loss, Seed: 7})
			p.run(t, 20000, p.launcherClass(0, users, 64, func() bool { return p.c.Counters().HTTP2xx == users }))
			window := tt.window
			if window == 0 {
				window = DefaultSecondRoundWindow
			}
			before := p.c.Counters()
			taken := p.c.SecondRound(p.now)
			if taken != users {
				t.Fatalf("SecondRound = %d; want %d", taken, users)
			}
			peak := 0
			check := func() {
				var inflight int
				for i := range p.c.conns {
					if p.c.conns[i].uflags&uSecond != 0 {
						inflight++
					}
				}
				queued := roundQueue(t, p.c)
				c := p.c.Counters()
				if inflight != p.c.roundInFlight || inflight > window {
					t.Fatalf("%d requests in flight (stack counts %d); window %d", inflight, p.c.roundInFlight, window)
				}
				if uint64(queued) > c.SecondRoundPending {
					t.Fatalf("%d queued, %d pending", queued, c.SecondRoundPending)
				}
				if queued > 0 && inflight == 0 {
					t.Fatalf("%d queued with no request in flight", queued)
				}
				peak = max(peak, inflight)
			}
			check()
			p.run(t, 200000, func() bool {
				check()
				c := p.c.Counters()
				return c.SecondRoundOK+c.SecondRoundFailed-before.SecondRoundOK-before.SecondRoundFailed == users
			})
			c := p.c.Counters()
			if want := min(window, users); peak != want {
				t.Errorf("peak in flight %d; want %d", peak, want)
			}
			if c.SecondRoundPending != 0 || p.c.roundInFlight != 0 || p.c.rqHead != 0 || p.c.rqTail != 0 {
				t.Errorf("after the round: pending %d, in flight %d, queue %d..%d; want none", c.SecondRoundPending, p.c.roundInFlight, p.c.rqHead, p.c.rqTail)
			}
			if tt.loss == 0 && (c.SecondRoundOK-before.SecondRoundOK != users || c.SecondRoundSent-before.SecondRoundSent != users) {
				t.Errorf("sent %d, OK %d; want %d each", c.SecondRoundSent-before.SecondRoundSent, c.SecondRoundOK-before.SecondRoundOK, users)
			}
			if c.SynOut != before.SynOut && tt.loss == 0 {
				t.Errorf("SynOut %d -> %d; the round opened connections", before.SynOut, c.SynOut)
			}
			t.Logf("sent %d OK %d failed %d lost %d, peak in flight %d, retransmissions %d", c.SecondRoundSent-before.SecondRoundSent,
				c.SecondRoundOK-before.SecondRoundOK, c.SecondRoundFailed-before.SecondRoundFailed, c.SecondRoundLost-before.SecondRoundLost, peak, c.RetransData-before.RetransData)
		})
	}
}

// TestSecondRoundWindowSparesRings: 3,000 held users over a pipe of 512
// frames a direction. One round with a window above the users sends every
// request in one call and overflows the pipe (refused or unbuffered frames,
// retransmissions); with a window of 128 no frame is lost or resent.
func TestSecondRoundWindowSparesRings(t *testing.T) {
	const users = 3000
	prog := oneClass(ProgramClass{Wait: Wait{Kind: WaitConstant, Min: 900 * time.Second},
		Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}})
	for _, tt := range []struct {
		window int
		drops  bool
	}{{128, false}, {users, true}} {
		p := usersPair(t, prog, users, Config{SecondRoundWindow: tt.window, MaxRetries: 10, RetransmitTimeout: 5 * time.Millisecond, MaxRetransmitTimeout: 20 * time.Millisecond},
			Config{IdleTimeout: time.Hour}, pipe.Config{Frames: 512})
		p.run(t, 20000, p.launcherClass(0, users, 64, func() bool { return p.c.Counters().HTTP2xx == users }))
		before, sBefore := p.c.Counters(), p.s.Counters()
		p.c.SecondRound(p.now)
		p.run(t, 200000, func() bool {
			c := p.c.Counters()
			return c.SecondRoundOK+c.SecondRoundFailed == users
		})
		c, s := p.c.Counters(), p.s.Counters()
		lost := c.DropNoTxBuffer + c.DropTxRefused + s.DropNoTxBuffer + s.DropTxRefused - before.DropNoTxBuffer - before.DropTxRefused - sBefore.DropNoTxBuffer - sBefore.DropTxRefused
		resent := c.RetransData + c.FastRetransmit + s.RetransData + s.FastRetransmit - before.RetransData - before.FastRetransmit - sBefore.RetransData - sBefore.FastRetransmit
		t.Logf("window %d: OK %d failed %d, frames dropped %d, retransmissions %d", tt.window, c.SecondRoundOK, c.SecondRoundFailed, lost, resent)
		if got := lost+resent > 0; got != tt.drops {
			t.Errorf("window %d: %d frames dropped, %d retransmissions; want drops %v", tt.window, lost, resent, tt.drops)
		}
		if !tt.drops && c.SecondRoundOK != users {
			t.Errorf("window %d: OK %d; want %d", tt.window, c.SecondRoundOK, users)
		}
	}
}

// roundProgram is a Program that compiles: one class, one task of one GET.
func roundProgram() *Program {
	return oneClass(ProgramClass{Wait: Wait{Kind: WaitConstant, Min: time.Second}, Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}})
}
