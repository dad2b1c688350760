package worker

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/worker/httpc"
)

// TestIdleHTTPUsers spawns users that each make one keep-alive request to
// nginx and then idle for an hour (the seed scenario's shape), through the
// full worker and a fake master. It reports the spawn rate and the heap and
// stack bytes each idle user holds, its HTTP client and idle connection
// included (kernel socket buffers are not Go memory and not counted).
//
// CICADA_IDLE_USERS sets the number of users (default 10000; each needs a
// file descriptor here and one in nginx).
func TestIdleHTTPUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns thousands of users")
	}
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("CICADA_IDLE_USERS")); err == nil && v > 0 {
		n = v
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < uint64(n)+1000 {
		n = int(rl.Cur) - 1000
		t.Logf("open-file limit %d: using %d users", rl.Cur, n)
	}
	ng := StartNginx(t)
	m := newFakeMaster(t, 0)
	opts := fastOptions(t, m.port)
	opts.HeartbeatInterval = time.Second
	sc := Scenario{
		Host: ng.URL(),
		HTTP: HTTPOptions{Timeout: 30 * time.Second, ConnectTimeout: 30 * time.Second},
		Classes: []UserClass{{Name: "HelloWorldUser", Wait: Constant(time.Hour), Tasks: []Task{{Name: "/", Fn: func(ctx context.Context, u *User) error {
			return u.DoDiscard(ctx, &httpc.Request{Path: "/"}, nil)
		}}}}},
	}
	rw := startWorker(t, opts, sc)
	register(t, m, rw, 1, 0)
	before := heapInUse()

	// Like a master at spawn rate 5000/s: steps of 5000 users, one per
	// second, each sent to the worker as absolute counts.
	start := time.Now()
	const step = 5000
	var steps int
	for target := step; ; target += step {
		if target > n {
			target = n
		}
		steps++
		sp := spawnMsg(float64(steps), map[string]int64{"HelloWorldUser": int64(target)}, nil)
		sp.Host = nil // the scenario's host (nginx)
		m.send(rw.w.NodeID(), protocol.TypeSpawn, sp)
		sc := m.await(protocol.TypeSpawningComplete, steps, 30*time.Second).msg.Data.(*protocol.SpawningComplete)
		if sc.UserCount != int64(target) {
			t.Fatalf("spawning_complete = %d users; want %d", sc.UserCount, target)
		}
		if target == n {
			break
		}
	}
	spawned := time.Since(start)
	PollUntil(t, 120*time.Second, "every user's first request", func() bool {
		return ng.Requests(t) >= n && idleUsers(rw.w.pool) == n
	})
	served := time.Since(start)
	after := heapInUse()
	per := float64(int64(after)-int64(before)) / float64(n)
	t.Logf("%d users: spawned (all started, spawning_complete) in %v = %.0f users/s; all first requests done after %v; %.0f bytes heap+stack per idle HTTP user; %d goroutines",
		n, spawned.Round(time.Millisecond), float64(n)/spawned.Seconds(), served.Round(time.Millisecond), per, runtime.NumGoroutine())
	if hc := httpc.Totals(); hc.Open < int64(n) {
		t.Errorf("open connections = %d; want %d idle keep-alive connections", hc.Open, n)
	}
	if !raceEnabled && per > 8192 {
		t.Errorf("an idle HTTP user costs %.0f bytes; the budget is 8192", per)
	}
	// All requests succeeded and nothing is lost at quit.
	m.send(rw.w.NodeID(), protocol.TypeQuit, nil)
	if err := rw.result(t, 60*time.Second); err != nil {
		t.Fatalf("Run = %v", err)
	}
	// The worker's quit follows its final report: once the fake master has
	// received the quit, it has every report.
	m.await(protocol.TypeQuit, 1, 10*time.Second)
	var reqs, fails int64
	for _, g := range m.all(protocol.TypeStats) {
		r := g.msg.Data.(*protocol.StatsReport)
		reqs += r.Total.NumRequests
		fails += r.Total.NumFailures
	}
	if reqs != int64(n) || fails != 0 {
		t.Errorf("stats: %d requests, %d failures; want %d, 0", reqs, fails, n)
	}
}
