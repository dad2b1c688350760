package engine_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// resolvedClient is a client stack whose next hop is set, over a pipe
// nobody drains: launches go out as SYNs and stay open.
func resolvedClient(t *testing.T) *stack.Stack {
	t.Helper()
	a, _, err := pipe.New(pipe.Config{Frames: 8192})
	if err != nil {
		t.Fatal(err)
	}
	s, err := stack.New(stack.Config{Mode: stack.Client, Link: a, ClientIP: 0x0a000001, ServerIP: 0x0a000101,
		PortMin: 10000, PortMax: 19999})
	if err != nil {
		t.Fatal(err)
	}
	s.SetNextHop(wire.MAC{2, 0, 0, 0, 0, 0x0b})
	return s
}

func TestLauncherPace(t *testing.T) {
	ms := int64(time.Millisecond)
	type step struct {
		now  int64
		want int // launched by this call
	}
	for _, tc := range []struct {
		name  string
		l     engine.Launcher
		steps []step
	}{
		{"rate from the first call", engine.Launcher{Rate: 1000},
			[]step{{5 * ms, 0}, {6 * ms, 1}, {15 * ms, 9}, {15 * ms, 0}, {200 * ms, 64}, {200 * ms, 64}, {200 * ms, 57}}},
		{"burst bounds a call", engine.Launcher{Rate: 1e6, Burst: 10}, []step{{0, 0}, {ms, 10}, {ms, 10}}},
		{"total bounds the rate", engine.Launcher{Rate: 1000, Total: 5}, []step{{0, 0}, {100 * ms, 5}, {200 * ms, 0}}},
		{"max open without a rate", engine.Launcher{MaxOpen: 30}, []step{{0, 30}, {ms, 0}, {time.Hour.Nanoseconds(), 0}}},
		{"max open and total", engine.Launcher{MaxOpen: 100, Total: 70, Burst: 50}, []step{{0, 50}, {0, 20}, {0, 0}}},
		{"max open caps the rate", engine.Launcher{Rate: 1e6, MaxOpen: 3}, []step{{0, 0}, {ms, 3}, {2 * ms, 0}}},
		{"nothing set", engine.Launcher{}, []step{{0, 0}, {ms, 0}}},
		{"refused: negative", engine.Launcher{Rate: -1, MaxOpen: 5}, []step{{0, 0}, {ms, 0}}},
		{"refused: infinite rate", engine.Launcher{Rate: math.Inf(1)}, []step{{0, 0}, {ms, 0}}},
	} {
		s := resolvedClient(t)
		l := tc.l
		total := 0
		for i, st := range tc.steps {
			got := l.Launch(s, st.now)
			total += got
			if got != st.want {
				t.Errorf("%s: step %d at %v launched %d; want %d", tc.name, i, time.Duration(st.now), got, st.want)
			}
		}
		if l.Launched() != total || s.Counters().SocketsOpened != uint64(total) {
			t.Errorf("%s: Launched %d, opened %d; want %d", tc.name, l.Launched(), s.Counters().SocketsOpened, total)
		}
	}
}

func TestLauncherValidate(t *testing.T) {
	for _, l := range []engine.Launcher{{Rate: -1}, {Rate: math.NaN()}, {Rate: math.Inf(1)}, {MaxOpen: -1}, {Total: -1}, {Burst: -1}} {
		if err := l.Validate(); !errors.Is(err, engine.ErrConfig) {
			t.Errorf("Validate(%+v) = %v; want ErrConfig", l, err)
		}
	}
	if err := (&engine.Launcher{Rate: 5, MaxOpen: 1, Total: 2, Burst: 3}).Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
}
