package dispatch

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestCheckUsers(t *testing.T) {
	tests := []struct {
		in   int64
		want error
	}{
		{0, nil},
		{1, nil},
		{MaxUsers, nil},
		{-1, ErrBadTarget},
		{MaxUsers + 1, ErrBadTarget},
		{1_000_000_000_000, ErrBadTarget},
	}
	for _, tt := range tests {
		if err := CheckUsers(tt.in); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("CheckUsers(%d) = %v; want %v", tt.in, err, tt.want)
		}
	}
}

func TestCheckRate(t *testing.T) {
	tests := []struct {
		in      float64
		wantSub string // "" for no error
	}{
		{1, ""},
		{MinSpawnRate, ""},
		{MaxSpawnRate, ""},
		{0.5, ""},
		{0, "not positive"},
		{-1, "not positive"},
		{math.NaN(), "not a finite number"},
		{math.Inf(1), "not a finite number"},
		{1e-300, "below the least rate"},
		{MinSpawnRate / 2, "below the least rate"},
		{1e308, "above the ceiling"},
		{1e12, "above the ceiling"},
	}
	for _, tt := range tests {
		err := CheckRate(tt.in)
		if tt.wantSub == "" {
			if err != nil {
				t.Errorf("CheckRate(%v) = %v; want nil", tt.in, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadRate) || !strings.Contains(err.Error(), tt.wantSub) {
			t.Errorf("CheckRate(%v) = %v; want ErrBadRate saying %q", tt.in, err, tt.wantSub)
		}
	}
}

// A count above the ceiling is refused before anything is allocated: 10^12
// users at 10^12 per second used to allocate 8 TB in one step.
func TestNewDispatchRefusesHugeCounts(t *testing.T) {
	d, err := New([]string{"w1", "w2"}, []UserClass{{Name: "A"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		target int64
		rate   float64
		want   error
	}{
		{1_000_000_000_000, 1_000_000, ErrBadTarget},
		{MaxUsers + 1, 1, ErrBadTarget},
		{10, 1_000_000_000_000, ErrBadRate},
		{10, 1e-300, ErrBadRate},
	}
	for _, tt := range tests {
		if err := d.NewDispatch(tt.target, tt.rate); !errors.Is(err, tt.want) {
			t.Errorf("NewDispatch(%d, %v) = %v; want %v", tt.target, tt.rate, err, tt.want)
		}
	}
	if d.InProgress() {
		t.Errorf("InProgress() = true after refused dispatches; want false")
	}
}

// The least legal rate spawns one user, then waits 1/rate seconds: it
// does not start everyone at once.
func TestSmallestRateIsPaced(t *testing.T) {
	d, err := New([]string{"w"}, []UserClass{{Name: "A"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.NewDispatch(3, MinSpawnRate); err != nil {
		t.Fatal(err)
	}
	if w := d.Wait(); w != 0 {
		t.Errorf("first Wait() = %v; want 0", w)
	}
	step, ok := d.Next()
	if !ok || step.Users.Total() != 1 {
		t.Fatalf("first Next() = %v, %v; want 1 user", step.Users, ok)
	}
	want := time.Duration(float64(time.Second) / MinSpawnRate)
	if w := d.Wait(); w != want {
		t.Errorf("Wait() after the first step = %v; want %v", w, want)
	}
}

func TestNewRefusesHugeClassCycles(t *testing.T) {
	tests := []struct {
		name    string
		classes []UserClass
	}{
		{"fixed count above ceiling", []UserClass{{Name: "A", FixedCount: MaxUsers + 1}}},
		{"fixed counts far apart", []UserClass{{Name: "A", FixedCount: 1}, {Name: "B", FixedCount: MaxUsers}}},
		{"weights far apart", []UserClass{{Name: "A", Weight: 1}, {Name: "B", Weight: 1_000_000_000}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New([]string{"w"}, tt.classes); !errors.Is(err, ErrBadUserClass) {
				t.Errorf("New(%v) = %v; want ErrBadUserClass", tt.classes, err)
			}
		})
	}
	// Fixed counts far apart within the bound still work.
	if _, err := New([]string{"w"}, []UserClass{{Name: "A", FixedCount: 1}, {Name: "B", FixedCount: 100_000}}); err != nil {
		t.Errorf("New(fixed 1 and 100000) = %v; want nil", err)
	}
}

// Placing and removing users costs memory per worker and class, not per
// user: the placement order is kept as runs (userRun). It used to take 8
// bytes per user (16 MB here), allocated at once for a step.
func TestDispatchMemoryIsNotPerUser(t *testing.T) {
	const users = 2_000_000
	tests := []struct {
		name    string
		classes []UserClass
	}{
		{"weighted", []UserClass{{Name: "A", Weight: 3}, {Name: "B"}, {Name: "F", FixedCount: 5}}},
		// Fixed classes picked in turn until the smaller one is full.
		{"fixed", []UserClass{{Name: "A", FixedCount: 300_000}, {Name: "B", FixedCount: 300_001}, {Name: "C"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New([]string{"a_1", "a_2", "b_1"}, tt.classes)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for _, target := range []int64{users, users / 3, users, 0} {
				if err := d.NewDispatch(target, MaxSpawnRate); err != nil {
					t.Fatal(err)
				}
				for {
					if _, ok := d.Next(); !ok {
						break
					}
				}
				if got := d.Users().Total(); got != target {
					t.Fatalf("after dispatching to %d users, Users().Total() = %d", target, got)
				}
			}
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Errorf("dispatching %d users up, down, up and to 0 allocated %d bytes; want at most 1 MiB", users, alloc)
			}
			if n := cap(d.runs); n > 64 {
				t.Errorf("cap(runs) = %d after the ramps; want a handful", n)
			}
		})
	}
}
