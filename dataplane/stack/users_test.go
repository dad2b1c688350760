package stack

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/wire"
)

func get(path string) []byte { return BuildRequest("GET", path, "10.0.1.1", nil) }

// usersPair is a pair whose client runs prog over records
// 10000..10000+conns-1, with the next hop resolved.
func usersPair(t testing.TB, prog *Program, conns int, cc, sc Config, pc pipe.Config) *pair {
	t.Helper()
	cc.Program = prog
	cc.PortMin, cc.PortMax = 10000, uint16(10000+conns-1)
	sc.PortMin, sc.PortMax = cc.PortMin, cc.PortMax
	if pc.Frames == 0 {
		pc.Frames = 8192
	}
	p := newPair(t, cc, sc, pc)
	p.run(t, 100, func() bool { return p.c.Resolved() })
	return p
}

// takeAll adds the client's stats since the last call into st.
func (p *pair) takeAll(st *Stats) { p.c.TakeStats(st) }

func rowTotals(st *Stats) (req, fail uint64) {
	for i := range st.Rows {
		req += st.Rows[i].Requests
		fail += st.Rows[i].Failures
	}
	return req, fail
}

func TestProgramRefused(t *testing.T) {
	a, _, _ := pipe.New(pipe.Config{})
	ok := func() *Program {
		return &Program{Requests: []ProgramRequest{{Raw: get("/")}},
			Classes: []ProgramClass{{Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}}}}
	}
	mod := func(f func(p *Program)) *Program { p := ok(); f(p); return p }
	tests := []struct {
		name string
		prog *Program
		cfg  func(c *Config)
	}{
		{"with Request", ok(), func(c *Config) { c.Request = get("/") }},
		{"with Hold", ok(), func(c *Config) { c.Hold = true }},
		{"with RequestsPerConn", ok(), func(c *Config) { c.RequestsPerConn = 2 }},
		{"in server mode", ok(), func(c *Config) { c.Mode = Server }},
		{"no requests", mod(func(p *Program) { p.Requests = nil }), nil},
		{"no classes", mod(func(p *Program) { p.Classes = nil }), nil},
		{"empty raw", mod(func(p *Program) { p.Requests[0].Raw = nil }), nil},
		{"raw above mss", mod(func(p *Program) { p.Requests[0].Raw = make([]byte, 1461) }), nil},
		{"negative stat", mod(func(p *Program) { p.Requests[0].Stat = -1 }), nil},
		{"stat too large", mod(func(p *Program) { p.Requests[0].Stat = MaxStatsRows }), nil},
		{"accept 99", mod(func(p *Program) { p.Requests[0].Accept = []uint16{99} }), nil},
		{"no tasks", mod(func(p *Program) { p.Classes[0].Tasks = nil }), nil},
		{"task without requests", mod(func(p *Program) { p.Classes[0].Tasks[0].Requests = nil }), nil},
		{"request index out of range", mod(func(p *Program) { p.Classes[0].Tasks[0].Requests = []int{1} }), nil},
		{"on_start index out of range", mod(func(p *Program) { p.Classes[0].OnStart = []int{-1} }), nil},
		{"zero weight", mod(func(p *Program) { p.Classes[0].Tasks[0].Weight = 0 }), nil},
		{"weight too large", mod(func(p *Program) { p.Classes[0].Tasks[0].Weight = MaxWeight + 1 }), nil},
		{"weight 2 in sequential", mod(func(p *Program) { p.Classes[0].Sequential = true; p.Classes[0].Tasks[0].Weight = 2 }), nil},
		{"constant with Max", mod(func(p *Program) { p.Classes[0].Wait = Wait{Kind: WaitConstant, Min: 1, Max: 2} }), nil},
		{"negative constant", mod(func(p *Program) { p.Classes[0].Wait = Wait{Kind: WaitConstant, Min: -1} }), nil},
		{"between reversed", mod(func(p *Program) { p.Classes[0].Wait = Wait{Kind: WaitBetween, Min: 2, Max: 1} }), nil},
		{"between with rate", mod(func(p *Program) { p.Classes[0].Wait = Wait{Kind: WaitBetween, Max: 1, PerSecond: 1} }), nil},
		{"throughput 0", mod(func(p *Program) { p.Classes[0].Wait = Wait{Kind: WaitConstantThroughput} }), nil},
		{"throughput NaN", mod(func(p *Program) { p.Classes[0].Wait = Wait{Kind: WaitConstantThroughput, PerSecond: math.NaN()} }), nil},
		{"throughput with Min", mod(func(p *Program) { p.Classes[0].Wait = Wait{Kind: WaitConstantThroughput, Min: 1, PerSecond: 1} }), nil},
		{"unknown kind", mod(func(p *Program) { p.Classes[0].Wait = Wait{Kind: 9} }), nil},
		{"wait above MaxTimeout", mod(func(p *Program) { p.Classes[0].Wait = Wait{Kind: WaitConstant, Min: MaxTimeout + 1} }), nil},
		{"idle timeout above MaxTimeout", ok(), func(c *Config) { c.IdleTimeout = MaxTimeout + 1 }},
		{"max rto below rto", ok(), func(c *Config) { c.RetransmitTimeout, c.MaxRetransmitTimeout = time.Second, time.Millisecond }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Mode: Client, Link: a, ClientIP: clientIP, ServerIP: serverIP, Program: tt.prog}
			if tt.cfg != nil {
				tt.cfg(&c)
			}
			if _, err := New(c); !errors.Is(err, ErrConfig) {
				t.Errorf("New(%s) = %v; want ErrConfig", tt.name, err)
			}
		})
	}
	if _, err := New(Config{Mode: Client, Link: a, ClientIP: clientIP, ServerIP: serverIP, Program: ok()}); err != nil {
		t.Errorf("New(valid program) = %v", err)
	}
}

// progStack returns a client stack running prog, not connected to anyone,
// with a user of class 0 on record 0.
func progStack(t *testing.T, prog *Program) *Stack {
	t.Helper()
	a, _, _ := pipe.New(pipe.Config{Frames: 64})
	s, err := New(Config{Mode: Client, Link: a, ClientIP: clientIP, ServerIP: serverIP, PortMin: 10000, PortMax: 10000, Program: prog})
	if err != nil {
		t.Fatal(err)
	}
	s.conns[0].user = user{cnext: none, cprev: none, task: ^uint16(0), uflags: uLive}
	return s
}

func oneClass(c ProgramClass) *Program {
	return &Program{Requests: []ProgramRequest{{Raw: get("/")}}, Classes: []ProgramClass{c}}
}

