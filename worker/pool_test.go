package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

type nopRecorder struct{ n atomic.Int64 }

func (r *nopRecorder) Record(method, name string, rt time.Duration, cl int64, failure string) {
	r.n.Add(1)
}

type excLog struct {
	mu   sync.Mutex
	msgs []string
	tbs  []string
}

func (l *excLog) add(msg, tb string) {
	l.mu.Lock()
	l.msgs = append(l.msgs, msg)
	l.tbs = append(l.tbs, tb)
	l.mu.Unlock()
}

func (l *excLog) snapshot() ([]string, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...), append([]string(nil), l.tbs...)
}

func newTestPool(t testing.TB, classes ...*UserClass) (*pool, *excLog) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	el := &excLog{}
	e := &env{rec: &nopRecorder{}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), runCtx: ctx, onExc: el.add}
	var cs []*compiledClass
	for _, c := range classes {
		cc, err := compileClass(c)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, cc)
	}
	p := newPool(e, cs)
	t.Cleanup(func() {
		b := p.stopAll()
		b.start()
		b.wait(0, 5*time.Second, nil)
		if !p.waitIdle(5 * time.Second) {
			t.Errorf("users still alive after cleanup: %d", p.nLive.Load())
		}
	})
	return p, el
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testpeer.Eventually(t, d, what, cond)
}

func TestPoolApplyAbsoluteCounts(t *testing.T) {
	var runs atomic.Int64
	task := Task{Name: "t", Fn: func(ctx context.Context, u *User) error { runs.Add(1); return nil }}
	a := &UserClass{Name: "A", Wait: Constant(time.Hour), Tasks: []Task{task}}
	b := &UserClass{Name: "B", Wait: Constant(time.Hour), Tasks: []Task{task}}
	p, _ := newTestPool(t, a, b)

	steps := []struct {
		target map[string]int64
		wantA  int64
		wantB  int64
	}{
		{map[string]int64{"A": 3, "B": 1}, 3, 1},
		{map[string]int64{"A": 5, "B": 1}, 5, 1},
		{map[string]int64{"A": 2, "B": 0}, 2, 0},
		{map[string]int64{"A": 2, "B": 4}, 2, 4},
		{map[string]int64{"A": 0, "B": 0}, 0, 0},
	}
	for i, s := range steps {
		unknown, batch := p.apply(s.target)
		if len(unknown) != 0 {
			t.Fatalf("step %d: unknown %v", i, unknown)
		}
		batch.start()
		if !batch.wait(time.Second, time.Second, nil) {
			t.Fatalf("step %d: batch did not finish", i)
		}
		m, total := p.counts()
		if m["A"] != s.wantA || m["B"] != s.wantB || total != s.wantA+s.wantB {
			t.Fatalf("step %d: counts() = %v, %d; want A=%d B=%d", i, m, total, s.wantA, s.wantB)
		}
		waitFor(t, 5*time.Second, "live users", func() bool { return p.nLive.Load() == total })
	}
	if runs.Load() == 0 {
		t.Fatal("no task ran")
	}
}

func TestPoolStopsLIFO(t *testing.T) {
	var mu sync.Mutex
	var stopped []int
	var next atomic.Int64
	a := &UserClass{Name: "A", Wait: Constant(time.Hour),
		OnStart: func(ctx context.Context, u *User) error { u.Data = int(next.Add(1)); return nil },
		Tasks:   []Task{{Name: "t", Fn: func(context.Context, *User) error { return nil }}},
		OnStop: func(ctx context.Context, u *User) error {
			mu.Lock()
			stopped = append(stopped, u.Data.(int))
			mu.Unlock()
			return nil
		}}
	p, _ := newTestPool(t, a)
	for i := 1; i <= 4; i++ {
		_, b := p.apply(map[string]int64{"A": int64(i)})
		b.start()
		// wait until that user ran OnStart, so Data reflects start order
		waitFor(t, 5*time.Second, "user start", func() bool { return next.Load() == int64(i) })
	}
	_, b := p.apply(map[string]int64{"A": 2})
	b.start()
	if !b.wait(5*time.Second, time.Second, nil) {
		t.Fatal("stop batch did not finish")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stopped) != 2 || !((stopped[0] == 4 && stopped[1] == 3) || (stopped[0] == 3 && stopped[1] == 4)) {
		t.Fatalf("stopped users = %v; want the last two started (4, 3)", stopped)
	}
}

