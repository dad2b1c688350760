package users

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/ifcheck"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/worker"
)

// startedRuntime is a runtime over lab's pipes, started, closed at the
// end of the test.
func startedRuntime(t *testing.T, opts Options, src string) *Runtime {
	t.Helper()
	rt, err := New(opts, parseScenario(t, okHTTP+src))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	if err := rt.Start(worker.RuntimeEnv{Recorder: stats.NewRecorder(nil)}); err != nil {
		t.Fatal(err)
	}
	return rt
}

func spawnOf(host string, users int64) worker.RuntimeSpawn {
	return worker.RuntimeSpawn{Host: host, Grace: time.Second, Classes: []worker.RuntimeClass{{Name: "U", Users: users}}}
}

// TestRuntimeCloseTwice: Close is idempotent; after it a spawn is refused
// with an error, and Stop, Users, Connections and SecondRound neither
// panic nor hang.
func TestRuntimeCloseTwice(t *testing.T) {
	lb := newLab(t, 1, 10000, 10999)
	rt := startedRuntime(t, testOptions(lb.links), "users: [{name: U, wait: constant(0.01), tasks: [{path: /}]}]")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rt.Spawn(ctx, spawnOf(serverHost, 20)); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatalf("first Close = %v", err)
	}
	if err := rt.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := rt.Spawn(ctx, spawnOf(serverHost, 5)); err == nil || !errors.Is(err, ErrOption) {
		t.Fatalf("Spawn after Close = %v; want an error wrapping ErrOption", err)
	}
	rt.Stop(time.Second)
	_ = rt.Users()
	_ = rt.Connections()
	if _, err := rt.SecondRound(ctx); err != nil {
		t.Fatalf("SecondRound after Close = %v", err)
	}
}

// TestRuntimeHostChange: a spawn with another host stops the users,
// rebuilds the stacks for the new server and spawns there; back on the
// first host the users are served again.
func TestRuntimeHostChange(t *testing.T) {
	lb := newLab(t, 2, 10000, 10999)
	opts := testOptions(lb.links)
	opts.Cores = 2
	rt := startedRuntime(t, opts, "users: [{name: U, wait: constant(0.01), tasks: [{path: /}]}]")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	for k, host := range []string{serverHost, "http://198.18.1.1:8080", serverHost} {
		if err := rt.Spawn(ctx, spawnOf(host, 10)); err != nil {
			t.Fatalf("spawn %d (%s) = %v", k, host, err)
		}
		if got := rt.Server().String(); got != strings.TrimPrefix(host, "http://") {
			t.Fatalf("spawn %d: server %s; want %s", k, got, host)
		}
		if got := rt.Users()["U"]; got != 10 {
			t.Fatalf("spawn %d: Users = %d; want 10", k, got)
		}
		if k != 1 {
			before := lb.served.Load()
			testpeer.Eventually(t, 20*time.Second, "requests served", func() bool { return lb.served.Load() >= before+20 })
		}
	}
	rt.Stop(2 * time.Second)
	if got := rt.Users()["U"]; got != 0 {
		t.Fatalf("Users after Stop = %d", got)
	}
}

// TestNewRefusesTableBeyondMemory: a tuple space whose tables cannot be
// allocated is refused by New (exit 2 on the command line), where the
// first spawn would end the process with the Go runtime's fatal out of
// memory. 2^24 addresses × 65,535 ports is about 120 TiB of records.
func TestNewRefusesTableBeyondMemory(t *testing.T) {
	opts := testOptions(pipeLinks)
	opts.ClientIP, opts.ClientIPs = netip.MustParseAddr("10.0.0.0"), 1<<24
	opts.PortMin, opts.PortMax = 1, 65535
	_, err := New(opts, parseScenario(t, okHTTP+"users: [{name: U, tasks: [{path: /}]}]"))
	if !errors.Is(err, ErrOption) || !errors.Is(err, ifcheck.ErrMemory) || !strings.Contains(err.Error(), "client IPs or ports") {
		t.Fatalf("New = %v; want a refusal wrapping ErrOption and ifcheck.ErrMemory", err)
	}
}