func TestWaitKinds(t *testing.T) {
	task := []ProgramTask{{Weight: 1, Requests: []int{0}}}
	s := time.Second
	type call struct {
		took time.Duration // the task's run time before this wait
		want time.Duration
	}
	tests := []struct {
		name  string
		wait  Wait
		calls []call
	}{
		{"constant", Wait{Kind: WaitConstant, Min: 5 * s}, []call{{0, 5 * s}, {3 * s, 5 * s}, {9 * s, 5 * s}}},
		{"constant 0", Wait{Kind: WaitConstant}, []call{{0, 0}, {s, 0}}},
		{"between equal", Wait{Kind: WaitBetween, Min: 2 * s, Max: 2 * s}, []call{{0, 2 * s}, {s, 2 * s}}},
		// constant_pacing: the first wait is the period, then the period
		// minus the task's run time, floored at 0.
		{"pacing", Wait{Kind: WaitConstantPacing, Min: 10 * s}, []call{{3 * s, 10 * s}, {3 * s, 7 * s}, {12 * s, 0}, {10 * s, 0}, {0, 10 * s}}},
		{"throughput 4/s", Wait{Kind: WaitConstantThroughput, PerSecond: 4}, []call{{0, 250 * time.Millisecond},
			{100 * time.Millisecond, 150 * time.Millisecond}, {time.Second, 0}}},
		{"throughput 0.5/s", Wait{Kind: WaitConstantThroughput, PerSecond: 0.5}, []call{{0, 2 * s}, {1500 * time.Millisecond, 500 * time.Millisecond}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := progStack(t, oneClass(ProgramClass{Tasks: task, Wait: tt.wait}))
			now := int64(1000 * time.Second)
			for k, c := range tt.calls {
				st.conns[0].taskAt = now
				now += int64(c.took)
				if got := time.Duration(st.waitFor(0, now)); got != c.want {
					t.Errorf("wait %d after a %v task = %v; want %v", k, c.took, got, c.want)
				}
			}
		})
	}
	t.Run("between uniform", func(t *testing.T) {
		st := progStack(t, oneClass(ProgramClass{Tasks: task, Wait: Wait{Kind: WaitBetween, Min: s, Max: 3 * s}}))
		const n = 20000
		var sum, lo, hi int64 = 0, math.MaxInt64, 0
		var quarters [4]int
		for range n {
			w := st.waitFor(0, 0)
			if w < int64(s) || w >= int64(3*s) {
				t.Fatalf("between(1s, 3s) = %v; want in [1s, 3s)", time.Duration(w))
			}
			sum, lo, hi = sum+w, min(lo, w), max(hi, w)
			quarters[(w-int64(s))/int64(s/2)]++
		}
		if mean := time.Duration(sum / n); mean < 1950*time.Millisecond || mean > 2050*time.Millisecond {
			t.Errorf("mean %v; want 2s ± 50ms", mean)
		}
		for q, c := range quarters {
			if c < n/4*9/10 || c > n/4*11/10 {
				t.Errorf("quarter %d holds %d of %d; want %d ± 10%%", q, c, n, n/4)
			}
		}
		if lo > int64(s+10*time.Millisecond) || hi < int64(3*s-10*time.Millisecond) {
			t.Errorf("range [%v, %v]; want near [1s, 3s)", time.Duration(lo), time.Duration(hi))
		}
	})
}

func TestTaskPicks(t *testing.T) {
	tasks := []ProgramTask{{Weight: 1, Requests: []int{0}}, {Weight: 2, Requests: []int{0}}, {Weight: 7, Requests: []int{0}}}
	t.Run("weights", func(t *testing.T) {
		st := progStack(t, oneClass(ProgramClass{Tasks: tasks}))
		const n = 100000
		var got [3]int
		for range n {
			st.pickTask(0, 0)
			got[st.conns[0].task]++
		}
		for k, w := range []int{1, 2, 7} {
			want := n * w / 10
			if d := got[k] - want; d < -want/20 || d > want/20 {
				t.Errorf("task %d (weight %d) picked %d of %d; want %d ± 5%%", k, w, got[k], n, want)
			}
		}
	})
	t.Run("sequential", func(t *testing.T) {
		seq := []ProgramTask{{Requests: []int{0}}, {Weight: 1, Requests: []int{0, 0}}, {Requests: []int{0}}}
		st := progStack(t, oneClass(ProgramClass{Tasks: seq, Sequential: true}))
		for k := range 10 {
			st.pickTask(0, 0)
			c := &st.conns[0]
			if int(c.task) != k%3 || c.pos != st.classes[0].taskStart[k%3] {
				t.Fatalf("pick %d: task %d at step %d; want task %d at step %d", k, c.task, c.pos, k%3, st.classes[0].taskStart[k%3])
			}
		}
	})
}

// TestHistogramBuckets checks the buckets against Locust's rounding
// (locust-outputs.md 3.2: Python's round, half to even).
func TestHistogramBuckets(t *testing.T) {
	ms := func(f float64) int64 { return int64(math.Round(f * 1e6)) }
	tests := []struct {
		rt      int64
		key     int
		clamped bool
	}{
		{0, 0, false}, {ms(0.4), 0, false}, {ms(0.5), 0, false}, {ms(1.5), 2, false},
		{ms(3.49), 3, false}, {ms(29.76), 30, false}, {ms(2.5), 2, false}, {ms(99.4), 99, false}, {ms(99.5), 100, false},
		{ms(100), 100, false}, {ms(147), 150, false}, {ms(145), 140, false}, {ms(155), 160, false},
		{145_000_010, 150, false}, {ms(994), 990, false}, {ms(995), 1000, false}, {ms(999.9), 1000, false},
		{ms(1000), 1000, false}, {ms(3432), 3400, false}, {ms(3450), 3400, false}, {ms(3550), 3600, false},
		{ms(9950), 10000, false}, {ms(10000), 10000, false}, {ms(58760), 59000, false}, {ms(14500), 14000, false},
		{ms(15500), 16000, false}, {ms(900_000), 900_000, false}, {ms(3_600_400), 3_600_000, false},
		{ms(3_600_500), 3_600_000, false}, {ms(3_600_501), 3_600_000, true}, {ms(7_200_000), 3_600_000, true}, {-5, 0, false},
	}
	for _, tt := range tests {
		i, clamped := HistIndex(tt.rt)
		if k := HistKey(i); k != tt.key || clamped != tt.clamped {
			t.Errorf("HistIndex(%v) = bucket %d (key %d, clamped %v); want key %d, clamped %v",
				time.Duration(tt.rt), i, k, clamped, tt.key, tt.clamped)
		}
	}
	for i := range HistBuckets {
		if j, _ := HistIndex(int64(HistKey(i)) * 1e6); j != i {
			t.Fatalf("HistIndex(HistKey(%d) ms) = %d", i, j)
		}
		if i > 0 && HistKey(i) <= HistKey(i-1) {
			t.Fatalf("HistKey(%d) = %d not above HistKey(%d) = %d", i, HistKey(i), i-1, HistKey(i-1))
		}
	}
}