func TestPoolGracefulThenForced(t *testing.T) {
	release := make(chan struct{})
	var entered, finished, interrupted atomic.Int64
	slow := &UserClass{Name: "S", Wait: Constant(time.Hour), Tasks: []Task{{Name: "slow", Fn: func(ctx context.Context, u *User) error {
		entered.Add(1)
		select {
		case <-release:
			finished.Add(1)
		case <-ctx.Done():
			interrupted.Add(1)
			return ctx.Err()
		}
		return nil
	}}}}
	p, exc := newTestPool(t, slow)
	_, b := p.apply(map[string]int64{"S": 2})
	b.start()
	waitFor(t, 5*time.Second, "users in their task", func() bool { return entered.Load() == 2 })

	// graceful: the stopped user's task completes within the grace period
	_, b = p.apply(map[string]int64{"S": 1})
	b.start()
	go func() { release <- struct{}{}; release <- struct{}{} }()
	if !b.wait(10*time.Second, time.Second, nil) {
		t.Fatal("graceful stop did not finish")
	}
	waitFor(t, 5*time.Second, "both tasks to finish", func() bool { return finished.Load() == 2 })
	if interrupted.Load() != 0 {
		t.Fatalf("interrupted=%d; want 0", interrupted.Load())
	}
	// forced: a new user blocks in its task, grace expires, ctx is cancelled
	_, b = p.apply(map[string]int64{"S": 2})
	b.start()
	waitFor(t, 5*time.Second, "new user in its task", func() bool { return entered.Load() == 3 })
	_, b = p.apply(map[string]int64{"S": 0})
	b.start()
	if !b.wait(50*time.Millisecond, 5*time.Second, nil) {
		t.Fatal("forced stop did not finish")
	}
	if interrupted.Load() != 1 {
		t.Fatalf("interrupted=%d; want 1", interrupted.Load())
	}
	if msgs, _ := exc.snapshot(); len(msgs) != 0 {
		t.Fatalf("a forced stop reported exceptions %v", msgs)
	}
}

func TestPoolPanicAndErrorsAreExceptions(t *testing.T) {
	var n atomic.Int64
	c := &UserClass{Name: "P", Wait: Constant(time.Millisecond), Tasks: []Task{
		{Name: "boom", Fn: func(context.Context, *User) error {
			if n.Add(1)%2 == 0 {
				panic("kaboom")
			}
			return errors.New("plain failure")
		}},
	}}
	p, exc := newTestPool(t, c)
	_, b := p.apply(map[string]int64{"P": 1})
	b.start()
	waitFor(t, 5*time.Second, "exceptions", func() bool { m, _ := exc.snapshot(); return len(m) >= 4 })
	msgs, tbs := exc.snapshot()
	var sawPanic, sawErr bool
	for i, m := range msgs {
		switch {
		case m == "panic: kaboom":
			sawPanic = true
			if !strings.Contains(tbs[i], "in task P.boom (panic)") || strings.Contains(tbs[i], "goroutine ") {
				t.Errorf("panic traceback = %q", tbs[i])
			}
		case m == "plain failure":
			sawErr = true
			if tbs[i] != "in task P.boom\n" {
				t.Errorf("error traceback = %q", tbs[i])
			}
		}
	}
	if !sawPanic || !sawErr {
		t.Fatalf("exceptions = %v; want a panic and an error", msgs)
	}
	// the user keeps running after panics
	if _, total := p.counts(); total != 1 {
		t.Fatalf("user count after panics = %d; want 1", total)
	}
}

func TestPoolStopUser(t *testing.T) {
	c := &UserClass{Name: "Q", Tasks: []Task{{Name: "quit", Fn: func(context.Context, *User) error { return ErrStopUser }}}}
	p, exc := newTestPool(t, c)
	_, b := p.apply(map[string]int64{"Q": 3})
	b.start()
	waitFor(t, 5*time.Second, "users to stop themselves", func() bool {
		_, total := p.counts()
		return total == 0 && p.nLive.Load() == 0
	})
	if m, _ := exc.snapshot(); len(m) != 0 {
		t.Fatalf("ErrStopUser reported as exceptions: %v", m)
	}
}

