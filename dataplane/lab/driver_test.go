package lab_test

import (
	"context"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/stack"
)

func TestDriverWindowAndOneClockAcrossRuns(t *testing.T) {
	a, b, err := pipe.New(pipe.Config{Delay: 3})
	if err != nil {
		t.Fatal(err)
	}
	base := stack.Config{ClientIP: 0x0a000001, ServerIP: 0x0a000101, PortMin: 10000, PortMax: 10999}
	cc, sc := base, base
	cc.Mode, cc.Link, cc.Hold, sc.Mode, sc.Link = stack.Client, a, true, stack.Server, b
	client, err := stack.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	server, err := stack.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srvCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = (&engine.Loop{Stack: server}).Run(srvCtx); close(done) }()
	defer func() { stop(); <-done }()

	d := &lab.Driver{Stack: client}
	var last int64
	for _, tc := range []struct {
		total, window int
	}{{200, 10}, {500, 37}, {600, 1}} {
		d.Window = tc.window
		worst := 0
		err := d.Run(ctx, tc.total, func(c *stack.Counters) bool {
			worst = max(worst, d.Launched()-int(lab.Answered(c)))
			return d.Launched() == tc.total && lab.Answered(c) == uint64(tc.total)
		})
		if err != nil {
			t.Fatalf("Run(%d) = %v: %+v", tc.total, err, client.Counters())
		}
		if worst > tc.window || worst == 0 {
			t.Errorf("Run(%d, window %d): %d launches awaited an answer at once", tc.total, tc.window, worst)
		}
		if now := d.Now(); now <= last {
			t.Errorf("clock went from %d to %d across Runs", last, now)
		} else {
			last = now
		}
		// SocketsOpened, not SynOut: on a loaded machine a SYN may be
		// retransmitted (the server goroutine not scheduled for 200 ms).
		if c := client.Counters(); d.Launched() != tc.total || c.SocketsOpened != uint64(tc.total) || c.HTTP2xx != uint64(tc.total) {
			t.Errorf("after Run(%d): launched %d, opened %d, 2xx %d", tc.total, d.Launched(), c.SocketsOpened, c.HTTP2xx)
		}
	}
}