// FuzzHistIndex: every response time lands in a bucket whose key is within
// half the bucket's resolution of it (or is clamped), and the buckets are
// monotonic in the time.
func FuzzHistIndex(f *testing.F) {
	f.Add(int64(145e6), int64(1))
	f.Add(int64(99_500_000), int64(500_000))
	f.Add(int64(3_600_500_000_000), int64(1e9))
	f.Fuzz(func(t *testing.T, rt, d int64) {
		if rt < 0 || rt > 1<<50 || d < 0 || d > 1<<40 {
			return
		}
		i, clamped := HistIndex(rt)
		if i < 0 || i >= HistBuckets {
			t.Fatalf("HistIndex(%d) = %d outside 0..%d", rt, i, HistBuckets-1)
		}
		res := int64(1e6)
		switch ms := rt / 1e6; {
		case ms >= 10_000:
			res = 1e9
		case ms >= 1000:
			res = 1e8
		case ms >= 100:
			res = 1e7
		}
		if k := int64(HistKey(i)) * 1e6; !clamped && (k-rt > res/2 || rt-k > res/2) {
			t.Fatalf("HistIndex(%d ns) has key %d ms, beyond half of %d ns", rt, HistKey(i), res)
		}
		if clamped != (rt > int64(HistMaxMs)*1e6+5e8) {
			t.Fatalf("HistIndex(%d ns) clamped %v", rt, clamped)
		}
		if j, _ := HistIndex(rt + d); j < i {
			t.Fatalf("HistIndex(%d) = %d below HistIndex(%d) = %d", rt+d, j, rt, i)
		}
	})
}

// TestTakeStats: TakeStats adds into dst (growing it once), zeroes the
// stack's rows, and a second call adds nothing new.
func TestTakeStats(t *testing.T) {
	prog := &Program{Requests: []ProgramRequest{{Raw: get("/")}, {Raw: get("/x"), Stat: 2}},
		Classes: []ProgramClass{{Tasks: []ProgramTask{{Weight: 1, Requests: []int{0, 1}}}}}}
	st := progStack(t, prog)
	if st.StatsRows() != 3 || st.Classes() != 1 {
		t.Fatalf("StatsRows %d, Classes %d; want 3, 1", st.StatsRows(), st.Classes())
	}
	st.rows[0].sample(2e6)
	st.rows[2].sample(7e6)
	st.rows[2].fail(failTimeout)
	dst := Stats{Rows: make([]StatsRow, 1)}
	dst.Rows[0].sample(4e6)
	st.TakeStats(&dst)
	if len(dst.Rows) != 3 || dst.Rows[0].Requests != 2 || dst.Rows[0].RespTimeMinUs != 2000 || dst.Rows[0].RespTimeMaxUs != 4000 ||
		dst.Rows[2].Requests != 1 || dst.Rows[2].FailTimeout != 1 || dst.Rows[2].Hist[7] != 1 || dst.Rows[1].Requests != 0 {
		t.Errorf("dst after TakeStats: %d rows, row 0 %d requests %d..%d µs, row 2 %d requests %d timeouts", len(dst.Rows),
			dst.Rows[0].Requests, dst.Rows[0].RespTimeMinUs, dst.Rows[0].RespTimeMaxUs, dst.Rows[2].Requests, dst.Rows[2].FailTimeout)
	}
	st.TakeStats(&dst)
	if dst.Rows[0].Requests != 2 || dst.Rows[2].Requests != 1 {
		t.Errorf("a second TakeStats added %d, %d requests; want nothing", dst.Rows[0].Requests-2, dst.Rows[2].Requests-1)
	}
	dst.Reset()
	if dst.Rows[0].Requests != 0 || dst.Rows[2].Hist[7] != 0 || len(dst.Rows) != 3 {
		t.Errorf("Reset left requests %d, hist %d, %d rows", dst.Rows[0].Requests, dst.Rows[2].Hist[7], len(dst.Rows))
	}
	if allocs := testing.AllocsPerRun(10, func() { st.rows[0].sample(1e6); st.TakeStats(&dst); dst.Reset() }); allocs != 0 {
		t.Errorf("TakeStats into a grown Stats allocates %v; want 0", allocs)
	}
}

func TestStatsRowAdd(t *testing.T) {
	var a, b StatsRow
	a.sample(5e6)
	for k := range MaxFailStatuses + 2 {
		b.sample(int64(k+1) * 1e6)
		b.Failures++
		b.failStatus(uint16(500+k), 1)
	}
	b.failStatus(500, 2)
	var sum StatsRow
	sum.Add(&a)
	sum.Add(&b)
	if sum.Requests != 1+MaxFailStatuses+2 || sum.Failures != MaxFailStatuses+2 || sum.RespTimeMinUs != 1000 ||
		sum.RespTimeMaxUs != uint64(MaxFailStatuses+2)*1000 || sum.FailStatusN != MaxFailStatuses ||
		sum.FailStatus[0] != (StatusCount{500, 3}) || sum.FailStatusOther != 2 || sum.Hist[5] != 2 {
		t.Errorf("sum = requests %d failures %d min %d max %d statuses %d first %v other %d hist[5] %d",
			sum.Requests, sum.Failures, sum.RespTimeMinUs, sum.RespTimeMaxUs, sum.FailStatusN, sum.FailStatus[0], sum.FailStatusOther, sum.Hist[5])
	}
}

// TestUsersOnStartSequential: on_start once per user, then the sequential
// tasks in turn; every request counted in its row, nothing failed.
func TestUsersOnStartSequential(t *testing.T) {
	const users = 3
	prog := &Program{
		Requests: []ProgramRequest{{Raw: get("/login"), Stat: 0}, {Raw: get("/a"), Stat: 1}, {Raw: get("/b"), Stat: 2}, {Raw: get("/c"), Stat: 3}},
		Classes: []ProgramClass{{OnStart: []int{0}, Sequential: true, Wait: Wait{Kind: WaitConstant, Min: 10 * time.Millisecond},
			Tasks: []ProgramTask{{Requests: []int{1}}, {Requests: []int{2, 3}}}}},
	}
	p := usersPair(t, prog, users, Config{}, Config{}, pipe.Config{})
	if got := p.c.LaunchClass(p.now, 0, users); got != users {
		t.Fatalf("LaunchClass = %d; want %d", got, users)
	}
	var st Stats
	p.run(t, 5000, func() bool { p.takeAll(&st); return st.Rows[2].Requests >= 30 })
	if got := p.c.StopClass(p.now, 0, users); got != users {
		t.Fatalf("StopClass = %d; want %d", got, users)
	}
	p.run(t, 5000, func() bool { return p.c.Counters().SocketsCurrent == 0 && p.s.Counters().SocketsCurrent == 0 })
	p.takeAll(&st)
	r := st.Rows
	if r[0].Requests != users {
		t.Errorf("on_start requests = %d; want %d (once per user)", r[0].Requests, users)
	}
	if d := r[1].Requests - r[2].Requests; (d != 0 && d != users) || r[2].Requests != r[3].Requests {
		t.Errorf("task rows %d, %d, %d; want tasks in turn (first minus second 0 or %d) and the second's two requests equal",
			r[1].Requests, r[2].Requests, r[3].Requests, users)
	}
	req, fail := rowTotals(&st)
	c := p.c.Counters()
	if fail != 0 || req != c.HTTPRequests || req != c.HTTP2xx || c.SocketsOpened != users || c.Reconnects != 0 {
		t.Errorf("requests %d failures %d; counters HTTPRequests %d 2xx %d opened %d reconnects %d",
			req, fail, c.HTTPRequests, c.HTTP2xx, c.SocketsOpened, c.Reconnects)
	}
	if r[0].ContentBytes != users*DefaultBodySize || r[1].RespTimeMaxUs > 2000 {
		t.Errorf("row 0 content %d, row 1 max %d µs; want %d and at most 2 ms", r[0].ContentBytes, r[1].RespTimeMaxUs, users*DefaultBodySize)
	}
	if p.c.Users(0) != 0 {
		t.Errorf("Users(0) = %d after stopping all; want 0", p.c.Users(0))
	}
}

