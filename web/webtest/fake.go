// Package webtest provides a fake web.Runner that simulates a load test with
// changing numbers, for tests of the web package, of cmd, and for the
// browser end-to-end test. Its statistics go through the real pipeline:
// requests are recorded by a stats.Recorder (as a worker does) and merged
// into a stats.Stats (as the master does).
package webtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/web"
)

// Options configures a fake Runner. The zero value is a standalone runner
// with three request names and a fixed random seed.
type Options struct {
	// Names are the simulated request names (GET). If empty, "/", "/data.json"
	// and "/missing" are used; "/missing" always fails.
	Names []string
	// Workers > 0 makes the runner a master with that many fake workers.
	Workers int
	// Host is the initial target host.
	Host string
	// Now is the clock of the statistics. If nil, time.Now is used.
	Now func() time.Time
	// Seed seeds the simulated latencies.
	Seed uint64
	// RequestsPerUserSecond is the simulated request rate of one user. If
	// zero, 2 is used.
	RequestsPerUserSecond float64
	// StartErr, if set, is returned by Start.
	StartErr error
	// Shape makes the runner report that a load shape drives the test
	// (web.Status.Shape): Start then ramps to ShapeUsers whatever the
	// request says. If ShapeUsers is zero, 6 is used.
	Shape      bool
	ShapeUsers int
	// Phases records per-phase timings with the requests (TTFB 80 % of
	// the response time, body the rest; a connect of 1 ms on every tenth),
	// as cicada workers send them.
	Phases bool
	// Drops records arrival-rate drops by name on every step with users
	// (3 on the first name, 1 on "TASK think"), as cicada workers send
	// them in a rate test.
	Drops bool
}

// Runner is a fake web.Runner. It is safe for concurrent use.
type Runner struct {
	opts  Options
	now   func() time.Time
	stats *stats.Stats
	rec   *stats.Recorder

	mu struct {
		sync.Mutex
		state     string
		users     float64 // fractional while ramping
		target    int
		rate      float64
		host      string
		startTime time.Time
		starts    []web.StartRequest
		stops     int
		resets    int
		rng       *rand.Rand
		logs      []string
		workerIDs []string
		carry     map[string]float64 // fractional requests per name
		final     map[string]int64   // users per class when the last stop began
		connSecs  float64            // user-seconds run, for the fake connection counters
	}
}

var _ web.Runner = (*Runner)(nil)
var _ web.LogSource = (*Runner)(nil)

// New returns a fake runner in state ready.
func New(opts Options) *Runner {
	if len(opts.Names) == 0 {
		opts.Names = []string{"/", "/data.json", "/missing"}
	}
	if opts.RequestsPerUserSecond == 0 {
		opts.RequestsPerUserSecond = 2
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	r := &Runner{opts: opts, now: now, stats: stats.New(now), rec: stats.NewRecorder(now)}
	r.mu.state = protocol.StateReady
	r.mu.host = opts.Host
	r.mu.rng = rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	r.mu.carry = make(map[string]float64)
	for i := 0; i < opts.Workers; i++ {
		r.mu.workerIDs = append(r.mu.workerIDs, fmt.Sprintf("fakehost_%032x", uint64(i+1)*0x1f2e3d4c5b6a7988))
	}
	r.mu.logs = append(r.mu.logs, "[fake] INFO/cicada.webtest: Starting fake runner")
	return r
}

// Stats returns the underlying master statistics.
func (r *Runner) Stats() *stats.Stats { return r.stats }

// Status implements web.Runner.
func (r *Runner) Status() web.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	users := int(r.mu.users)
	st := web.Status{
		State:       r.mu.state,
		UserCount:   users,
		Host:        r.mu.host,
		Distributed: r.opts.Workers > 0,
		StartTime:   r.mu.startTime,
		Locustfile:  "fake.yaml",
		UserClasses: []web.UserClass{{Name: "WebsiteUser", Tasks: []web.Task{
			{Name: "index", Weight: 5}, {Name: "data", Weight: 2}, {Name: "missing", Weight: 1},
			{Name: "Browse", Weight: 2, Tasks: []web.Task{{Name: "page", Weight: 3}, {Name: "stop", Weight: 1}}},
		}}},
		UserClassesCount:      map[string]int64{"WebsiteUser": int64(users)},
		FinalUserClassesCount: maps.Clone(r.mu.final),
		Shape:                 r.opts.Shape,
		ConfiguredUsers:       10,
		ConfiguredSpawnRate:   2,
	}
	n := len(r.mu.workerIDs)
	for i, id := range r.mu.workerIDs {
		wu := users / n
		if i < users%n {
			wu++
		}
		ws := r.mu.state
		switch ws {
		case protocol.StateStopping, protocol.StateCleanup:
			ws = protocol.StateStopped
		}
		st.Workers = append(st.Workers, web.WorkerInfo{
			ID: id, State: ws, UserCount: wu,
			CPUUsage:    math.Round(float64(wu)*3.3*10) / 10,
			MemoryUsage: 50<<20 + int64(wu)<<16,
			Connections: wu,
			Conn:        fakeConn(wu, r.mu.connSecs/float64(n)),
		})
	}
	return st
}

