package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/diag"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker"
)

func startTarget(t *testing.T) string {
	s, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "target", 60*time.Second, func(ctx context.Context) {
		if err := s.Run(ctx); err != nil {
			t.Errorf("target Run = %v", err)
		}
	})
	return s.Addr().String()
}

func listen(t *testing.T, n int, wait time.Duration, plain *zmtp.PlainAuth) *Controller {
	c, err := Listen(Options{Bind: "tcp://127.0.0.1:0", Workers: n, WaitTimeout: wait, HeartbeatTimeout: 5 * time.Second, Plain: plain,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// startWorker runs a Go worker with a bench agent against c.
func startWorker(t *testing.T, c *Controller, id string, plain *zmtp.PlainAuth) {
	port := c.Addr().(*net.TCPAddr).Port
	w, err := worker.New(worker.Options{MasterHost: "127.0.0.1", MasterPort: port, NodeID: id, Transport: zmtp.Options{Plain: plain}},
		worker.Scenario{Classes: []worker.UserClass{{Name: "U", Tasks: []worker.Task{{Name: "t", Fn: func(context.Context, *worker.User) error { return nil }}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := NewAgent(ctx, w, AgentOptions{Limits: func() (diag.Limits, error) { return diag.Limits{OpenFiles: -1, FilesInUse: -1}, nil }})
	if err := a.Register(w); err != nil {
		t.Fatal(err)
	}
	done := testpeer.Go(t, "worker "+id, 60*time.Second, func(context.Context) { _ = w.Run(ctx) })
	t.Cleanup(func() { cancel(); <-done; a.Wait() })
}

func probeOpts(addr string) ProbeOptions {
	return ProbeOptions{Addr: addr, Path: "/", Duration: 300 * time.Millisecond, ConnectTimeout: time.Second, Timeout: 2 * time.Second,
		Conns: 4, Window: 16, CPUBusy: 1, LagTolerance: time.Second}
}

// Two Go workers with agents run a cps, a tps and a concurrent trial
// against the built-in target: the merged counts are the sums of the
// shares; the concurrent barrier holds 21 connections (11 + 10) at once.
func TestControllerTwoWorkers(t *testing.T) {
	addr := startTarget(t)
	plain := &zmtp.PlainAuth{Username: "cicada", Password: "s3cret"}
	c := listen(t, 2, 30*time.Second, plain)
	startWorker(t, c, "wa", plain)
	startWorker(t, c, "wb", plain)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if ws := c.Workers(); len(ws) != 2 || !strings.Contains(ws[0]+ws[1], "(wa), kernel sockets") {
		t.Fatalf("workers %q", ws)
	}
	for _, tc := range []struct {
		test       string
		load       float64
		integer    bool
		attempted  int64
		achievedAt float64
	}{
		{"cps", 200, false, 60, 1}, // 30 arrivals each (100/s for 300 ms)
		{"tps", 100, false, 30, 1},
		{"concurrent", 21, true, 21, 21},
	} {
		t.Run(tc.test, func(t *testing.T) {
			tr, err := c.Trial(ctx, tc.test, tc.load, tc.integer, probeOpts(addr))
			if err != nil {
				t.Fatal(err)
			}
			if tr.GeneratorLimit != "" || tr.Attempted != tc.attempted || tr.Failed != 0 || tr.Achieved < tc.achievedAt || tr.P50 <= 0 || tr.P99 < tr.P50 || tr.Max < tr.P99 {
				t.Fatalf("trial %+v", tr)
			}
			if tc.test == "concurrent" && (tr.Achieved != 21 || tr.SecondRound != 21 || tr.SecondRoundFailed != 0) {
				t.Fatalf("concurrent %+v", tr)
			}
		})
	}
	// One keep-alive connection cannot be split over two workers.
	o := probeOpts(addr)
	o.Conns = 1
	if _, err := c.Trial(ctx, "tps", 10, false, o); !errors.Is(err, ErrOptions) {
		t.Fatalf("1 connection over 2 workers: %v", err)
	}
}

// fakeWorker is a bare dealer that registers as a worker.
type fakeWorker struct {
	d  *zmtp.Dealer
	id string
}

// readyPair dials two fake workers, "a" and "b", answers the
// controller's hello with kernel-runtime readies, and waits (30 s at most)
// until the controller has both.
func readyPair(t *testing.T, c *Controller) (a, b *fakeWorker) {
	t.Helper()
	a, b = dialFake(t, c, "a", -1), dialFake(t, c, "b", -1)
	for _, f := range []*fakeWorker{a, b} {
		f.recv(t, TypeHello)
		f.send(t, TypeReady, &protocol.Custom{Data: EncodeReady(Ready{Version: Version, Runtime: RuntimeKernel})})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func dialFake(t *testing.T, c *Controller, id string, version any) *fakeWorker {
	d, err := zmtp.Dial("tcp://"+c.Addr().String(), id, zmtp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	f := &fakeWorker{d: d, id: id}
	cr := &protocol.ClientReady{VersionSkipCheck: true}
	if v, ok := version.(string); ok {
		cr = &protocol.ClientReady{Version: v}
	}
	f.send(t, protocol.TypeClientReady, cr)
	return f
}

func (f *fakeWorker) send(t *testing.T, typ string, data any) {
	b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: f.id})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.d.Send(b); err != nil {
		t.Fatal(err)
	}
}

// recv returns the next message of type typ, skipping others.
func (f *fakeWorker) recv(t *testing.T, typ string) protocol.Message {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		fr, err := f.d.Recv(ctx)
		if err != nil {
			t.Fatalf("%s waiting for %s: %v", f.id, typ, err)
		}
		m, err := protocol.Decode(fr[0])
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == typ {
			return m
		}
	}
}

// A Python worker is acknowledged, sent quit and not counted; the wait
// ends at its timeout with an error naming it.
func TestControllerRefusesPythonWorker(t *testing.T) {
	c := listen(t, 1, 1500*time.Millisecond, nil)
	f := dialFake(t, c, "py_1", "2.12.1")
	f.recv(t, protocol.TypeAck)
	f.send(t, protocol.TypeHeartbeat, &protocol.Heartbeat{State: "ready", MemoryUsage: -1}) // quit comes with it
	f.recv(t, protocol.TypeQuit)
	start := time.Now()
	err := c.Wait(context.Background())
	if !errors.Is(err, ErrWait) || !strings.Contains(err.Error(), `py_1: a Python Locust worker (version "2.12.1") cannot run cicada bench trials`) {
		t.Fatalf("Wait = %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("Wait took %v", time.Since(start))
	}
	// A worker with another cluster secret is counted as refused.
	c3 := listen(t, 1, 30*time.Second, &zmtp.PlainAuth{Username: "cicada", Password: "right"})
	startWorker(t, c3, "wrong", &zmtp.PlainAuth{Username: "cicada", Password: "wrong"})
	if err := testpeer.Poll(20*time.Second, 10*time.Millisecond, func() bool { return c3.r.AuthRefusals() > 0 }); err != nil {
		t.Fatal("no PLAIN refusal")
	}
	if err := c3.waitError(0); !strings.Contains(err.Error(), "connections refused by the cluster secret") {
		t.Fatalf("waitError = %v", err)
	}
	// A cicada worker without bench support (never answers hello) is
	// named too.
	c2 := listen(t, 1, 500*time.Millisecond, nil)
	dialFake(t, c2, "old_1", -1).recv(t, TypeHello)
	if err := c2.Wait(context.Background()); !errors.Is(err, ErrWait) || !strings.Contains(err.Error(), "without answering the bench hello") || !strings.Contains(err.Error(), "old_1") {
		t.Fatalf("Wait = %v", err)
	}
}

// A worker that disconnects during a trial makes it invalid, naming the
// worker; the other worker is told to abort; every later trial is invalid
// at once. A worker that falls silent is lost at the heartbeat timeout.
func TestControllerLostWorker(t *testing.T) {
	for _, how := range []string{"disconnect", "silent"} {
		t.Run(how, func(t *testing.T) {
			c, err := Listen(Options{Bind: "tcp://127.0.0.1:0", Workers: 2, WaitTimeout: 20 * time.Second, HeartbeatTimeout: 700 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			a, b := readyPair(t, c)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// b keeps heartbeating; a dies or falls silent.
			stop, stopped := make(chan struct{}), make(chan struct{})
			defer func() { close(stop); <-stopped }() // no send after the test
			go func() {
				defer close(stopped)
				tk := time.NewTicker(100 * time.Millisecond)
				defer tk.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tk.C:
						b.send(t, protocol.TypeHeartbeat, &protocol.Heartbeat{State: "ready", MemoryUsage: -1})
					}
				}
			}()
			go func() {
				a.recv(t, TypeTrial)
				if how == "disconnect" {
					_ = a.d.Close()
				}
			}()
			start := time.Now()
			tr, err := c.Trial(ctx, "cps", 100, false, probeOpts("127.0.0.1:9"))
			if err != nil {
				t.Fatal(err)
			}
			// a is worker 1 or 2, in the order the ready answers came.
			want := map[string]string{"disconnect": " (a) lost during the trial: disconnected", "silent": " (a) lost during the trial: no message for"}[how]
			if !strings.HasPrefix(tr.GeneratorLimit, "worker ") || !strings.Contains(tr.GeneratorLimit, want) || time.Since(start) > 15*time.Second {
				t.Fatalf("trial %+v after %v; want %q", tr, time.Since(start), want)
			}
			if m := b.recv(t, TypeAbort); m.Type != TypeAbort {
				t.Fatal(m)
			}
			tr, err = c.Trial(ctx, "cps", 50, false, probeOpts("127.0.0.1:9"))
			if err != nil || !strings.Contains(tr.GeneratorLimit, " (a) lost: ") {
				t.Fatalf("next trial %+v, %v", tr, err)
			}
		})
	}
}

// The concurrent barrier: go is sent once every worker holds its share or
// has ended its trial before the barrier (a generator limit found before
// opening), so the other worker never waits on it; the limit is named.
func TestControllerBarrier(t *testing.T) {
	c := listen(t, 2, 20*time.Second, nil)
	a, b := readyPair(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type got struct {
		spec TrialSpec
		err  error
	}
	specs := make(chan got, 2)
	go func() {
		s, err := DecodeTrial(a.recv(t, TypeTrial).Data.(*protocol.Custom).Data)
		specs <- got{s, err}
		a.send(t, TypeResult, &protocol.Custom{Data: EncodeResult(Result{ID: s.ID, Trial: capacity.Trial{GeneratorLimit: "ports: too few"}})})
	}()
	go func() {
		s, err := DecodeTrial(b.recv(t, TypeTrial).Data.(*protocol.Custom).Data)
		specs <- got{s, err}
		b.send(t, TypeHeld, &protocol.Custom{Data: EncodeID(s.ID, false)})
		id, abort, err := DecodeID(TypeGo, b.recv(t, TypeGo).Data.(*protocol.Custom).Data)
		if err != nil || id != s.ID || abort {
			t.Errorf("go %d %v %v", id, abort, err)
		}
		b.send(t, TypeResult, &protocol.Custom{Data: EncodeResult(Result{ID: s.ID, Trial: capacity.Trial{Attempted: 5, Achieved: 5, SecondRound: 5},
			Latency: Histogram([]time.Duration{time.Millisecond})})})
	}()
	tr, err := c.Trial(ctx, "concurrent", 11, true, probeOpts("127.0.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tr.GeneratorLimit, "worker ") || !strings.HasSuffix(tr.GeneratorLimit, " (a): ports: too few") || tr.Attempted != 5 || tr.Achieved != 5 || tr.P50 != time.Millisecond {
		t.Fatalf("trial %+v", tr)
	}
	loads := 0.0
	for range 2 {
		g := <-specs
		if g.err != nil || g.spec.Test != "concurrent" || (g.spec.Load != 6 && g.spec.Load != 5) {
			t.Fatalf("spec %+v, %v", g.spec, g.err)
		}
		loads += g.spec.Load
	}
	if loads != 11 {
		t.Fatalf("shares sum to %v", loads)
	}
}