// TestUsersConnectTimed: the request that opens a connection is timed from
// the SYN (the handshake takes a turn of the fake clock here), the
// next ones from their own transmission.
func TestUsersConnectTimed(t *testing.T) {
	prog := &Program{Requests: []ProgramRequest{{Raw: get("/first")}, {Raw: get("/next"), Stat: 1}},
		Classes: []ProgramClass{{OnStart: []int{0}, Wait: Wait{Kind: WaitConstant, Min: 10 * time.Millisecond},
			Tasks: []ProgramTask{{Weight: 1, Requests: []int{1}}}}}}
	p := usersPair(t, prog, 10, Config{}, Config{}, pipe.Config{Delay: 1})
	p.c.LaunchClass(p.now, 0, 10)
	var st Stats
	p.run(t, 5000, func() bool { p.c.TakeStats(&st); return st.Rows[1].Requests >= 50 })
	r0, r1 := st.Rows[0], st.Rows[1]
	if r0.Requests != 10 || r0.RespTimeMinUs <= r1.RespTimeMaxUs {
		t.Errorf("first requests %d timed %d..%d µs, next %d..%d µs; want 10, the first all slower than the next (the handshake took a turn)",
			r0.Requests, r0.RespTimeMinUs, r0.RespTimeMaxUs, r1.RespTimeMinUs, r1.RespTimeMaxUs)
	}
}

// TestUsersFailStatus: the server answers anything but GET with 405: it
// fails unless the request accepts 405; the status is kept per row.
func TestUsersFailStatus(t *testing.T) {
	post := func(p string) []byte { return BuildRequest("POST", p, "h", [][2]string{{"Content-Length", "0"}}) }
	prog := &Program{
		Requests: []ProgramRequest{{Raw: get("/")}, {Raw: post("/x"), Stat: 1}, {Raw: post("/y"), Stat: 2, Accept: []uint16{405}}},
		Classes: []ProgramClass{{Sequential: true, Wait: Wait{Kind: WaitConstant, Min: 5 * time.Millisecond},
			Tasks: []ProgramTask{{Requests: []int{0}}, {Requests: []int{1}}, {Requests: []int{2}}}}},
	}
	const users = 10
	p := usersPair(t, prog, users, Config{}, Config{}, pipe.Config{})
	p.c.LaunchClass(p.now, 0, users)
	var st Stats
	p.run(t, 5000, func() bool { p.takeAll(&st); return st.Rows[2].Requests >= 50 })
	r := st.Rows
	if r[0].Failures != 0 || r[2].Failures != 0 {
		t.Errorf("failures GET %d, accepted 405 %d; want 0", r[0].Failures, r[2].Failures)
	}
	if r[1].Requests == 0 || r[1].Failures != r[1].Requests || r[1].FailStatusN != 1 ||
		r[1].FailStatus[0] != (StatusCount{405, r[1].Requests}) || r[1].ContentBytes != 0 {
		t.Errorf("row 1: requests %d failures %d statuses %v (n %d) content %d; want every request failed with 405",
			r[1].Requests, r[1].Failures, r[1].FailStatus[:r[1].FailStatusN], r[1].FailStatusN, r[1].ContentBytes)
	}
	if r[0].ContentBytes != r[0].Requests*DefaultBodySize {
		t.Errorf("row 0 content %d; want %d", r[0].ContentBytes, r[0].Requests*DefaultBodySize)
	}
}

// TestStopClassInFlight: users stopped while their response is in flight
// finish it, then close; idle users close at once; connecting users close
// once connected. No request fails and the table is free afterwards.
func TestStopClassInFlight(t *testing.T) {
	const users = 100
	prog := oneClass(ProgramClass{Wait: Wait{Kind: WaitConstant, Min: 900 * time.Second},
		Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}})
	prog.Classes = append(prog.Classes, prog.Classes[0])
	p := usersPair(t, prog, 2*users, Config{}, Config{}, pipe.Config{})
	p.now += step
	p.c.LaunchClass(p.now, 0, users)
	for p.s.Poll(p.now) > 0 { // SYN-ACKs
	}
	for p.c.Poll(p.now) > 0 { // requests out, responses not yet
	}
	if got := p.c.Users(0); got != users {
		t.Fatalf("Users(0) = %d; want %d", got, users)
	}
	if got := p.c.StopClass(p.now, 0, users/2); got != users/2 {
		t.Fatalf("StopClass = %d; want %d", got, users/2)
	}
	if got := p.c.Users(0); got != users/2 {
		t.Fatalf("Users(0) = %d after stopping half; want %d", got, users/2)
	}
	// Class 1 users are stopped while connecting.
	p.c.LaunchClass(p.now, 1, users)
	p.c.StopClass(p.now, 1, users)
	p.run(t, 1000, func() bool { return p.s.Counters().SocketsClosed == users/2+users })
	var st Stats
	p.c.TakeStats(&st)
	c := p.c.Counters()
	check(t, "client", []want{{"rows requests", st.Rows[0].Requests, users}, {"failures", st.Rows[0].Failures, 0},
		{"SocketsCurrent", c.SocketsCurrent, users / 2}, {"HTTPRequests", c.HTTPRequests, users},
		{"SocketsFailed", c.SocketsFailed, 0}})
	// The rest wait 900 s: stopping them closes them now.
	if got := p.c.StopClass(p.now, 0, users); got != users/2 {
		t.Fatalf("StopClass(rest) = %d; want %d", got, users/2)
	}
	if got := p.c.StopClass(p.now, 0, users); got != 0 {
		t.Fatalf("StopClass(none left) = %d; want 0", got)
	}
	p.run(t, 1000, func() bool { return p.c.Counters().SocketsCurrent == 0 && p.s.Counters().SocketsCurrent == 0 })
	if p.c.Users(0)+p.c.Users(1) != 0 || p.c.wheel.n != 0 {
		t.Errorf("users %d+%d, wheel entries %d; want none", p.c.Users(0), p.c.Users(1), p.c.wheel.n)
	}
	// Every record is free again.
	if got := p.c.LaunchClass(p.now, 1, 2*users); got != 2*users {
		t.Errorf("LaunchClass after stopping all = %d; want %d", got, 2*users)
	}
}