func TestPoolSingleClassServesAnyName(t *testing.T) {
	c := &UserClass{Name: "Only", Wait: Constant(time.Hour), Tasks: []Task{{Name: "t", Fn: func(context.Context, *User) error { return nil }}}}
	p, _ := newTestPool(t, c)
	unknown, b := p.apply(map[string]int64{"Other": 2})
	b.start()
	if len(unknown) != 0 {
		t.Fatalf("unknown = %v; want none", unknown)
	}
	if m, total := p.counts(); m["Other"] != 2 || total != 2 {
		t.Fatalf("counts = %v %d; want Other=2", m, total)
	}
}

// TestPoolExactClassNames: with Scenario.ExactClassNames (a locustfile's
// classes) a single class serves only its own name.
func TestPoolExactClassNames(t *testing.T) {
	c := &UserClass{Name: "Only", Wait: Constant(time.Hour), Tasks: []Task{{Name: "t", Fn: func(context.Context, *User) error { return nil }}}}
	p, _ := newTestPool(t, c)
	p.exact = true
	unknown, b := p.apply(map[string]int64{"Other": 2, "Only": 1})
	b.start()
	if len(unknown) != 1 || unknown[0] != "Other" {
		t.Fatalf("unknown = %v; want [Other]", unknown)
	}
	if m, total := p.counts(); m["Only"] != 1 || total != 1 {
		t.Fatalf("counts = %v %d; want Only=1", m, total)
	}
}

func TestPoolUnknownClass(t *testing.T) {
	task := Task{Name: "t", Fn: func(context.Context, *User) error { return nil }}
	p, _ := newTestPool(t, &UserClass{Name: "A", Tasks: []Task{task}, Wait: Constant(time.Hour)},
		&UserClass{Name: "B", Tasks: []Task{task}, Wait: Constant(time.Hour)})
	unknown, b := p.apply(map[string]int64{"A": 1, "Nope": 3, "Zero": 0})
	b.start()
	if len(unknown) != 1 || unknown[0] != "Nope" {
		t.Fatalf("unknown = %v; want [Nope]", unknown)
	}
	if m, total := p.counts(); m["A"] != 1 || total != 1 {
		t.Fatalf("counts = %v %d", m, total)
	}
}

func TestSequentialTasks(t *testing.T) {
	var mu sync.Mutex
	var order []string
	rec := func(name string) TaskFunc {
		return func(context.Context, *User) error {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return nil
		}
	}
	c := &UserClass{Name: "S", Sequential: true, Tasks: []Task{
		{Name: "a", Fn: rec("a"), Weight: 2}, {Name: "b", Fn: rec("b")},
	}}
	stop := make(chan struct{})
	c.Tasks = append(c.Tasks, Task{Name: "c", Fn: func(ctx context.Context, u *User) error {
		mu.Lock()
		order = append(order, "c")
		n := len(order)
		mu.Unlock()
		if n >= 8 {
			<-stop
			return ErrStopUser
		}
		return nil
	}})
	p, _ := newTestPool(t, c)
	_, b := p.apply(map[string]int64{"S": 1})
	b.start()
	waitFor(t, 5*time.Second, "8 tasks", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) >= 8 })
	close(stop)
	mu.Lock()
	got := strings.Join(order[:8], "")
	mu.Unlock()
	if got != "aabcaabc" {
		t.Fatalf("sequential order = %q; want aabcaabc", got)
	}
}

func TestWeightedPick(t *testing.T) {
	noop := func(context.Context, *User) error { return nil }
	cc, err := compileClass(&UserClass{Name: "W", Tasks: []Task{{Name: "a", Weight: 3, Fn: noop}, {Name: "b", Weight: 1, Fn: noop}}})
	if err != nil {
		t.Fatal(err)
	}
	u := &User{class: &classRT{def: cc}}
	var counts [2]int
	const n = 40000
	for range n {
		counts[u.pick()]++
	}
	if frac := float64(counts[0]) / n; frac < 0.72 || frac > 0.78 {
		t.Fatalf("task a picked %.3f of the time; want about 0.75", frac)
	}
}

