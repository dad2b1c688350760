package worker

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// countingHandler counts the log records per level and keeps their
// messages, for tests of log amplification.
type countingHandler struct {
	mu      sync.Mutex
	byLevel map[slog.Level]int
	lines   []string
}

func newCountingHandler() *countingHandler {
	return &countingHandler{byLevel: make(map[slog.Level]int)}
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	h.mu.Lock()
	h.byLevel[r.Level]++
	h.lines = append(h.lines, b.String())
	h.mu.Unlock()
	return nil
}

func (h *countingHandler) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byLevel[l]
}

// find returns the first line containing every part.
func (h *countingHandler) find(parts ...string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
next:
	for _, l := range h.lines {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		return l
	}
	return ""
}

func unixNow() float64 { return float64(time.Now().UnixNano()) / 1e9 }

func TestCheckSpawnTimestamp(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	sec := float64(now.Unix())
	tests := []struct {
		name string
		ts   float64
		ok   bool
	}{
		{"now", sec, true},
		{"an hour ago", sec - 3600, true},
		{"a minute ahead", sec + 60, true},
		{"just within the skew", sec + MaxSpawnClockSkew.Seconds() - 1, true},
		{"beyond the skew", sec + MaxSpawnClockSkew.Seconds() + 1, false},
		{"far future", 1e300, false},
		{"max float", math.MaxFloat64, false},
		{"+inf", math.Inf(1), false},
		{"-inf", math.Inf(-1), false},
		{"nan", math.NaN(), false},
		{"zero", 0, false},
		{"negative", -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSpawnTimestamp(tt.ts, now)
			if (err == nil) != tt.ok {
				t.Fatalf("checkSpawnTimestamp(%v) = %v; want ok %v", tt.ts, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBadSpawn) {
				t.Errorf("checkSpawnTimestamp(%v) = %v; want it to wrap ErrBadSpawn", tt.ts, err)
			}
		})
	}
}

// TestSpawnTimestampCannotDisableWorker: a spawn stamped +inf, NaN or far
// in the future is refused with a reason (an exception to the master), and
// a later normal spawn still works. Before the fix, +inf became the
// "latest" timestamp and every later spawn was discarded as older.
func TestSpawnTimestampCannotDisableWorker(t *testing.T) {
	t.Parallel()
	for _, bad := range []float64{math.Inf(1), math.NaN(), unixNow() + 1e9} {
		t.Run(strconv.FormatFloat(bad, 'g', 4, 64), func(t *testing.T) {
			t.Parallel()
			m := newFakeMaster(t, 0)
			opts := fastOptions(t, m.port)
			opts.RepeatInterval = -1 // every refusal reported
			rw := startWorker(t, opts, twoClasses())
			register(t, m, rw, 1, 0)
			m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(bad, map[string]int64{"A": 3}, nil))
			m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(unixNow(), map[string]int64{"A": 2}, nil))
			sc := m.await(protocol.TypeSpawningComplete, 1, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
			if sc.UserCount != 2 {
				t.Errorf("spawning_complete after the refused spawn = %+v; want 2 users", sc)
			}
			exc := m.await(protocol.TypeException, 1, 10*time.Second).msg.Data.(*protocol.Exception)
			if !strings.Contains(exc.Msg, "timestamp") {
				t.Errorf("exception = %q; want it to name the timestamp", exc.Msg)
			}
			if n := m.count(protocol.TypeSpawning); n != 1 {
				t.Errorf("%d spawning messages; want 1 (none for the refused spawn)", n)
			}
		})
	}
}

// startCountingWorker starts a registered worker of twoClasses, without
// self-diagnosis, whose log lines h counts and whose repeated reports are
// suppressed for repeat.
func startCountingWorker(t *testing.T, repeat time.Duration) (*fakeMaster, *runningWorker, *countingHandler) {
	t.Helper()
	m := newFakeMaster(t, 0)
	h := newCountingHandler()
	opts := fastOptions(t, m.port)
	opts.Logger = slog.New(h)
	opts.RepeatInterval = repeat
	opts.DisableDiagnosis = true
	rw := startWorker(t, opts, twoClasses())
	register(t, m, rw, 1, 0)
	return m, rw, h
}

