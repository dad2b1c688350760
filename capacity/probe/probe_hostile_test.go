package probe

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/diag"
)

// A pacer behind its schedule (every arrival already due) must still see
// stop: an aborted trial, or a worker whose controller is gone, stops
// loading the target at once instead of issuing its remaining arrivals.
func TestPaceStopsWhenBehind(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	for _, tt := range []struct {
		name  string
		dueOf func(int) time.Duration
	}{
		{"all due at once", func(int) time.Duration { return 0 }},
		{"due in the past", func(i int) time.Duration { return -time.Hour + time.Duration(i) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			issued, _ := paceBy(1_000_000, tt.dueOf, time.Now(), time.Millisecond, stop, func(int, time.Time) { calls++ })
			if issued != 0 || calls != 0 {
				t.Fatalf("issued %d arrivals (issue called %d times) after stop was closed; want 0", issued, calls)
			}
		})
	}
}

// Loads whose arrivals do not fit the trial are refused, never run as a
// different number of arrivals (a float-to-int overflow).
func TestHugeLoadsRefused(t *testing.T) {
	p, err := New(Options{Addr: "127.0.0.1:9", Duration: 2 * time.Second, CPUBusy: 1,
		Limits: noLimits})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tt := range []struct {
		name string
		run  func() error
	}{
		{"cps 1e300", func() error { _, err := p.CPS(ctx, 1e300); return err }},
		{"cps max float", func() error { _, err := p.CPS(ctx, math.MaxFloat64); return err }},
		{"tps 1e12", func() error { _, err := p.TPS(ctx, 1e12); return err }},
		{"teardown 1e19", func() error { _, err := p.Teardown(ctx, 1e19); return err }},
		{"throughput 1e300", func() error { _, err := p.Throughput(ctx, 1e300, 1); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "arrivals") {
				t.Fatalf("err = %v; want an ErrOptions naming the arrivals", err)
			}
		})
	}
}

// Options a prober cannot honour are refused, never taken as another value.
func TestNewRefusesHostileOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"cpu busy NaN", Options{CPUBusy: math.NaN()}, "CPU busy"},
		{"late ratio NaN", Options{LateRatio: math.NaN()}, "late ratio"},
		{"path NUL", Options{Path: "/a\x00b"}, "path"},
		{"path tab", Options{Path: "/a\tb"}, "path"},
		{"path DEL", Options{Path: "/a\x7f"}, "path"},
		{"path CR", Options{Path: "/a\rX-Injected: 1"}, "path"},
		{"host LF", Options{Host: "h\nX-Injected: 1"}, "host"},
		{"host NUL", Options{Host: "h\x00"}, "host"},
		{"host space", Options{Host: "a b"}, "host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Addr = "127.0.0.1:9"
			_, err := New(tt.o)
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v; want an ErrOptions naming %q", err, tt.want)
			}
		})
	}
}

// noLimits reads no limits (all unknown): the preflight checks pass.
func noLimits() (diag.Limits, error) {
	return diag.Limits{OpenFiles: -1, OpenFilesHard: -1, FilesInUse: -1, SystemFilesMax: -1, SystemFilesUsed: -1}, nil
}

// BenchmarkPaceBehind is the pacer's cost per arrival when every arrival is
// due (the stop check included).
func BenchmarkPaceBehind(b *testing.B) {
	b.ReportAllocs()
	stop := make(chan struct{})
	n := 0
	paceBy(b.N, func(int) time.Duration { return 0 }, time.Now(), time.Hour, stop, func(int, time.Time) { n++ })
	if n != b.N {
		b.Fatalf("issued %d of %d", n, b.N)
	}
}
