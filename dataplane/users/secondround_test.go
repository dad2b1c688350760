package users

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// TestSecondRoundTakesEveryUser: a round asked while a spawn ramps up, or
// right after it returned (users still connecting or awaiting their
// first response), takes in every user the spawn asked for: each reuses
// its connection once, and the servers answer exactly one first request
// and one round request per user (the users then wait 60 s).
func TestSecondRoundTakesEveryUser(t *testing.T) {
	const users = 600
	for _, tc := range []struct {
		name   string
		during bool // ask while the spawn runs; else right after it
	}{{"during the spawn", true}, {"right after the spawn", false}} {
		t.Run(tc.name, func(t *testing.T) {
			lb := newLab(t, 2, 10000, 10999)
			opts := testOptions(lb.links)
			opts.Cores = 2
			opts.ConnectRate = 1000 // per core: a ramp of about 0.3 s
			rt := startedRuntime(t, opts, "users: [{name: U, wait: constant(60), tasks: [{path: /}]}]")
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- rt.Spawn(ctx, spawnOf(serverHost, users)) }()
			if tc.during {
				testpeer.Eventually(t, 20*time.Second, "the spawn under way", func() bool {
					n := rt.Users()["U"]
					return n > 0 && n < users
				})
			} else if err := <-done; err != nil {
				t.Fatal(err)
			}
			res, err := rt.SecondRound(ctx)
			if err != nil || res.Users != users || res.Reused != users || res.Failed != 0 || res.Reconnected != 0 || len(res.Errors) != 0 {
				t.Fatalf("second round = %+v, %v; want all %d users reused", res, err, users)
			}
			if tc.during {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			if got := lb.served.Load(); got != 2*users {
				t.Errorf("served %d; want %d (one first request and one round request per user)", got, 2*users)
			}
			// The engine's counters are at most a second old: poll them.
			eng := rt.engPtr.Load()
			var c stack.Counters
			testpeer.Eventually(t, 10*time.Second, "the engine's counters", func() bool {
				c, _ = eng.Counters()
				return c.SecondRoundOK == users
			})
			if c.SocketsOpened != users || c.Reconnects != 0 || c.SecondRoundPending != 0 {
				t.Errorf("opened %d, reconnects %d, pending %d; want %d, 0, 0", c.SocketsOpened, c.Reconnects, c.SecondRoundPending, users)
			}
		})
	}
}

// TestSecondRoundSpawnTimeout: a round whose timeout ends before the spawn
// it waits for gives an error and counts the users spawned so far as
// failed, by that reason.
func TestSecondRoundSpawnTimeout(t *testing.T) {
	lb := newLab(t, 1, 10000, 11999)
	opts := testOptions(lb.links)
	opts.PortMax = 11999
	opts.ConnectRate = 100 // 2,000 users: 20 s
	rt := startedRuntime(t, opts, "users: [{name: U, wait: constant(60), tasks: [{path: /}]}]")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rt.Spawn(ctx, spawnOf(serverHost, 2000)) }()
	testpeer.Eventually(t, 20*time.Second, "the first users", func() bool { return rt.Users()["U"] > 0 })
	rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	res, err := rt.SecondRound(rctx)
	rcancel()
	if !errors.Is(err, context.DeadlineExceeded) || res.Users == 0 || res.Users >= 2000 ||
		res.Failed != res.Users || res.Errors[roundSpawned] != res.Users || res.Reused != 0 {
		t.Errorf("second round = %+v, %v; want the users so far failed (%q) and a deadline error", res, err, roundSpawned)
	}
	rt.Stop(2 * time.Second)
	if err := <-done; err == nil {
		t.Errorf("Spawn ended by Stop = nil; want an error")
	}
}