// TestUnknownClassFloodBounded: spawns naming 100,000 unknown classes,
// and 200 more spawns with new unknown names each, give one ERROR line and
// one exception per RepeatInterval, and a summary of the suppressed ones.
// Before the fix: one ERROR line and one exception per name.
func TestUnknownClassFloodBounded(t *testing.T) {
	t.Parallel()
	m, rw, h := startCountingWorker(t, time.Hour)
	counts := map[string]int64{"A": 1}
	for i := range 100_000 {
		counts["Nope"+strconv.Itoa(i)] = 1
	}
	ts := unixNow()
	m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(ts, counts, nil))
	m.await(protocol.TypeSpawningComplete, 1, 60*time.Second)
	const more = 200
	for i := range more {
		ts += 0.001
		a := int64(1)
		if i == more-1 {
			a = 2 // the last one is seen in spawning_complete
		}
		m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnMsg(ts, map[string]int64{"A": a, "Other" + strconv.Itoa(i): 1}, nil))
	}
	waitFor(t, 60*time.Second, "the last spawn", func() bool {
		sc := m.all(protocol.TypeSpawningComplete)
		return sc[len(sc)-1].msg.Data.(*protocol.SpawningComplete).UserCount == 2
	})
	exc := m.all(protocol.TypeException)
	if len(exc) != 1 {
		t.Fatalf("%d exception messages; want 1", len(exc))
	}
	if msg := exc[0].msg.Data.(*protocol.Exception).Msg; !strings.Contains(msg, "and 99990 more") || len(msg) > 2000 {
		t.Errorf("exception = %.300q (%d bytes); want it to list 10 names and count the rest", msg, len(msg))
	}
	if n := h.count(slog.LevelError); n != 1 {
		t.Errorf("%d ERROR lines; want 1", n)
	}
	// Spawns still queued are superseded by newer ones, so not every one
	// is handled.
	if n := rw.w.repeats.Total(); n < 1 || n > more {
		t.Errorf("suppressed %d reports; want 1 to %d", n, more)
	}
}

// TestRepeatSummary: suppressed repeats are summarised once the cause
// has been quiet for an interval.
func TestRepeatSummary(t *testing.T) {
	t.Parallel()
	m, rw, h := startCountingWorker(t, 2*time.Second) // longer than sending 50 messages takes
	for range 50 {
		m.sendRaw(rw.w.NodeID(), []byte("not msgpack"))
	}
	waitFor(t, 10*time.Second, "the summary line", func() bool {
		return h.find("suppressed", "cause="+causeMalformed, "count=49") != ""
	})
	if n := h.count(slog.LevelWarn); n != 2 {
		t.Errorf("%d WARN lines for 50 malformed messages; want 2 (one, then the summary)", n)
	}
}

func TestCheckMasterAfterPause(t *testing.T) {
	const (
		interval = time.Second
		timeout  = 60 * time.Second
	)
	t0 := time.Unix(1_700_000_000, 0)
	sec := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	tests := []struct {
		name           string
		lastHB         time.Time // zero: the master sends none
		lastTick, now  time.Time
		wantErr        bool
		wantFreshGrace bool
	}{
		{"master silent, ticks regular", sec(0), sec(60.5), sec(61.5), true, false},
		{"master recent", sec(59), sec(60), sec(61), false, false},
		{"worker paused 90 s", sec(0), sec(1), sec(91), false, true},
		{"worker paused, gap just below the threshold", sec(0), sec(47), sec(61.5), true, false},
		{"no master heartbeats yet", time.Time{}, sec(1), sec(91), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := New(Options{HeartbeatInterval: interval, MasterHeartbeatTimeout: timeout, Logger: testLogger(t)}, twoClasses())
			if err != nil {
				t.Fatal(err)
			}
			w.mu.lastMasterHB = tt.lastHB
			err = w.checkMaster(tt.now, tt.lastTick)
			if (err != nil) != tt.wantErr {
				t.Fatalf("checkMaster(now %v, last tick %v) = %v; want error %v", tt.now.Sub(t0), tt.lastTick.Sub(t0), err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrMasterTimeout) {
				t.Errorf("checkMaster = %v; want ErrMasterTimeout", err)
			}
			if fresh := w.mu.lastMasterHB.Equal(tt.now); fresh != tt.wantFreshGrace {
				t.Errorf("fresh grace = %v (last heartbeat now %v); want %v", fresh, w.mu.lastMasterHB.Sub(t0), tt.wantFreshGrace)
			}
			if tt.wantFreshGrace {
				// The fresh grace ends: a master still silent is gone.
				if err := w.checkMaster(tt.now.Add(timeout+interval), tt.now.Add(timeout)); !errors.Is(err, ErrMasterTimeout) {
					t.Errorf("checkMaster after the fresh grace = %v; want ErrMasterTimeout", err)
				}
			}
		})
	}
}

