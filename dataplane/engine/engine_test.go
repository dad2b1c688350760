package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/stack"
)

func pair(t *testing.T) (client, server *stack.Stack) {
	t.Helper()
	a, b, err := pipe.New(pipe.Config{})
	if err != nil {
		t.Fatal(err)
	}
	base := stack.Config{ClientIP: 0x0a000001, ServerIP: 0x0a000101, PortMin: 10000, PortMax: 10999}
	cc, sc := base, base
	cc.Mode, cc.Link, sc.Mode, sc.Link = stack.Client, a, stack.Server, b
	if client, err = stack.New(cc); err != nil {
		t.Fatal(err)
	}
	if server, err = stack.New(sc); err != nil {
		t.Fatal(err)
	}
	return client, server
}

func TestLoopLaunchesAtTheRateUntilDone(t *testing.T) {
	const total, rate = 2000, 20000.0
	client, server := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srvDone := make(chan error, 1)
	srvCtx, stopServer := context.WithCancel(ctx)
	go func() { srvDone <- (&engine.Loop{Stack: server}).Run(srvCtx) }()
	start := time.Now()
	loop := &engine.Loop{Stack: client, Rate: rate, Total: total,
		Until: func(c *stack.Counters, n int) bool { return n == total && c.SocketsClosed == total }}
	err := loop.Run(ctx)
	elapsed := time.Since(start)
	stopServer()
	if serr := <-srvDone; !errors.Is(serr, engine.ErrStopped) || !errors.Is(serr, context.Canceled) {
		t.Errorf("server loop = %v; want ErrStopped wrapping context.Canceled", serr)
	}
	if err != nil {
		t.Fatalf("client loop = %v after %d launches: %+v", err, loop.Launched(), client.Counters())
	}
	if c := client.Counters(); loop.Launched() != total || c.HTTP2xx != total || c.SocketsOpened != total {
		t.Errorf("launched %d, opened %d, 2xx %d; want %d each", loop.Launched(), c.SocketsOpened, c.HTTP2xx, total)
	}
	// The pace allows total launches only after total/rate seconds.
	if min := time.Duration(float64(total-stack.DefaultBurst) / rate * float64(time.Second)); elapsed < min {
		t.Errorf("%d launches in %v; the pace allows them no sooner than %v", total, elapsed, min)
	}
}

func TestLoopRefusesBadConfig(t *testing.T) {
	for _, l := range []*engine.Loop{{}, {Stack: &stack.Stack{}, Rate: -1}} {
		if err := l.Run(context.Background()); !errors.Is(err, engine.ErrConfig) {
			t.Errorf("Run(%+v) = %v; want ErrConfig", l, err)
		}
	}
}

func TestLoopMaxOpenBoundsOpenConnections(t *testing.T) {
	const total, maxOpen = 3000, 50
	client, server := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srvCtx, stopServer := context.WithCancel(ctx)
	srvDone := make(chan error, 1)
	go func() { srvDone <- (&engine.Loop{Stack: server}).Run(srvCtx) }()
	peak := uint64(0)
	loop := &engine.Loop{Stack: client, MaxOpen: maxOpen, Total: total,
		Until: func(c *stack.Counters, n int) bool {
			peak = max(peak, c.SocketsCurrent)
			return n == total && c.SocketsClosed == total
		}}
	err := loop.Run(ctx)
	stopServer()
	<-srvDone
	if err != nil {
		t.Fatalf("client loop = %v after %d launches", err, loop.Launched())
	}
	if c := client.Counters(); c.HTTP2xx != total || peak > maxOpen || peak < maxOpen/2 {
		t.Errorf("2xx %d (want %d), peak open %d (want %d at most, near it)", c.HTTP2xx, total, peak, maxOpen)
	}
}