// Snapshot implements web.Runner.
func (r *Runner) Snapshot() *stats.Snapshot { return r.stats.Snapshot() }

// Start implements web.Runner: a new test from ready/stopped clears the
// statistics; ramping happens in Step.
func (r *Runner) Start(ctx context.Context, req web.StartRequest) error {
	if r.opts.StartErr != nil {
		return r.opts.StartErr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.starts = append(r.mu.starts, req)
	if req.Host != nil {
		r.mu.host = *req.Host
	}
	if r.mu.state == protocol.StateReady || r.mu.state == protocol.StateStopped {
		r.stats.Clear()
		r.rec.Clear()
		r.mu.startTime = r.now()
		r.mu.users = 0
	}
	r.mu.target = req.Users
	r.mu.rate = req.SpawnRate
	if r.opts.Shape {
		r.mu.target, r.mu.rate = r.opts.ShapeUsers, 100
		if r.mu.target == 0 {
			r.mu.target = 6
		}
	}
	r.mu.state = protocol.StateSpawning
	r.mu.logs = append(r.mu.logs, fmt.Sprintf("[fake] INFO/cicada.webtest: Ramping to %d users at a rate of %.2f per second", req.Users, req.SpawnRate))
	return nil
}

// Stop implements web.Runner.
func (r *Runner) Stop(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.stops++
	if r.mu.state != protocol.StateReady && r.mu.state != protocol.StateStopped {
		r.mu.final = map[string]int64{"WebsiteUser": int64(r.mu.users)}
	}
	if r.mu.state != protocol.StateReady {
		r.mu.state = protocol.StateStopped
	}
	r.mu.users = 0
	r.mu.target = 0
	return nil
}

// ResetStats implements web.Runner.
func (r *Runner) ResetStats() {
	r.mu.Lock()
	r.mu.resets++
	r.mu.Unlock()
	r.stats.Reset()
	r.stats.ClearExceptions()
}

// Logs implements web.LogSource.
func (r *Runner) Logs() web.Logs {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := web.Logs{Master: append([]string(nil), r.mu.logs...), Workers: map[string][]string{}}
	for _, id := range r.mu.workerIDs {
		l.Workers[id] = []string{"[fake] INFO/cicada.worker: " + id + " ready"}
	}
	return l
}

// Starts returns the StartRequests received so far.
func (r *Runner) Starts() []web.StartRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]web.StartRequest(nil), r.mu.starts...)
}

// Stops and Resets count the calls of Stop and ResetStats.
func (r *Runner) Stops() int  { r.mu.Lock(); defer r.mu.Unlock(); return r.mu.stops }
func (r *Runner) Resets() int { r.mu.Lock(); defer r.mu.Unlock(); return r.mu.resets }