// TestSecondRound: held users waiting 900 s all send their last request
// again on the same connection; no SYN; after the wait they go on.
func TestSecondRound(t *testing.T) {
	const users = 2000
	prog := &Program{Requests: []ProgramRequest{{Raw: get("/")}, {Raw: get("/second"), Stat: 1}},
		Classes: []ProgramClass{{Wait: Wait{Kind: WaitConstant, Min: 900 * time.Second},
			Tasks: []ProgramTask{{Weight: 1, Requests: []int{0, 1}}}}}}
	p := usersPair(t, prog, users, Config{}, Config{IdleTimeout: time.Hour}, pipe.Config{})
	p.run(t, 1000, p.launcherClass(0, users, 256, func() bool { return p.c.Counters().HTTP2xx == 2*users }))
	syns := p.c.Counters().SynOut
	if got := p.c.SecondRound(p.now); got != users {
		t.Fatalf("SecondRound = %d; want %d", got, users)
	}
	p.run(t, 1000, func() bool { return p.c.Counters().SecondRoundOK == users })
	var st Stats
	p.c.TakeStats(&st)
	c := p.c.Counters()
	check(t, "client", []want{{"SynOut", c.SynOut, syns}, {"SecondRoundSent", c.SecondRoundSent, users},
		{"SecondRoundFailed", c.SecondRoundFailed, 0}, {"row 1", st.Rows[1].Requests, 2 * users},
		{"row 0", st.Rows[0].Requests, users}, {"SocketsCurrent", c.SocketsCurrent, users}})
	// The 900 s wait still ends on time: the next task starts then.
	p.now += int64(899 * time.Second)
	p.poll()
	if got := p.c.Counters().HTTPRequests; got != 3*users {
		t.Fatalf("requests before the wait ended = %d; want %d", got, 3*users)
	}
	p.run(t, 2000, func() bool { return p.c.Counters().HTTP2xx == 5*users })
	if c := p.c.Counters(); c.SynOut != syns || c.Reconnects != 0 {
		t.Errorf("SynOut %d (want %d), Reconnects %d (want 0)", c.SynOut, syns, c.Reconnects)
	}
}

// drain polls both stacks at the same clock reading until neither
// receives a frame.
func (p *pair) drain(t testing.TB) {
	t.Helper()
	for range 100000 {
		if p.c.Poll(p.now)+p.s.Poll(p.now) == 0 {
			return
		}
	}
	t.Fatalf("still busy after 100,000 polls")
}

// launcherClass is launcher for one class of a Program.
func (p *pair) launcherClass(class, total, perTurn int, cond func() bool) func() bool {
	opened := 0
	return func() bool {
		if opened < total {
			opened += p.c.LaunchClass(p.now, class, min(perTurn, total-opened))
		}
		return opened == total && cond()
	}
}

// TestUsers10k: 10,000 users of two classes (weighted tasks with between
// waits and on_start; sequential tasks with constant pacing) for one
// second of fake time, then stopped: every count exact.
func TestUsers10k(t *testing.T) {
	const n0, n1 = 6000, 4000
	ms := time.Millisecond
	prog := &Program{
		Requests: []ProgramRequest{{Raw: get("/login")}, {Raw: get("/a"), Stat: 1}, {Raw: get("/b"), Stat: 2},
			{Raw: get("/c"), Stat: 3}, {Raw: get("/d"), Stat: 4}, {Raw: get("/e"), Stat: 4}},
		Classes: []ProgramClass{
			{OnStart: []int{0}, Wait: Wait{Kind: WaitBetween, Min: 10 * ms, Max: 20 * ms},
				Tasks: []ProgramTask{{Weight: 1, Requests: []int{1}}, {Weight: 3, Requests: []int{2, 3}}}},
			{Sequential: true, Wait: Wait{Kind: WaitConstantPacing, Min: 50 * ms},
				Tasks: []ProgramTask{{Requests: []int{4}}, {Requests: []int{5}}}},
		},
	}
	p := usersPair(t, prog, n0+n1, Config{}, Config{}, pipe.Config{})
	start := p.now
	l0 := p.launcherClass(0, n0, 500, func() bool { return true })
	l1 := p.launcherClass(1, n1, 500, func() bool { return true })
	p.run(t, 2000, func() bool { a, b := l0(), l1(); return a && b && p.now-start >= int64(time.Second) })
	p.drain(t)
	if p.c.Users(0) != n0 || p.c.Users(1) != n1 {
		t.Fatalf("users %d, %d; want %d, %d", p.c.Users(0), p.c.Users(1), n0, n1)
	}
	p.c.StopClass(p.now, 0, n0)
	p.c.StopClass(p.now, 1, n1)
	p.run(t, 2000, func() bool { return p.c.Counters().SocketsCurrent == 0 && p.s.Counters().SocketsCurrent == 0 })
	var st Stats
	p.c.TakeStats(&st)
	r := st.Rows
	c, s := p.c.Counters(), p.s.Counters()
	req, fail := rowTotals(&st)
	check(t, "client", []want{{"on_start", r[0].Requests, n0}, {"failures", fail, 0}, {"HTTPRequests", c.HTTPRequests, req},
		{"HTTP2xx", c.HTTP2xx, req}, {"SocketsOpened", c.SocketsOpened, n0 + n1}, {"SocketsClosed", c.SocketsClosed, n0 + n1},
		{"SocketsFailed", c.SocketsFailed, 0}, {"Reconnects", c.Reconnects, 0}, {"RstOut", c.RstOut, 0}, {"second request of task", r[3].Requests, r[2].Requests}})
	check(t, "server", []want{{"Served200", s.Served200, req}, {"SocketsClosed", s.SocketsClosed, n0 + n1}, {"RstIn", s.RstIn, 0}})
	// Weights 1:3 over about 6000 * 1 s / 15 ms = 400,000 tasks.
	if a, b := float64(r[1].Requests), float64(r[2].Requests); b/a < 2.85 || b/a > 3.15 {
		t.Errorf("weighted tasks %v : %v; want 1 : 3 ± 5%%", a, b)
	}
	// Pacing 50 ms over about 1 s: 20 tasks per user, the first wait being
	// the full period too.
	if got := r[4].Requests; got < 18*n1 || got > 21*n1 {
		t.Errorf("paced tasks %d; want about %d", got, 20*n1)
	}
	if r[0].ContentBytes != n0*DefaultBodySize {
		t.Errorf("on_start content %d; want %d", r[0].ContentBytes, n0*DefaultBodySize)
	}
}