func TestCompileClassErrors(t *testing.T) {
	noop := func(context.Context, *User) error { return nil }
	tests := []struct {
		name string
		c    UserClass
	}{
		{"no name", UserClass{Tasks: []Task{{Fn: noop}}}},
		{"no tasks", UserClass{Name: "X"}},
		{"nil fn", UserClass{Name: "X", Tasks: []Task{{Name: "t"}}}},
		{"negative weight", UserClass{Name: "X", Weight: -1, Tasks: []Task{{Fn: noop}}}},
		{"negative task weight", UserClass{Name: "X", Tasks: []Task{{Fn: noop, Weight: -2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := compileClass(&tt.c); !errors.Is(err, ErrScenario) {
				t.Fatalf("compileClass(%s) = %v; want ErrScenario", tt.name, err)
			}
		})
	}
}

func TestWaitTimes(t *testing.T) {
	u := &User{}
	if got := Constant(2 * time.Second)(u); got != 2*time.Second {
		t.Fatalf("Constant(2s) = %v", got)
	}
	b := Between(time.Second, 3*time.Second)
	for range 1000 {
		if got := b(u); got < time.Second || got > 3*time.Second {
			t.Fatalf("Between(1s,3s) = %v", got)
		}
	}
	if got := Between(time.Second, time.Second)(u); got != time.Second {
		t.Fatalf("Between(1s,1s) = %v", got)
	}
	// ConstantPacing: first call returns d; later calls subtract task time.
	p := ConstantPacing(100 * time.Millisecond)
	if got := p(u); got != 100*time.Millisecond {
		t.Fatalf("first ConstantPacing = %v", got)
	}
	// Pretend the wait and then a 30 ms task happened.
	u.cpLastRun -= int64(130 * time.Millisecond)
	got := p(u)
	if got < 65*time.Millisecond || got > 70*time.Millisecond {
		t.Fatalf("ConstantPacing after a 30 ms task = %v; want about 70ms", got)
	}
	// A task longer than the pacing: no wait.
	u.cpLastRun -= int64(got + 500*time.Millisecond)
	if got := p(u); got != 0 {
		t.Fatalf("ConstantPacing after a long task = %v; want 0", got)
	}
	if got := ConstantThroughput(4)(&User{}); got != 250*time.Millisecond {
		t.Fatalf("ConstantThroughput(4) first = %v; want 250ms", got)
	}
}

// TestIdleUserMemory measures the heap bytes an idle user holds (no HTTP
// client): the User, its context, its timer.
func TestIdleUserMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("memory measurement")
	}
	c := &UserClass{Name: "Idle", Wait: Constant(time.Hour), Tasks: []Task{{Name: "t", Fn: func(context.Context, *User) error { return nil }}}}
	p, _ := newTestPool(t, c)
	const n = 20000
	before := heapInUse()
	_, b := p.apply(map[string]int64{"Idle": n})
	b.start()
	waitFor(t, 30*time.Second, "users idle", func() bool { return idleUsers(p) == n })
	after := heapInUse()
	per := float64(after-before) / n
	t.Logf("idle user without HTTP client: %.0f bytes (heap) per user, %d goroutines", per, runtime.NumGoroutine())
	if per > 2048 {
		t.Errorf("idle user costs %.0f bytes; want ≤ 2048 before its HTTP client", per)
	}
}

func idleUsers(p *pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.classes {
		for _, u := range c.users {
			u.mu.Lock()
			if u.state == stWaiting {
				n++
			}
			u.mu.Unlock()
		}
	}
	return n
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

func BenchmarkSpawnUsers(b *testing.B) {
	c := &UserClass{Name: "B", Wait: Constant(time.Hour), Tasks: []Task{{Name: "t", Fn: func(context.Context, *User) error { return nil }}}}
	p, _ := newTestPool(b, c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		_, bt := p.apply(map[string]int64{"B": int64(i + 1)})
		bt.start()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "users/s")
}