// TestRuntimeSpawnBeyondTable: a spawn of more users than the tuple space
// (a caller that skipped the worker's MaxUsers clamp) is refused at once,
// naming the table, without launching anything.
func TestRuntimeSpawnBeyondTable(t *testing.T) {
	lb := newLab(t, 1, 10000, 10099)
	opts := testOptions(lb.links)
	opts.PortMax = 10099
	rt := startedRuntime(t, opts, "users: [{name: U, wait: constant(1), tasks: [{path: /}]}]")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err := rt.Spawn(ctx, spawnOf(serverHost, 101))
	if !errors.Is(err, ErrRefused) || time.Since(start) > 2*time.Second || !strings.Contains(err.Error(), "at most 100") {
		t.Fatalf("Spawn of 101 users over 100 records = %v after %v; want a refusal at once", err, time.Since(start))
	}
}

// TestRuntimeSpawnStopSpawn: spawn, stop and spawn again in quick
// succession, and a second round while a spawn ramps up: the counts end
// exact, nothing hangs.
func TestRuntimeSpawnStopSpawn(t *testing.T) {
	lb := newLab(t, 2, 10000, 10999)
	opts := testOptions(lb.links)
	opts.Cores = 2
	opts.ConnectRate = 2000
	rt := startedRuntime(t, opts, "users: [{name: U, wait: constant(0.05), tasks: [{path: /}]}]")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	for k := range 5 {
		if err := rt.Spawn(ctx, spawnOf(serverHost, int64(50+k*10))); err != nil {
			t.Fatalf("round %d: %v", k, err)
		}
		rt.Stop(2 * time.Second)
		if got := rt.Users()["U"]; got != 0 {
			t.Fatalf("round %d: %d users after Stop", k, got)
		}
	}
	done := make(chan error, 1)
	go func() { done <- rt.Spawn(ctx, spawnOf(serverHost, 600)) }()
	res, err := rt.SecondRound(ctx)
	if err != nil || res.Reused+res.Failed != res.Users {
		t.Fatalf("second round during a spawn = %+v, %v", res, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := rt.Users()["U"]; got != 600 {
		t.Fatalf("Users = %d; want 600", got)
	}
}

// TestRuntimeInterruptedSpawn: a Close, or a Stop by a caller that does
// not cancel the spawn first (the worker does), while a slow spawn ramps
// up ends the spawn at once with an error, not after SpawnStall; after a
// Stop no user is left.
func TestRuntimeInterruptedSpawn(t *testing.T) {
	for _, tt := range []struct {
		name      string
		interrupt func(rt *Runtime) error
	}{
		{"Close", func(rt *Runtime) error { return rt.Close() }},
		{"Stop", func(rt *Runtime) error { rt.Stop(2 * time.Second); return nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lb := newLab(t, 1, 10000, 11999)
			opts := testOptions(lb.links)
			opts.PortMax = 11999
			opts.ConnectRate = 100
			rt := startedRuntime(t, opts, "users: [{name: U, wait: constant(1), tasks: [{path: /}]}]")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- rt.Spawn(ctx, spawnOf(serverHost, 2000)) }()
			testpeer.Eventually(t, 20*time.Second, "the first users", func() bool { return rt.Users()["U"] > 0 })
			start := time.Now()
			if err := tt.interrupt(rt); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err == nil || time.Since(start) > 4*time.Second {
					t.Fatalf("Spawn = %v, %v after %s; want an error at once", err, time.Since(start), tt.name)
				}
			case <-ctx.Done():
				t.Fatalf("the spawn did not end after %s", tt.name)
			}
			if tt.name == "Stop" {
				testpeer.Eventually(t, 10*time.Second, "no users", func() bool { return rt.Users()["U"] == 0 })
			}
		})
	}
}