// TestUsersReconnect: the server drops idle connections (reset after its
// IdleTimeout); users waiting longer reconnect from the same record on
// their next task, keep their class, and nothing counts as failed.
func TestUsersReconnect(t *testing.T) {
	const users = 50
	prog := oneClass(ProgramClass{OnStart: []int{0}, Wait: Wait{Kind: WaitConstant, Min: 300 * time.Millisecond},
		Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}})
	p := usersPair(t, prog, users, Config{}, Config{IdleTimeout: 100 * time.Millisecond}, pipe.Config{})
	p.c.LaunchClass(p.now, 0, users)
	p.run(t, 5000, func() bool { return p.c.Counters().HTTP2xx >= 4*users })
	var st Stats
	p.c.TakeStats(&st)
	c := p.c.Counters()
	if c.Reconnects < 2*users || st.Rows[0].Failures != 0 || c.SocketsOpened != users+c.Reconnects || p.c.Users(0) != users {
		t.Errorf("reconnects %d, failures %d, opened %d, users %d; want >= %d, 0, users+reconnects, %d",
			c.Reconnects, st.Rows[0].Failures, c.SocketsOpened, p.c.Users(0), 2*users, users)
	}
}

// TestUsersConnectionClose: every response says Connection: close: the
// user closes, reconnects at once and goes on with the rest of its task on
// the new connection; nothing fails.
func TestUsersConnectionClose(t *testing.T) {
	const users = 5
	prog := &Program{Requests: []ProgramRequest{{Raw: get("/a")}, {Raw: get("/b"), Stat: 1}, {Raw: get("/c"), Stat: 2}},
		Classes: []ProgramClass{{Wait: Wait{Kind: WaitConstant, Min: 10 * time.Millisecond},
			Tasks: []ProgramTask{{Weight: 1, Requests: []int{0, 1, 2}}}}}}
	p := usersPair(t, prog, users, Config{}, Config{}, pipe.Config{})
	p.s.pages[0] = []byte("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
	p.c.LaunchClass(p.now, 0, users)
	var st Stats
	p.run(t, 5000, func() bool { p.c.TakeStats(&st); return st.Rows[2].Requests >= 20*users })
	p.c.StopClass(p.now, 0, users)
	p.run(t, 5000, func() bool { return p.c.Counters().SocketsCurrent == 0 && p.s.Counters().SocketsCurrent == 0 })
	p.c.TakeStats(&st)
	c, s := p.c.Counters(), p.s.Counters()
	req, fail := rowTotals(&st)
	check(t, "client", []want{{"failures", fail, 0}, {"SocketsFailed", c.SocketsFailed, 0}, {"HTTP2xx", c.HTTP2xx, req},
		{"SocketsOpened (one per request)", c.SocketsOpened, req}, {"Reconnects", c.Reconnects, req - users},
		{"task rows equal", st.Rows[0].Requests - st.Rows[2].Requests, 0}})
	check(t, "server", []want{{"RstIn", s.RstIn, 0}, {"SocketsClosed", s.SocketsClosed, req}})
}

// TestUsersConnectFailed: a server that never answers: each user's SYN
// retries run out, the request it was about to send fails as a connection
// failure, and the user reconnects after its wait.
func TestUsersConnectFailed(t *testing.T) {
	const users = 5
	prog := oneClass(ProgramClass{Wait: Wait{Kind: WaitConstant, Min: 50 * time.Millisecond},
		Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}})
	p := usersPair(t, prog, users, Config{MaxRetries: 1, RetransmitTimeout: 10 * time.Millisecond}, Config{ServerPort: 81}, pipe.Config{})
	p.c.LaunchClass(p.now, 0, users)
	var st Stats
	p.run(t, 5000, func() bool { p.c.TakeStats(&st); return st.Rows[0].Requests >= 3*users })
	r := st.Rows[0]
	c := p.c.Counters()
	if r.FailConnect != r.Requests || r.Failures != r.Requests || c.HTTPRequests != 0 || c.Reconnects < 2*users {
		t.Errorf("row: requests %d failures %d connect %d; requests sent %d, reconnects %d", r.Requests, r.Failures, r.FailConnect, c.HTTPRequests, c.Reconnects)
	}
	// A failed connect's time is the SYN's first transmission to the
	// reset: 10 ms + 20 ms of backoff.
	if r.RespTimeMinUs != 30000 || r.RespTimeMaxUs != 30000 {
		t.Errorf("connect failure times %d..%d µs; want 30000", r.RespTimeMinUs, r.RespTimeMaxUs)
	}
}

// TestBackoff: SYN retransmissions at RTO, 2 RTO, 4 RTO ... capped at
// MaxRetransmitTimeout, then the reset.
func TestBackoff(t *testing.T) {
	ms := int64(time.Millisecond)
	p := newPair(t, Config{MaxRetries: 6, RetransmitTimeout: 200 * time.Millisecond, MaxRetransmitTimeout: time.Second},
		Config{ServerPort: 81}, pipe.Config{})
	p.run(t, 100, func() bool { return p.c.Resolved() })
	p.c.Launch(p.now, 1)
	start := p.now
	var at []int64
	syns := p.c.Counters().SynOut
	p.run(t, 10000, func() bool {
		if c := p.c.Counters(); c.SynOut != syns {
			syns = c.SynOut
			at = append(at, (p.now-start)/ms)
		}
		return p.c.Counters().SocketsClosed == 1
	})
	want := []int64{200, 600, 1400, 2400, 3400, 4400}
	if len(at) != len(want) {
		t.Fatalf("retransmissions at %v ms; want %v", at, want)
	}
	for k := range want {
		if at[k] != want[k] {
			t.Fatalf("retransmissions at %v ms; want %v", at, want)
		}
	}
	if end := (p.now - start) / ms; end != 5400 {
		t.Errorf("reset at %d ms; want 5400", end)
	}
}