func TestClampCounts(t *testing.T) {
	const huge = 1_000_000_000_000
	tests := []struct {
		name    string
		counts  map[string]int64
		ceiling int64
		want    map[string]int64
	}{
		{"one class", map[string]int64{"A": huge}, 4096, map[string]int64{"A": 4096}},
		{"two equal", map[string]int64{"A": huge, "B": huge}, 4096, map[string]int64{"A": 2048, "B": 2048}},
		{"remainder to the first of equals", map[string]int64{"A": 10, "B": 10, "C": 10}, 10, map[string]int64{"A": 4, "B": 3, "C": 3}},
		{"remainder to the largest fraction", map[string]int64{"A": 10, "B": 19}, 10, map[string]int64{"A": 3, "B": 7}},
		{"proportional", map[string]int64{"A": 3 * huge, "B": huge}, 1000, map[string]int64{"A": 750, "B": 250}},
		{"tiny share rounds to zero", map[string]int64{"A": 1, "B": huge}, 1000, map[string]int64{"A": 0, "B": 1000}},
		{"zero ceiling", map[string]int64{"A": 5}, 0, map[string]int64{"A": 0}},
		{"max int64 counts", map[string]int64{"A": math.MaxInt64, "B": math.MaxInt64}, 100, map[string]int64{"A": 50, "B": 50}},
		{"saturated sum, uneven", map[string]int64{"A": math.MaxInt64, "B": math.MaxInt64 / 3, "C": 0}, 400, map[string]int64{"A": 300, "B": 100, "C": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var names []string
			var asked int64
			for n, c := range tt.counts {
				names = append(names, n)
				asked = addSat(asked, c)
			}
			slices.Sort(names)
			got := clampCounts(names, tt.counts, asked, tt.ceiling)
			var sum int64
			for _, n := range names {
				sum += got[n]
				if got[n] != tt.want[n] {
					t.Errorf("clampCounts(%v, %d)[%s] = %d; want %d", tt.counts, tt.ceiling, n, got[n], tt.want[n])
				}
			}
			if sum != tt.ceiling {
				t.Errorf("clampCounts(%v, %d) sums to %d; want %d", tt.counts, tt.ceiling, sum, tt.ceiling)
			}
		})
	}
}

// TestPoolStartInterrupted: users start in batches, and an interruption
// (a newer command) or the pool's close ends the start between batches.
func TestPoolStartInterrupted(t *testing.T) {
	idle := &UserClass{Name: "A", Wait: Constant(time.Hour), Tasks: []Task{{Name: "t", Fn: noopTask}}}
	t.Run("interrupted", func(t *testing.T) {
		p, _ := newTestPool(t, idle)
		pl := p.plan(map[string]int64{"A": 1_000_000_000_000}, -1)
		calls := 0
		started, complete := p.start(pl.starts, func() bool { calls++; return calls > 2 })
		if started != 2*startBatch || complete {
			t.Fatalf("start = %d, %v; want %d, false (two batches, then interrupted)", started, complete, 2*startBatch)
		}
		if _, total := p.counts(); total != 2*startBatch {
			t.Errorf("running users = %d; want %d", total, 2*startBatch)
		}
	})
	t.Run("closed", func(t *testing.T) {
		p, _ := newTestPool(t, idle)
		pl := p.plan(map[string]int64{"A": 1_000_000_000_000}, -1)
		calls := 0
		started, complete := p.start(pl.starts, func() bool {
			calls++
			if calls == 2 {
				b := p.close()
				b.start()
				b.wait(0, 5*time.Second, nil)
			}
			return false
		})
		if started != startBatch || complete {
			t.Fatalf("start = %d, %v; want %d, false (closed after one batch)", started, complete, startBatch)
		}
		if _, total := p.counts(); total != 0 {
			t.Errorf("running users after close = %d; want 0", total)
		}
	})
	t.Run("ceiling", func(t *testing.T) {
		p, _ := newTestPool(t, idle)
		pl := p.plan(map[string]int64{"A": 1_000_000_000_000}, 1000)
		if !pl.clamped || pl.asked != 1_000_000_000_000 || pl.counts["A"] != 1000 {
			t.Fatalf("plan = clamped %v, asked %d, counts %v; want clamped, 10^12 asked, A=1000", pl.clamped, pl.asked, pl.counts)
		}
		if started, complete := p.start(pl.starts, nil); started != 1000 || !complete {
			t.Fatalf("start = %d, %v; want 1000, true", started, complete)
		}
	})
}

// TestCommandQueueBounded: a flood of spawn, stop and quit messages while
// the controller is busy keeps the command queue short. Before the fix
// every stop (and quit) was queued.
func TestCommandQueueBounded(t *testing.T) {
	kinds := map[byte]cmdKind{'s': cmdSpawn, 'x': cmdStop, 'q': cmdQuit}
	tests := []struct {
		in, want string // commands as letters: s spawn, x stop, q quit
	}{
		{"s", "s"},
		{"sss", "s"},
		{"x", "x"},
		{"sx", "x"},
		{"xs", "xs"},
		{"xsx", "x"},
		{"xxxx", "x"},
		{"xsq", "xsq"},
		{"qsxq", "q"},
		{strings.Repeat("sx", 50_000), "x"},
		{strings.Repeat("xs", 50_000), "xs"},
		{strings.Repeat("xsq", 1000), "xsq"},
	}
	for _, tt := range tests {
		name := tt.in
		if len(name) > 12 {
			name = name[:12] + "..."
		}
		t.Run(name, func(t *testing.T) {
			w, err := New(Options{Logger: testLogger(t)}, twoClasses())
			if err != nil {
				t.Fatal(err)
			}
			for i := range len(tt.in) {
				w.enqueue(command{kind: kinds[tt.in[i]], spawn: &protocol.Spawn{}})
			}
			var got strings.Builder
			for _, c := range w.mu.queue {
				for l, k := range kinds {
					if k == c.kind {
						got.WriteByte(l)
					}
				}
			}
			if got.String() != tt.want {
				t.Errorf("queue after %q = %q; want %q", name, got.String(), tt.want)
			}
		})
	}
}
