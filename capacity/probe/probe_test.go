package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/diag"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/target"
)

// startTarget runs the built-in target on a free loopback port.
func startTarget(t testing.TB) string {
	t.Helper()
	s, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "target", 30*time.Second, func(ctx context.Context) {
		if err := s.Run(ctx); err != nil {
			t.Errorf("target Run = %v", err)
		}
	})
	return s.Addr().String()
}

// loose are options for a busy test machine: the pacer and CPU checks are
// the subject of their own tests.
func loose(addr string) Options {
	return Options{Addr: addr, Duration: 500 * time.Millisecond, ConnectTimeout: 2 * time.Second, Timeout: 5 * time.Second,
		CPUBusy: 1, LagTolerance: time.Second, Conns: 8}
}

func TestTrialsAgainstTarget(t *testing.T) {
	addr := startTarget(t)
	for _, tt := range []struct {
		name      string
		o         func(o *Options)
		run       func(p *Prober, ctx context.Context) (capacity.Trial, error)
		attempted int64
		bytes     int64
		achieved  [2]float64
	}{
		{"cps tcp", nil, func(p *Prober, ctx context.Context) (capacity.Trial, error) { return p.CPS(ctx, 200) }, 100, 0, [2]float64{190, 200}},
		{"cps http", func(o *Options) { o.HTTP = true }, func(p *Prober, ctx context.Context) (capacity.Trial, error) { return p.CPS(ctx, 200) }, 100, 100 * 128, [2]float64{190, 200}},
		{"tps", nil, func(p *Prober, ctx context.Context) (capacity.Trial, error) { return p.TPS(ctx, 400) }, 200, 200 * 128, [2]float64{390, 400}},
		{"throughput 64k", func(o *Options) { o.Path = "/bytes/65536" }, func(p *Prober, ctx context.Context) (capacity.Trial, error) {
			return p.Throughput(ctx, 20, 65536) // 38.1 objects per second
		}, 19, 19 * 65536, [2]float64{19, 20}},
		{"concurrent http", func(o *Options) { o.HTTP = true }, func(p *Prober, ctx context.Context) (capacity.Trial, error) { return p.Concurrent(ctx, 150) }, 150, 150 * 128, [2]float64{150, 150}},
		{"teardown", nil, func(p *Prober, ctx context.Context) (capacity.Trial, error) { return p.Teardown(ctx, 200) }, 100, 0, [2]float64{190, 200}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := loose(addr)
			if tt.o != nil {
				tt.o(&o)
			}
			p, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tr, err := tt.run(p, ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Attempted != tt.attempted || tr.Failed != 0 || tr.Bytes != tt.bytes || tr.GeneratorLimit != "" {
				t.Fatalf("attempted %d failed %d bytes %d limit %q (%v); want %d attempted, %d bytes", tr.Attempted, tr.Failed, tr.Bytes, tr.GeneratorLimit, tr.Errors, tt.attempted, tt.bytes)
			}
			// Achieved divides by the trial's real length: a busy machine
			// (or -race) stretches it, so only the top is tight.
			if tr.Achieved < tt.achieved[0]/2 || tr.Achieved > tt.achieved[1]*1.01 {
				t.Fatalf("achieved %v, want in [%v, %v]", tr.Achieved, tt.achieved[0]/2, tt.achieved[1]*1.01)
			}
			if tr.P50 <= 0 || tr.P99 < tr.P50 || tr.Max < tr.P99 {
				t.Fatalf("latencies p50 %v p99 %v max %v", tr.P50, tr.P99, tr.Max)
			}
			if tt.name == "concurrent http" && (tr.SecondRound != 150 || tr.SecondRoundFailed != 0) {
				t.Fatalf("second round %d/%d", tr.SecondRound-tr.SecondRoundFailed, tr.SecondRound)
			}
		})
	}
}

