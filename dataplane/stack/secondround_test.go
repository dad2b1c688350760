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
// answered; at the end every user taken in is counted once, OK or failed.
func TestSecondRoundAccounting(t *testing.T) {
	const conns = 300
	prog := &Program{Requests: []ProgramRequest{{Raw: get("/login")}, {Raw: get("/a"), Stat: 1}, {Raw: get("/b"), Stat: 2}},
		Classes: []ProgramClass{{OnStart: []int{0}, Wait: Wait{Kind: WaitBetween, Min: time.Millisecond, Max: 20 * time.Millisecond},
			Tasks: []ProgramTask{{Weight: 1, Requests: []int{1, 2}}, {Weight: 1, Requests: []int{2}}}}}}
	for _, seed := range []uint64{1, 2, 3} {
		p := usersPair(t, prog, conns, Config{MaxRetries: 2, RetransmitTimeout: 5 * time.Millisecond, IdleTimeout: 50 * time.Millisecond},
			Config{MaxRetries: 2, RetransmitTimeout: 5 * time.Millisecond}, pipe.Config{Loss: 0.05, Seed: seed})
		rng := seed * 0x9e3779b97f4a7c15
		next := func(n uint64) uint64 { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng % n }
		var taken uint64
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
		t.Logf("seed %d: taken %d, sent %d, ok %d, failed %d (lost %d), requests %d, failed sockets %d", seed, taken,
			c.SecondRoundSent, c.SecondRoundOK, c.SecondRoundFailed, c.SecondRoundLost, c.HTTPRequests, c.SocketsFailed)
		if taken == 0 || c.SecondRoundSent == 0 || c.SecondRoundLost == 0 || c.SecondRoundOK+c.SecondRoundFailed != taken || c.SecondRoundPending != 0 {
			t.Errorf("seed %d: taken %d; sent %d ok %d failed %d lost %d pending %d; want ok + failed = taken, some sent and some lost, none pending",
				seed, taken, c.SecondRoundSent, c.SecondRoundOK, c.SecondRoundFailed, c.SecondRoundLost, c.SecondRoundPending)
		}
	}
}
