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
