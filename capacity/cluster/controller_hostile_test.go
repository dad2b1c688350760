package cluster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
)

// Counts each bounded on its own may overflow once summed over the
// workers: Merge refuses them rather than report a negative attempted or
// an infinite achieved load.
func TestMergeRefusesOverflow(t *testing.T) {
	big := capacity.Trial{Attempted: math.MaxInt64, Achieved: 1}
	for _, tt := range []struct {
		name string
		a, b capacity.Trial
	}{
		{"attempted", big, big},
		{"failed", capacity.Trial{Attempted: math.MaxInt64, Failed: math.MaxInt64}, capacity.Trial{Attempted: 1, Failed: 1}},
		{"bytes", capacity.Trial{Bytes: math.MaxInt64}, capacity.Trial{Bytes: 1}},
		{"second round", capacity.Trial{SecondRound: math.MaxInt64}, capacity.Trial{SecondRound: 2}},
		{"achieved", capacity.Trial{Achieved: math.MaxFloat64}, capacity.Trial{Achieved: math.MaxFloat64}},
		{"errors", capacity.Trial{Errors: map[string]int64{"x": math.MaxInt64}}, capacity.Trial{Errors: map[string]int64{"x": 1}}},
		{"tls", capacity.Trial{TLS: &capacity.TLSInfo{Full: math.MaxInt64}}, capacity.Trial{TLS: &capacity.TLSInfo{Full: 1}}},
		{"mix", capacity.Trial{Mix: []capacity.MixCount{{Size: 1, Bytes: math.MaxInt64}}}, capacity.Trial{Mix: []capacity.MixCount{{Size: 1, Bytes: 1}}}},
		{"negative", capacity.Trial{}, capacity.Trial{Attempted: -1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Merge([]Part{{Worker: "worker 1", Result: Result{Trial: tt.a}}, {Worker: "worker 2", Result: Result{Trial: tt.b}}})
			if !errors.Is(err, ErrMessage) || !strings.Contains(err.Error(), "worker 2") {
				t.Fatalf("Merge = %+v, %v; want an ErrMessage naming worker 2", m, err)
			}
		})
	}
	// The largest sums that fit still merge.
	m, err := Merge([]Part{{Worker: "w1", Result: Result{Trial: capacity.Trial{Attempted: math.MaxInt64 - 1, Errors: map[string]int64{"x": 1}}}},
		{Worker: "w2", Result: Result{Trial: capacity.Trial{Attempted: 1, Errors: map[string]int64{"y": math.MaxInt64}}}}})
	if err != nil || m.Attempted != math.MaxInt64 {
		t.Fatalf("Merge = %+v, %v", m, err)
	}
}