// TestStaleAckReset: in SYN-SENT, an ACK that does not acknowledge our SYN
// (the peer still holds the port's old incarnation) is answered with
// <SEQ=SEG.ACK><CTL=RST>; a FIN of the old incarnation gets the ACK
// TIME_WAIT would have sent.
func TestStaleAckReset(t *testing.T) {
	p := newPair(t, Config{PortMin: 10000, PortMax: 10000}, Config{PortMin: 10000, PortMax: 10000}, pipe.Config{})
	p.run(t, 100, func() bool { return p.c.Resolved() })
	p.c.Launch(p.now, 1)
	rawPeer{t, p.sb}.recv() // the SYN, not to the server
	p.s.setNextHop(p.ca.MAC())
	for _, tt := range []struct {
		name      string
		flags     uint8
		wantFlags uint8
		wantSeq   uint32
	}{
		{"ack", wire.TCPAck, wire.TCPRst, 7000},
		{"fin", wire.TCPAck | wire.TCPFin, wire.TCPAck, 7000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const seq, ack = 5000, 7000
			tpl := p.s.tAck
			if tt.flags&wire.TCPFin != 0 {
				tpl = p.s.tFin
			}
			p.s.emit(&tpl, 0, seq, ack, nil, 0)
			p.s.flush()
			p.c.Poll(p.now)
			got := rawPeer{t, p.sb}.recv()
			if len(got) != 1 {
				t.Fatalf("client frames = %d; want 1\n%+v", len(got), p.c.Counters())
			}
			ip, _ := wire.ParseIPv4(wire.Ethernet(got[0]).Payload())
			seg, _ := wire.ParseTCP(ip.Payload())
			if seg.Flags() != tt.wantFlags || seg.Seq() != tt.wantSeq || !seg.ChecksumValid(ip.Src(), ip.Dst()) {
				t.Errorf("answer flags %#x seq %d; want %#x seq %d, valid checksum", seg.Flags(), seg.Seq(), tt.wantFlags, tt.wantSeq)
			}
		})
	}
	if c := p.c.Counters(); c.StaleAckRst != 1 || c.SocketsCurrent != 1 {
		t.Errorf("StaleAckRst %d, SocketsCurrent %d; want 1, 1 (still connecting)", c.StaleAckRst, c.SocketsCurrent)
	}
}

// TestLateFINAckedOnce: a late FIN of the port's last incarnation is ACKed
// once, in the closed record and after its reuse (SYN-SENT) alike: a
// duplicate draws nothing, where a second ACK would draw a reset from a peer
// that already closed. The next connection's late FIN is ACKed again.
func TestLateFINAckedOnce(t *testing.T) {
	p := newPair(t, Config{PortMin: 10000, PortMax: 10000}, Config{PortMin: 10000, PortMax: 10000}, pipe.Config{})
	p.run(t, 1000, p.launcher(1, 1, func() bool { return p.c.Counters().SocketsClosed == 1 && p.s.Counters().SocketsClosed == 1 }))
	peer := rawPeer{t, p.sb}
	fin := func(seq uint32) int {
		p.s.emit(&p.s.tFin, 0, seq, 7000, nil, 0)
		p.s.flush()
		p.c.Poll(p.now)
		return len(peer.recv())
	}
	// Right after the close, a FIN is the peer's retransmission crossing
	// the ACK that closed the record: not answered (a second ACK would
	// draw a reset from the peer that ACK closed).
	if n := fin(5000); n != 0 {
		t.Fatalf("FIN crossing the closing ACK drew %d frames; want none", n)
	}
	p.now += lateAckQuiet
	if n := fin(5000); n != 1 {
		t.Fatalf("closed record: first late FIN drew %d frames; want 1 ACK", n)
	}
	if n := fin(5000); n != 0 {
		t.Fatalf("closed record: duplicate late FIN drew %d frames; want none", n)
	}
	p.c.Launch(p.now, 1)
	if n := len(peer.recv()); n != 1 {
		t.Fatalf("launch sent %d frames; want the SYN", n)
	}
	if n := fin(5000); n != 0 {
		t.Fatalf("SYN-SENT: duplicate late FIN drew %d frames; want none", n)
	}
	// The SYN's retransmission reaches the server: a new connection, and
	// its own late FIN is ACKed again.
	p.run(t, 5000, func() bool { return p.c.Counters().SocketsClosed == 2 && p.s.Counters().SocketsClosed == 2 })
	p.now += lateAckQuiet
	if n := fin(9000); n != 1 {
		t.Fatalf("after the next connection, a late FIN drew %d frames; want 1 ACK", n)
	}
}

// TestReusedPortISS: a reused record's SYN starts above everything its
// last connection sent, so a peer holding that one in TIME_WAIT accepts it.
func TestReusedPortISS(t *testing.T) {
	p := newPair(t, Config{PortMin: 10000, PortMax: 10000}, Config{PortMin: 10000, PortMax: 10000}, pipe.Config{})
	p.run(t, 1000, p.launcher(1, 1, func() bool { return p.c.Counters().SocketsClosed == 1 && p.s.Counters().SocketsClosed == 1 }))
	last := p.c.conns[0].sndNxt
	p.run(t, 1000, p.launcher(1, 1, func() bool { return p.c.Counters().SocketsClosed == 2 && p.s.Counters().SocketsClosed == 2 }))
	if got, want := p.c.conns[0].iss, last+0xffff+2; got != want {
		t.Errorf("second ISS = %#x; want %#x (last sndNxt %#x + 65537)", got, want, last)
	}
	if c := p.c.Counters(); c.HTTP2xx != 2 || c.RstOut != 0 {
		t.Errorf("2xx %d, RstOut %d; want 2, 0", c.HTTP2xx, c.RstOut)
	}
}

// TestPortReuseLossy: 2,000 short connections over 10 ports with 5 % loss
// each way: every port is reused while the server may still retransmit its
// FIN; all succeed and the server stack receives no reset.
func TestPortReuseLossy(t *testing.T) {
	const n, ports = 2000, 10
	for _, seed := range []uint64{1, 2} {
		p := newPair(t, Config{PortMin: 30000, PortMax: 30000 + ports - 1, MaxRetries: 10},
			Config{PortMin: 30000, PortMax: 30000 + ports - 1, MaxRetries: 10},
			pipe.Config{Loss: 0.05, Seed: seed})
		p.run(t, 400000, p.launcher(n, 4, func() bool {
			return p.c.Counters().SocketsClosed == n && p.s.Counters().SocketsCurrent == 0
		}))
		c, s := p.c.Counters(), p.s.Counters()
		check(t, "client", []want{{"HTTP2xx", c.HTTP2xx, n}, {"SocketsFailed", c.SocketsFailed, 0}, {"RstIn", c.RstIn, 0}})
		check(t, "server", []want{{"RstIn", s.RstIn, 0}, {"SocketsFailed", s.SocketsFailed, 0}, {"Served200", s.Served200, n}})
		if lost := p.ca.Injected().Lost + p.sb.Injected().Lost; lost == 0 || c.LaunchSkipped == 0 {
			t.Errorf("lost %d frames, skipped %d launches; want both > 0 (loss and reuse exercised)", lost, c.LaunchSkipped)
		}
	}
}

// TestUsersAllocateNothing: turns of users with wheel waits, stats taken
// into a reused Stats, allocate nothing.
func TestUsersAllocateNothing(t *testing.T) {
	prog := oneClass(ProgramClass{OnStart: []int{0}, Wait: Wait{Kind: WaitBetween, Min: time.Millisecond, Max: 5 * time.Millisecond},
		Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}, {Weight: 2, Requests: []int{0, 0}}}})
	p := usersPair(t, prog, 1000, Config{}, Config{}, pipe.Config{})
	p.c.LaunchClass(p.now, 0, 1000)
	var st Stats
	p.c.TakeStats(&st)
	allocs := testing.AllocsPerRun(200, func() {
		p.now += step
		p.poll()
		p.c.TakeStats(&st)
		p.c.SecondRound(p.now)
	})
	if allocs != 0 {
		t.Errorf("allocs per turn = %v; want 0", allocs)
	}
	if st.Rows[0].Requests == 0 {
		t.Errorf("no request counted in the measured turns")
	}
}

