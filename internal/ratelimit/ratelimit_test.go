package ratelimit

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

type event struct {
	key            string
	ms             int
	wantOK         bool
	wantSuppressed int64
}

func TestAllow(t *testing.T) {
	tests := []struct {
		name   string
		events []event
	}{
		{"first event passes", []event{{"a", 0, true, 0}}},
		{"repeat within interval is suppressed", []event{{"a", 0, true, 0}, {"a", 999, false, 0}}},
		{"after the interval the count comes along", []event{
			{"a", 0, true, 0}, {"a", 1, false, 0}, {"a", 2, false, 0}, {"a", 1000, true, 2}, {"a", 1001, false, 0}, {"a", 2000, true, 1},
		}},
		{"keys are independent", []event{{"a", 0, true, 0}, {"b", 1, true, 0}, {"a", 2, false, 0}, {"b", 3, false, 0}, {"b", 1001, true, 1}}},
		{"clock going back suppresses", []event{{"a", 1000, true, 0}, {"a", 0, false, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(time.Second, 16)
			for i, e := range tt.events {
				ok, n := l.Allow(e.key, at(e.ms))
				if ok != e.wantOK || n != e.wantSuppressed {
					t.Fatalf("event %d: Allow(%q, +%dms) = %v, %d; want %v, %d", i, e.key, e.ms, ok, n, e.wantOK, e.wantSuppressed)
				}
			}
		})
	}
}

func TestAllowZeroIntervalPassesAll(t *testing.T) {
	l := New(0, 1)
	for i := range 3 {
		if ok, n := l.Allow("a", t0); !ok || n != 0 {
			t.Fatalf("event %d: Allow = %v, %d; want true, 0", i, ok, n)
		}
	}
}

func TestKeysBounded(t *testing.T) {
	const maxKeys = 8
	l := New(time.Second, maxKeys)
	const n = 20_000
	passed := 0
	for i := range n {
		if ok, _ := l.Allow("cause-"+strconv.Itoa(i), at(i%500)); ok {
			passed++
		}
	}
	if got := l.Len(); got > maxKeys {
		t.Errorf("Len() = %d after %d distinct keys; want <= %d", got, n, maxKeys)
	}
	// maxKeys distinct keys, then one overflow entry (displacing the
	// oldest) for all the rest.
	if passed != maxKeys+1 {
		t.Errorf("%d events passed; want %d", passed, maxKeys+1)
	}
	const wantSuppressed = n - maxKeys - 1
	if got := l.Total(); got != wantSuppressed {
		t.Errorf("Total() = %d; want %d", got, wantSuppressed)
	}
	fl := l.Flush(at(2000))
	if len(fl) != 1 || fl[0].Key != OverflowKey || fl[0].Count != wantSuppressed {
		t.Errorf("Flush = %v; want [{%s %d}]", fl, OverflowKey, wantSuppressed)
	}
}

func TestQuietKeysMakeRoom(t *testing.T) {
	l := New(time.Second, 2)
	l.Allow("a", at(0))
	l.Allow("b", at(0))
	// a and b are quiet after a second: a new key gets its own entry.
	if ok, _ := l.Allow("c", at(1500)); !ok {
		t.Fatal("Allow(c) after the others went quiet = false; want true")
	}
	if ok, _ := l.Allow("c", at(1600)); ok {
		t.Error("second Allow(c) within the interval = true; want false (own entry, not overflow)")
	}
	if ok, _ := l.Allow("d", at(1600)); !ok {
		t.Error("Allow(d) = false; want true")
	}
}

func TestFlush(t *testing.T) {
	l := New(time.Second, 16)
	l.Allow("b", at(0))
	l.Allow("b", at(10))
	l.Allow("b", at(20))
	l.Allow("a", at(0))
	l.Allow("a", at(5))
	l.Allow("quiet", at(0))
	l.Allow("late", at(900))
	l.Allow("late", at(901))
	if got := l.Flush(at(500)); len(got) != 0 {
		t.Errorf("Flush(+500ms) = %v; want nothing (intervals not over)", got)
	}
	got := l.Flush(at(1000))
	want := []Suppressed{{"a", 1}, {"b", 2}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Flush(+1s) = %v; want %v", got, want)
	}
	if n := l.Len(); n != 3 {
		t.Errorf("Len() after Flush = %d; want 3 (quiet forgotten; a, b, late kept)", n)
	}
	// The summary counts as the event that went out: the next a within a
	// second of it is suppressed, and reported alone.
	if ok, _ := l.Allow("a", at(1500)); ok {
		t.Error("Allow(a) 0.5 s after its summary = true; want false")
	}
	if ok, n := l.Allow("a", at(2000)); !ok || n != 1 {
		t.Errorf("Allow(a, +2s) = %v, %d; want true, 1", ok, n)
	}
}

func TestConcurrent(t *testing.T) {
	l := New(time.Hour, 4)
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				if ok, _ := l.Allow(strconv.Itoa((g+i)%3), t0); ok {
					mu.Lock()
					passed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if passed != 3 {
		t.Errorf("%d events passed for 3 keys within one interval; want 3", passed)
	}
	if got := l.Total(); got != 8000-3 {
		t.Errorf("Total() = %d; want %d", got, 8000-3)
	}
}

// TestBurst: NewBurst lets burst events of a key through per interval, each
// key on its own budget, and the first one of a new interval carries the
// count of the refused ones.
func TestBurst(t *testing.T) {
	l := NewBurst(3, time.Second, 16)
	t0 := time.Unix(1000, 0)
	calls := []struct {
		key            string
		at             time.Duration
		wantOK         bool
		wantSuppressed int64
	}{
		{"a", 0, true, 0}, {"a", 0, true, 0}, {"a", 100 * time.Millisecond, true, 0},
		{"a", 200 * time.Millisecond, false, 0}, {"a", 900 * time.Millisecond, false, 0},
		{"b", 900 * time.Millisecond, true, 0}, // another key has its own budget
		{"a", time.Second, true, 2},            // a new interval reports the refused ones
		{"a", time.Second, true, 0},
		{"a", time.Second, true, 0},
		{"a", 1500 * time.Millisecond, false, 0},
	}
	for i, c := range calls {
		ok, n := l.Allow(c.key, t0.Add(c.at))
		if ok != c.wantOK || n != c.wantSuppressed {
			t.Errorf("call %d: Allow(%q, +%v) = %v, %d; want %v, %d", i, c.key, c.at, ok, n, c.wantOK, c.wantSuppressed)
		}
	}
	got := l.Flush(t0.Add(2 * time.Second))
	if len(got) != 1 || got[0] != (Suppressed{Key: "a", Count: 1}) {
		t.Errorf("Flush = %v; want [{a 1}]", got)
	}
}