// A closed port is the device's failure (refused), not the generator's.
func TestRefusedIsDeviceFailure(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := New(loose(addr))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := p.CPS(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Failed != tr.Attempted || tr.Attempted != 25 || tr.Errors["refused"] != 25 || tr.GeneratorLimit != "" {
		t.Fatalf("failed %d of %d, errors %v, limit %q", tr.Failed, tr.Attempted, tr.Errors, tr.GeneratorLimit)
	}
	capacity.Criteria{}.Judge(&tr)
	if tr.Verdict != capacity.Fail {
		t.Fatalf("verdict %v", tr.Verdict)
	}
}

func TestPreflightOpenFiles(t *testing.T) {
	addr := startTarget(t)
	o := loose(addr)
	o.Limits = func() (diag.Limits, error) {
		return diag.Limits{OpenFiles: 100, OpenFilesHard: 100, FilesInUse: 20, SystemFilesMax: -1, SystemFilesUsed: -1, PortLow: 1024, PortHigh: 65535}, nil
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := p.Concurrent(context.Background(), 500)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tr.GeneratorLimit, "open-files: ") || tr.Attempted != 0 {
		t.Fatalf("limit %q after %d attempts; want the open-files limit before any", tr.GeneratorLimit, tr.Attempted)
	}
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		err       error
		kind      string
		generator bool
	}{
		{fmt.Errorf("x: %w", syscall.EMFILE), "open-files", true},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("socket", syscall.ENFILE)}, "system-files", true},
		{fmt.Errorf("x: %w", syscall.EADDRNOTAVAIL), "ports", true},
		{fmt.Errorf("x: %w", syscall.ECONNREFUSED), "refused", false},
		{fmt.Errorf("x: %w", syscall.ECONNRESET), "reset", false},
		{fmt.Errorf("x: %w", os.ErrDeadlineExceeded), "timeout", false},
		{errQueued, "timeout", false},
		{fmt.Errorf("%w: 503", errStatus), "http-status", false},
		{errNotOpened, "not-opened", false},
		{errors.New("strange"), "other", false},
	} {
		kind, gen := Classify(tt.err)
		if kind != tt.kind || (gen != "") != tt.generator {
			t.Errorf("Classify(%v) = %q, %q; want %q, generator %v", tt.err, kind, gen, tt.kind, tt.generator)
		}
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"host name", Options{Addr: "localhost:80"}, "must be IP:port"},
		{"no port", Options{Addr: "127.0.0.1"}, "must be IP:port"},
		{"path", Options{Addr: "127.0.0.1:80", Path: "x"}, "must start with /"},
		{"path space", Options{Addr: "127.0.0.1:80", Path: "/a b"}, "must start with /"},
		{"host crlf", Options{Addr: "127.0.0.1:80", Host: "a\r\nX: y"}, "line break"},
		{"negative duration", Options{Addr: "127.0.0.1:80", Duration: -1}, "duration -1ns is negative"},
		{"late ratio", Options{Addr: "127.0.0.1:80", LateRatio: 1}, "late ratio"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.o); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v; want ErrOptions naming %q", err, tt.want)
			}
		})
	}
	p, err := New(Options{Addr: "127.0.0.1:80"})
	if err != nil {
		t.Fatal(err)
	}
	for _, load := range []float64{0, -1} {
		if _, err := p.CPS(context.Background(), load); !errors.Is(err, ErrOptions) {
			t.Errorf("CPS(%v) = %v", load, err)
		}
		if _, err := p.Concurrent(context.Background(), load); !errors.Is(err, ErrOptions) {
			t.Errorf("Concurrent(%v) = %v", load, err)
		}
	}
}

func TestDueAndArrivals(t *testing.T) {
	for _, tt := range []struct {
		i    int
		rate float64
		want time.Duration
	}{{0, 100, 0}, {1, 100, 10 * time.Millisecond}, {150, 100, 1500 * time.Millisecond}, {3, 0.5, 6 * time.Second}} {
		if got := Due(tt.i, tt.rate); got != tt.want {
			t.Errorf("Due(%d, %v) = %v; want %v", tt.i, tt.rate, got, tt.want)
		}
	}
	if Arrivals(100, 2*time.Second) != 200 || Arrivals(0.1, time.Second) != 1 {
		t.Errorf("Arrivals")
	}
}

// The pacer counts arrivals it issued late: here every arrival is due at
// once (a start in the past), so all but none are late.
func TestPaceCountsLate(t *testing.T) {
	n := 0
	issued, late := pace(10, 1000, time.Now().Add(-time.Second), 10*time.Millisecond, nil, func(int, time.Time) { n++ })
	if issued != 10 || n != 10 || late != 10 {
		t.Fatalf("issued %d late %d", issued, late)
	}
	issued, late = pace(5, 1000, time.Now().Add(10*time.Millisecond), time.Second, nil, func(int, time.Time) {})
	if issued != 5 || late != 0 {
		t.Fatalf("issued %d late %d", issued, late)
	}
}

func TestPercentile(t *testing.T) {
	s := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {95, 10}, {99, 10}, {10, 1}} {
		if got := pct(s, tt.p); got != tt.want {
			t.Errorf("pct(%v) = %v; want %v", tt.p, got, tt.want)
		}
	}
	if pct(nil, 50) != 0 {
		t.Error("pct(nil)")
	}
}

func BenchmarkRecorder(b *testing.B) {
	b.ReportAllocs()
	var r recorder
	for i := 0; i < b.N; i++ {
		r.ok(time.Millisecond, 128)
		if len(r.lat) >= 1<<16 {
			r.lat = r.lat[:0]
		}
	}
}

// probeGoroutines counts the goroutines running this package's code.
func probeGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "capacity/probe.(*Prober)") && !strings.Contains(g, "probeGoroutines") {
			n++
		}
	}
	return n
}

// Every trial returns with its goroutines ended (connections, workers,
// the pacer's issues).
func TestTrialsLeaveNoGoroutines(t *testing.T) {
	addr := startTarget(t)
	o := loose(addr)
	o.Duration = 200 * time.Millisecond
	o.HTTP = true
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, run := range []func() (capacity.Trial, error){
		func() (capacity.Trial, error) { return p.CPS(ctx, 100) },
		func() (capacity.Trial, error) { return p.TPS(ctx, 100) },
		func() (capacity.Trial, error) { return p.Concurrent(ctx, 50) },
		func() (capacity.Trial, error) { return p.Teardown(ctx, 100) },
	} {
		if _, err := run(); err != nil {
			t.Fatal(err)
		}
		// A goroutine that called wg.Done is still returning: poll.
		if err := testpeer.Poll(5*time.Second, 5*time.Millisecond, func() bool { return probeGoroutines() == 0 }); err != nil {
			t.Fatalf("%d goroutines of the prober left after a trial", probeGoroutines())
		}
	}
}