// TestSecondRoundEveryStage: users waiting, running on_start with a
// request in flight, connecting, and in the middle of a two-request task
// all take part in a round, exactly once each: the waiting ones at once,
// the others as soon as their task ends (not after their 900 s wait); no
// user opens a new connection; a second call while the round runs takes
// nobody in.
func TestSecondRoundEveryStage(t *testing.T) {
	const n = 10 // users per stage
	prog := &Program{
		Requests: []ProgramRequest{{Raw: get("/login")}, {Raw: get("/me"), Stat: 1}, {Raw: get("/a"), Stat: 2}, {Raw: get("/b"), Stat: 3}},
		Classes: []ProgramClass{
			{OnStart: []int{0, 1}, Wait: Wait{Kind: WaitConstant, Min: 900 * time.Second}, Tasks: []ProgramTask{{Weight: 1, Requests: []int{2}}}},
			{Wait: Wait{Kind: WaitConstant, Min: 900 * time.Second}, Tasks: []ProgramTask{{Weight: 1, Requests: []int{2, 3}}}},
		},
	}
	p := usersPair(t, prog, 4*n, Config{}, Config{}, pipe.Config{})
	// Waiting: on_start done, 900 s to wait.
	p.c.LaunchClass(p.now, 0, n)
	p.drain(t)
	if got := p.c.Counters().HTTP2xx; got != 2*n {
		t.Fatalf("HTTP2xx = %d after the first users' on_start; want %d", got, 2*n)
	}
	// In on_start (class 0) and mid-task (class 1), a request in flight.
	p.c.LaunchClass(p.now, 0, n)
	p.c.LaunchClass(p.now, 1, n)
	p.s.Poll(p.now) // SYN-ACKs
	p.c.Poll(p.now) // first requests out
	// Connecting: SYNs not yet at the server.
	p.c.LaunchClass(p.now, 0, n)
	syns := p.c.Counters().SynOut
	if got := p.c.SecondRound(p.now); got != 4*n {
		t.Fatalf("SecondRound = %d; want %d (every stage)", got, 4*n)
	}
	c := p.c.Counters()
	check(t, "after SecondRound", []want{{"SecondRoundSent", c.SecondRoundSent, n}, {"SecondRoundPending", c.SecondRoundPending, 3 * n}})
	if got := p.c.SecondRound(p.now); got != 0 {
		t.Fatalf("SecondRound during a round = %d; want 0", got)
	}
	p.run(t, 1000, func() bool { return p.c.Counters().SecondRoundOK+p.c.Counters().SecondRoundFailed == 4*n })
	// One more second of fake time: nobody sends anything more.
	end := p.now + int64(time.Second)
	p.run(t, 2000, func() bool { return p.now >= end })
	var st Stats
	p.c.TakeStats(&st)
	c = p.c.Counters()
	const requests = 3*n*3 + n*3 // on_start 2 + round 1 each; task 2 + round 1 each
	check(t, "client", []want{{"SecondRoundOK", c.SecondRoundOK, 4 * n}, {"SecondRoundSent", c.SecondRoundSent, 4 * n},
		{"SecondRoundFailed", c.SecondRoundFailed, 0}, {"SecondRoundLost", c.SecondRoundLost, 0},
		{"SecondRoundPending", c.SecondRoundPending, 0}, {"SynOut", c.SynOut, syns}, {"SocketsOpened", c.SocketsOpened, 4 * n},
		{"HTTPRequests", c.HTTPRequests, requests}, {"HTTP2xx", c.HTTP2xx, requests},
		{"row /login", st.Rows[0].Requests, 3 * n}, {"row /me", st.Rows[1].Requests, 6 * n},
		{"row /a", st.Rows[2].Requests, n}, {"row /b", st.Rows[3].Requests, 2 * n}, {"SocketsCurrent", c.SocketsCurrent, 4 * n}})
}

// TestSecondRoundLost: marked users whose request cannot go count as
// failed (and lost), once each, and leave the pending gauge: a connect
// that fails, a user stopped before its task ends, a peer that closes the
// connection with the response, and a user without a connection.
func TestSecondRoundLost(t *testing.T) {
	const n = 5
	closePage := []byte("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
	prog := oneClass(ProgramClass{Wait: Wait{Kind: WaitConstant, Min: 900 * time.Second},
		Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}})
	for _, tc := range []struct {
		name   string
		cc, sc Config
		// setup runs before SecondRound, then act after it.
		setup, act func(p *pair)
		marked     uint64 // pending after SecondRound
	}{
		{name: "connect fails", cc: Config{MaxRetries: 1, RetransmitTimeout: 10 * time.Millisecond}, sc: Config{ServerPort: 81},
			setup: func(p *pair) { p.c.LaunchClass(p.now, 0, n) }, act: func(*pair) {}, marked: n},
		{name: "stopped", setup: func(p *pair) { p.c.LaunchClass(p.now, 0, n) },
			act: func(p *pair) { p.c.StopClass(p.now, 0, n) }, marked: n},
		{name: "peer closes", setup: func(p *pair) {
			p.s.pages[0] = closePage
			p.c.LaunchClass(p.now, 0, n)
		}, act: func(*pair) {}, marked: n},
		{name: "no connection", setup: func(p *pair) {
			p.s.pages[0] = closePage
			p.c.LaunchClass(p.now, 0, n)
			p.drain(t) // closed, waiting 900 s to reconnect
		}, act: func(*pair) {}, marked: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := usersPair(t, prog, n, tc.cc, tc.sc, pipe.Config{})
			tc.setup(p)
			if got := p.c.SecondRound(p.now); got != n {
				t.Fatalf("SecondRound = %d; want %d", got, n)
			}
			if got := p.c.Counters().SecondRoundPending; got != tc.marked {
				t.Fatalf("SecondRoundPending = %d; want %d", got, tc.marked)
			}
			tc.act(p)
			p.run(t, 1000, func() bool { return p.c.Counters().SecondRoundFailed >= n })
			p.run(t, 100, func() bool { return true })
			c := p.c.Counters()
			check(t, "client", []want{{"SecondRoundFailed", c.SecondRoundFailed, n}, {"SecondRoundLost", c.SecondRoundLost, n},
				{"SecondRoundPending", c.SecondRoundPending, 0}, {"SecondRoundSent", c.SecondRoundSent, 0},
				{"SecondRoundOK", c.SecondRoundOK, 0}})
		})
	}
}
