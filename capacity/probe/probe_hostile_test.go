package probe

import (
	"context"
	"errors"
	"math"
	"net"
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
		{"tps 1e7, a 640 MB queue", func() error { _, err := p.TPS(ctx, 1e7); return err }},
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

// BenchmarkDoKeepAlive is one keep-alive transaction against the built-in
// target under a cancellable context (arm's hook registered and removed
// per transaction).
func BenchmarkDoKeepAlive(b *testing.B) {
	addr := startTarget(b)
	p, err := New(Options{Addr: addr, Limits: noLimits})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rec recorder
	h, err := p.connect(ctx, &rec)
	if err != nil {
		b.Fatal(err)
	}
	defer h.c.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.do(ctx, h, p.req); err != nil {
			b.Fatal(err)
		}
	}
}

// A transaction in flight on a silent server ends when its context does,
// not after Timeout.
func TestDoEndsWithContext(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	p, err := New(Options{Addr: ln.Addr().String(), Timeout: time.Hour, Limits: noLimits})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	h, err := p.connect(ctx, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer h.c.Close()
	defer func() { c := <-accepted; _ = c.Close() }()
	done := make(chan error, 1)
	go func() { _, err := p.do(ctx, h, p.req); done <- err }()
	// The request reaches the server before the context ends.
	c := <-accepted
	accepted <- c
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("do succeeded on a silent server")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("do went on 20 s after its context ended")
	}
}