// Durations near the int64 limit never wrap to a deadline in the past
// (which would lose every worker at once).
func TestDeadlineSaturates(t *testing.T) {
	huge := time.Duration(math.MaxInt64 / 2)
	for _, tt := range []struct {
		name string
		test string
		load float64
		o    ProbeOptions
	}{
		{"duration", "cps", 1, ProbeOptions{Duration: huge, Timeout: huge}},
		{"hold", "concurrent", 1e9, ProbeOptions{Hold: huge, ConnectTimeout: huge, Timeout: huge}},
		{"teardown", "teardown", 1e300, ProbeOptions{Duration: huge, ConnectTimeout: huge}},
		{"tls rounds", "concurrent", 1e18, ProbeOptions{ConnectTimeout: huge, TLS: &TLSOptions{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := Deadline(tt.test, tt.load, tt.o, 1); d < huge {
				t.Fatalf("Deadline = %v; want at least %v", d, huge)
			}
		})
	}
}

// readyFake dials n fake workers that answer hello, and waits for c to
// pick them.
func readyFakes(t *testing.T, c *Controller, ids ...string) []*fakeWorker {
	var fs []*fakeWorker
	for _, id := range ids {
		f := dialFake(t, c, id, -1)
		f.recv(t, TypeHello)
		f.send(t, TypeReady, &protocol.Custom{Data: EncodeReady(Ready{Version: Version, Runtime: RuntimeKernel})})
		fs = append(fs, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return fs
}

// A hostile worker's messages during a trial: results for another trial
// id and messages of the wrong types are ignored, a duplicate result does
// not add up, a refusal mid-search loses the worker; the trial's numbers
// are those of the one valid result.
func TestControllerHostileTrialMessages(t *testing.T) {
	c := listen(t, 1, 20*time.Second, nil)
	f := readyFakes(t, c, "h")[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good := Result{Trial: capacity.Trial{Attempted: 10, Achieved: 10, Duration: time.Second}}
	go func() {
		s, err := DecodeTrial(f.recv(t, TypeTrial).Data.(*protocol.Custom).Data)
		if err != nil {
			t.Error(err)
			return
		}
		wrong := good
		wrong.ID, wrong.Trial.Attempted = s.ID+1, 1e9
		f.send(t, TypeResult, &protocol.Custom{Data: EncodeResult(wrong)})          // another trial's
		f.send(t, TypeHeld, &protocol.Custom{Data: map[string]any{"id": "x"}})      // malformed held
		f.send(t, TypeHello, &protocol.Custom{Data: map[string]any{"v": int64(2)}}) // a controller's type
		f.send(t, protocol.TypeSpawning, nil)                                       // a Locust type
		f.send(t, protocol.TypeStats, map[string]any{"junk": true})
		good.ID = s.ID
		f.send(t, TypeResult, &protocol.Custom{Data: EncodeResult(good)})
		f.send(t, TypeResult, &protocol.Custom{Data: EncodeResult(good)}) // a duplicate
	}()
	tr, err := c.Trial(ctx, "cps", 10, false, probeOpts("127.0.0.1:9"))
	if err != nil || tr.Attempted != 10 || tr.Achieved != 10 || tr.GeneratorLimit != "" {
		t.Fatalf("trial %+v, %v; want the one valid result", tr, err)
	}
	// A refusal from a picked worker mid-search: lost, every later trial
	// invalid (never run on a worker that says it cannot).
	f.send(t, TypeReady, &protocol.Custom{Data: EncodeReady(Ready{Version: 1, Runtime: RuntimeKernel})})
	f.recv(t, protocol.TypeQuit)
	tr, err = c.Trial(ctx, "cps", 10, false, probeOpts("127.0.0.1:9"))
	if err != nil || !strings.Contains(tr.GeneratorLimit, "(h) lost: it refused the bench exchange: bench exchange version 1") {
		t.Fatalf("trial after a refusal %+v, %v", tr, err)
	}
}

// Garbage on the controller's port (not ZMTP, ZMTP with bad msgpack, a
// connection that never speaks) neither crashes it nor stops a real worker
// from joining and running a trial.
func TestControllerPortGarbage(t *testing.T) {
	c := listen(t, 1, 20*time.Second, nil)
	addr := c.Addr().String()
	for _, junk := range [][]byte{[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), {0xff, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x7f}, make([]byte, 64<<10)} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = nc.Write(junk)
		_ = nc.Close()
	}
	silent, err := net.Dial("tcp", addr) // never speaks
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	bad := dialFake(t, c, "bad", -1)
	bad.recv(t, TypeHello)
	for _, b := range [][]byte{{0xc1}, {0x93, 0xa5}, []byte("\x93\xa4ping\xc0\xa1x"), []byte("\x93\xb2cicada_bench_ready\x81\xa1v\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\xa1x")} {
		if err := bad.d.Send(b); err != nil {
			t.Fatal(err)
		}
	}
	startWorker(t, c, "real", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if ws := c.Workers(); len(ws) != 1 || !strings.Contains(ws[0], "(real)") {
		t.Fatalf("picked %q; want the real worker", ws)
	}
}

// A flood of identities that register and leave cannot lock the real
// workers out once the identity bound is reached.
func TestControllerIdentityFlood(t *testing.T) {
	old := maxNodes
	maxNodes = 4
	t.Cleanup(func() { maxNodes = old })
	c := listen(t, 1, 20*time.Second, nil)
	for i := range 8 {
		f := dialFake(t, c, "flood"+string(rune('a'+i)), -1)
		f.recv(t, protocol.TypeAck)
		_ = f.d.Close()
		if err := testpeer.Poll(10*time.Second, 5*time.Millisecond, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			n := c.nodes[f.id]
			return n == nil || n.gone != ""
		}); err != nil {
			t.Fatal("the flood's connection not seen gone")
		}
	}
	readyFakes(t, c, "real")
	c.mu.Lock()
	kept := len(c.nodes)
	c.mu.Unlock()
	if kept > maxNodes {
		t.Fatalf("%d identities kept; at most %d", kept, maxNodes)
	}
}

// countWriter counts the log lines written to it.
type countWriter struct{ n atomic.Int64 }

func (w *countWriter) Write(b []byte) (int, error) {
	w.n.Add(int64(bytes.Count(b, []byte("malformed message"))))
	return len(b), nil
}

// A flood of malformed messages does not flood the controller's log: at
// most one warning a second, saying how many were dropped.
func TestControllerMalformedFloodLog(t *testing.T) {
	var w countWriter
	c, err := Listen(Options{Bind: "tcp://127.0.0.1:0", Workers: 1, WaitTimeout: 20 * time.Second, Logger: slog.New(slog.NewTextHandler(&w, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := dialFake(t, c, "flood", -1)
	f.recv(t, TypeHello)
	start := time.Now()
	const n = 2000
	for range n {
		if err := f.d.Send([]byte{0xc1}); err != nil {
			t.Fatal(err)
		}
	}
	f.send(t, TypeReady, &protocol.Custom{Data: EncodeReady(Ready{Version: Version, Runtime: RuntimeKernel})})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil { // the ready after the flood: every message was read
		t.Fatal(err)
	}
	limit := 2 + int64(time.Since(start)/malformedEvery) + 1
	if got := w.n.Load(); got < 1 || got > limit {
		t.Fatalf("%d warnings for %d malformed messages; want 1 to %d", got, n, limit)
	}
}

// A worker's texts reach the controller's terminal, log and report: its
// identity, runtime, generator limit, strain, errors and error kinds lose
// their control characters (no injected log lines, no terminal escapes).
func TestControllerPrintableWorkerTexts(t *testing.T) {
	var logb strings.Builder
	var mu sync.Mutex
	c, err := Listen(Options{Bind: "tcp://127.0.0.1:0", Workers: 1, WaitTimeout: 20 * time.Second,
		Logger: slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logb.Write(b) }), nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const evil = "\x1b[2J\r\nINFO forged line\x07\u009b"
	f := dialFake(t, c, "w"+evil, -1)
	f.recv(t, TypeHello)
	f.send(t, TypeReady, &protocol.Custom{Data: EncodeReady(Ready{Version: Version, Runtime: "kernel" + evil})})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		s, err := DecodeTrial(f.recv(t, TypeTrial).Data.(*protocol.Custom).Data)
		if err != nil {
			t.Error(err)
			return
		}
		f.send(t, TypeResult, &protocol.Custom{Data: EncodeResult(Result{ID: s.ID, Trial: capacity.Trial{Attempted: 2, Failed: 2,
			GeneratorLimit: "limit" + evil, GeneratorStrain: "strain" + evil, Errors: map[string]int64{"kind" + evil: 2}}})})
	}()
	tr, err := c.Trial(ctx, "cps", 1, false, probeOpts("127.0.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	texts := append(c.Workers(), tr.GeneratorLimit, tr.GeneratorStrain)
	for k := range tr.Errors {
		texts = append(texts, k)
	}
	mu.Lock()
	texts = append(texts, strings.ReplaceAll(logb.String(), "\n", ""))
	mu.Unlock()
	for _, s := range texts {
		if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
			t.Fatalf("control characters in %q", s)
		}
	}
	if !strings.Contains(tr.GeneratorLimit, "limit") || tr.Errors["kind"+printable(evil)] != 2 {
		t.Fatalf("trial %+v", tr)
	}
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(b []byte) (int, error) { return w(b) }

// FuzzDecodePrintable: a decoded ready or result holds no control
// character in any text a report or log shows, and stays within its bounds.
func FuzzDecodePrintable(f *testing.F) {
	for _, s := range []string{"a\x1b[2Jb", "x\r\ny", "\u009b31m", "\u200e", "plain"} {
		f.Add(s, s)
	}
	bad := func(s string) bool { return strings.ContainsFunc(s, notPrintable) }
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) { // the wire's strings are UTF-8 (msgpack str)
			return
		}
		rd, err := DecodeReady(EncodeReady(Ready{Version: Version, Runtime: a, Refuse: b}))
		if err == nil && (bad(rd.Runtime) || bad(rd.Refuse) || len(rd.Runtime) > MaxText) {
			t.Fatalf("ready %+v", rd)
		}
		r, err := DecodeResult(wire(t, TypeResult, EncodeResult(Result{Error: a, Trial: capacity.Trial{GeneratorLimit: b, GeneratorStrain: a,
			Errors: map[string]int64{a: 1, b: 2}, TLS: &capacity.TLSInfo{Version: a, Cipher: b}}})))
		if err != nil {
			return
		}
		texts := []string{r.Error, r.Trial.GeneratorLimit, r.Trial.GeneratorStrain, r.Trial.TLS.Version, r.Trial.TLS.Cipher}
		sum := int64(0)
		for k, v := range r.Trial.Errors {
			texts = append(texts, k)
			sum += v
		}
		if sum != 1+2 && a != b || sum != 2 && a == b {
			t.Fatalf("errors %v", r.Trial.Errors)
		}
		for _, s := range texts {
			if bad(s) {
				t.Fatalf("control characters in %q", s)
			}
		}
	})
}

// A worker killed at each phase of a trial (its connection closed, as
// SIGKILL does): the trial is INVALID naming it, promptly, and the worker
// still running is told to abort whenever it had been sent the trial.
func TestControllerWorkerKilledAtEachPhase(t *testing.T) {
	for _, tt := range []struct {
		phase      string
		test       string
		abortAlive bool
	}{
		{"after the pick", "cps", false},
		{"on the trial", "cps", true},
		{"at the barrier", "concurrent", true},
		{"after go", "concurrent", true},
	} {
		t.Run(tt.phase, func(t *testing.T) {
			c := listen(t, 2, 20*time.Second, nil)
			fs := readyFakes(t, c, "alive", "victim")
			alive, victim := fs[0], fs[1]
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tt.phase == "after the pick" {
				_ = victim.d.Close()
				if err := testpeer.Poll(10*time.Second, 5*time.Millisecond, func() bool {
					c.mu.Lock()
					defer c.mu.Unlock()
					return c.nodes["victim"].gone != ""
				}); err != nil {
					t.Fatal("victim not seen gone")
				}
			}
			go func() {
				if tt.phase == "after the pick" {
					return
				}
				as, err := DecodeTrial(alive.recv(t, TypeTrial).Data.(*protocol.Custom).Data)
				if err != nil {
					t.Error(err)
					return
				}
				victim.recv(t, TypeTrial)
				switch tt.phase {
				case "on the trial":
					_ = victim.d.Close()
				case "at the barrier":
					alive.send(t, TypeHeld, &protocol.Custom{Data: EncodeID(as.ID, false)})
					_ = victim.d.Close()
				case "after go":
					alive.send(t, TypeHeld, &protocol.Custom{Data: EncodeID(as.ID, false)})
					victim.send(t, TypeHeld, &protocol.Custom{Data: EncodeID(as.ID, false)})
					victim.recv(t, TypeGo)
					_ = victim.d.Close()
				}
			}()
			start := time.Now()
			tr, err := c.Trial(ctx, tt.test, 10, tt.test == "concurrent", probeOpts("127.0.0.1:9"))
			if err != nil || !strings.Contains(tr.GeneratorLimit, "(victim) lost") || time.Since(start) > 15*time.Second {
				t.Fatalf("trial %+v, %v after %v", tr, err, time.Since(start))
			}
			if tt.abortAlive {
				alive.recv(t, TypeAbort)
			}
		})
	}
}

// A result whose achieved load its own counts do not allow (more
// successes than attempts, bytes it did not receive) makes its worker
// lost and the trial INVALID, never a pass the device did not sustain.
func TestControllerInconsistentResult(t *testing.T) {
	sec := time.Second
	for _, tt := range []struct {
		name  string
		test  string
		trial capacity.Trial
		lost  bool
	}{
		{"cps from nothing", "cps", capacity.Trial{Achieved: 1e6, Duration: sec}, true},
		{"cps over no time", "cps", capacity.Trial{Attempted: 10, Achieved: 10}, true},
		{"tps twice the attempts", "tps", capacity.Trial{Attempted: 10, Achieved: 20, Duration: sec}, true},
		{"throughput without bytes", "throughput", capacity.Trial{Attempted: 10, Achieved: 100, Duration: sec}, true},
		{"concurrent above attempts", "concurrent", capacity.Trial{Attempted: 5, Achieved: 6}, true},
		{"cps exact", "cps", capacity.Trial{Attempted: 10, Achieved: 10, Duration: sec}, false},
		{"throughput exact", "throughput", capacity.Trial{Bytes: 125000, Achieved: 1, Duration: sec}, false},
		{"concurrent exact", "concurrent", capacity.Trial{Attempted: 5, Achieved: 5}, false},
		{"failed trial", "cps", capacity.Trial{Attempted: 10, Failed: 10}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := listen(t, 1, 20*time.Second, nil)
			f := readyFakes(t, c, "w")[0]
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			go func() {
				s, err := DecodeTrial(f.recv(t, TypeTrial).Data.(*protocol.Custom).Data)
				if err != nil {
					t.Error(err)
					return
				}
				f.send(t, TypeResult, &protocol.Custom{Data: EncodeResult(Result{ID: s.ID, Trial: tt.trial})})
			}()
			tr, err := c.Trial(ctx, tt.test, 5, tt.test == "concurrent", probeOpts("127.0.0.1:9"))
			if err != nil {
				t.Fatal(err)
			}
			if lost := strings.Contains(tr.GeneratorLimit, "(w) lost during the trial: its result is inconsistent"); lost != tt.lost {
				t.Fatalf("trial %+v; lost %v, want %v", tr, lost, tt.lost)
			}
		})
	}
}