// Step simulates d of traffic ending now: users ramp toward the target at
// the spawn rate, every running user makes RequestsPerUserSecond requests
// per second spread over the names, and the recorded requests are merged
// into the master statistics as one worker report.
func (r *Runner) Step(d time.Duration) {
	r.mu.Lock()
	if r.mu.state == protocol.StateSpawning || r.mu.state == protocol.StateRunning {
		delta := r.mu.rate * d.Seconds()
		t := float64(r.mu.target)
		switch {
		case r.mu.users < t:
			r.mu.users = math.Min(t, r.mu.users+delta)
		case r.mu.users > t:
			r.mu.users = math.Max(t, r.mu.users-delta)
		}
		if r.mu.users == t {
			r.mu.state = protocol.StateRunning
		}
	}
	users := math.Floor(r.mu.users)
	active := r.mu.state == protocol.StateSpawning || r.mu.state == protocol.StateRunning
	if active {
		r.mu.connSecs += users * d.Seconds()
	}
	type req struct {
		name    string
		rt      time.Duration
		size    int64
		failure string
	}
	var reqs []req
	exception := false
	if active && users > 0 {
		per := users * r.opts.RequestsPerUserSecond * d.Seconds() / float64(len(r.opts.Names))
		for i, name := range r.opts.Names {
			c := r.mu.carry[name] + per
			n := int(c)
			r.mu.carry[name] = c - float64(n)
			base := 2 + float64(i%7)*3
			for j := 0; j < n; j++ {
				// Log-normal-ish latency around base ms, slower with more users.
				ms := base * math.Exp(r.mu.rng.NormFloat64()*0.5) * (1 + users/200)
				q := req{name: name, rt: time.Duration(ms * float64(time.Millisecond)), size: int64(100 + i%13)}
				if name == "/missing" {
					q.failure = "HTTPError('404 Client Error: Not Found for url: /missing')"
				} else if r.mu.rng.IntN(200) == 0 {
					q.failure = "ConnectionResetError(104, 'Connection reset by peer')"
				}
				reqs = append(reqs, q)
			}
		}
		exception = r.mu.rng.IntN(20) == 0
	}
	r.mu.Unlock()

	for i, q := range reqs {
		if !r.opts.Phases {
			r.rec.Record("GET", q.name, q.rt, q.size, q.failure)
			continue
		}
		p := &stats.Phases{TTFB: q.rt * 8 / 10, Body: q.rt - q.rt*8/10}
		if i%10 == 0 {
			p.Connect, p.HasConnect = time.Millisecond, true
		}
		r.rec.RecordWithPhases("GET", q.name, q.rt, q.size, q.failure, p)
	}
	if r.opts.Drops && active && users > 0 {
		r.rec.AddDroppedFor("GET", r.opts.Names[0], 3)
		r.rec.AddDroppedFor("TASK", "think", 1)
	}
	if exception {
		r.stats.AddException("deliberate task exception",
			"  File \"fake.yaml\", line 12, in boom\n    raise ValueError(\"deliberate task exception\")\n", "local")
	}
	r.stats.Merge(r.rec.Report(map[string]int64{"WebsiteUser": int64(users)}, int64(users)))
}

// Run calls Step every tick until ctx is done.
func (r *Runner) Run(ctx context.Context, tick time.Duration) error {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil
			}
			return ctx.Err()
		case <-t.C:
			r.Step(tick)
		}
	}
}

// fakeConn returns connection counters of a fake worker with users users
// that has run userSecs user-seconds: one connection per user (one in ten
// still connecting), a connect per user-second, a refused connect per 20
// user-seconds (target side) and an exhausted local port per 50
// (generator side).
func fakeConn(users int, userSecs float64) *web.ConnStats {
	return &web.ConnStats{
		Open:           int64(users),
		Established:    int64(users - users/10),
		Connects:       int64(userSecs),
		ConnectsPerSec: float64(users),
		ConnectErrors:  map[string]int64{"refused": int64(userSecs / 20), "ephemeral_ports": int64(userSecs / 50)},
		Errors:         map[string]int64{"reset": int64(userSecs / 40)},
		GeneratorSide:  func(kind string) bool { return kind == "ephemeral_ports" },
	}
}
