package zmtp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/leakcheck"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// Generous deadlines: the tests run on a loaded 2-core machine with -race.
const (
	waitLong  = 20 * time.Second
	waitShort = 5 * time.Second
)

func TestMain(m *testing.M) { leakcheck.Main(m, "/protocol/zmtp/") }

// checkNoLeakedGoroutines waits until no goroutine of this package runs.
func checkNoLeakedGoroutines(timeout time.Duration) error {
	return leakcheck.Check("/protocol/zmtp/", timeout)
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testpeer.Eventually(t, timeout, what, cond)
}

// logCapture is a slog.Handler that keeps records for assertions.
type logCapture struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r.Clone())
	h.mu.Unlock()
	return nil
}
func (h *logCapture) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCapture) WithGroup(string) slog.Handler      { return h }

// errs returns the "err" attributes logged so far.
func (h *logCapture) errs() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []error
	for _, r := range h.recs {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				if e, ok := a.Value.Any().(error); ok {
					out = append(out, e)
				}
			}
			return true
		})
	}
	return out
}

// hasErr reports whether an error matching target was logged.
func (h *logCapture) hasErr(target error) bool {
	for _, e := range h.errs() {
		if errors.Is(e, target) {
			return true
		}
	}
	return false
}

func (h *logCapture) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		out = append(out, r.Message)
	}
	return out
}

func (h *logCapture) waitErr(t testing.TB, target error) {
	t.Helper()
	waitFor(t, waitLong, fmt.Sprintf("a logged error matching %v (logged: %v)", target, h.errs()), func() bool { return h.hasErr(target) })
}

// testOpts are fast options for tests.
func testOpts(log *logCapture) Options {
	o := Options{
		ReconnectMin: 10 * time.Millisecond,
		ReconnectMax: 200 * time.Millisecond,
		Linger:       -1,
	}
	if log != nil {
		o.Logger = slog.New(log)
	}
	return o
}

func newRouter(t testing.TB, opts Options) *Router {
	t.Helper()
	r, err := Listen("tcp://127.0.0.1:0", opts)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	// A test meant for one serving path must not run on the other.
	if usesPoller := r.poll != nil; runtime.GOOS == "linux" && usesPoller == opts.noPoller {
		t.Fatalf("Listen with noPoller=%v: serving with the poller = %v", opts.noPoller, usesPoller)
	}
	return r
}

func endpointOf(r *Router) string { return "tcp://" + r.Addr().String() }

func newDealer(t testing.TB, endpoint, id string, opts Options) *Dealer {
	t.Helper()
	d, err := Dial(endpoint, id, opts)
	if err != nil {
		t.Fatalf("Dial(%q, %q): %v", endpoint, id, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// waitEvent returns the next event of kind from ch (skipping others).
func waitEvent(t testing.TB, ch <-chan Event, kind EventKind, timeout time.Duration) Event {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("events channel closed while waiting for %v", kind)
			}
			if ev.Kind == kind {
				return ev
			}
		case <-timer.C:
			t.Fatalf("no %v event within %v", kind, timeout)
		}
	}
}

// waitConnectedID waits for a Connected event of the given identity.
func waitConnectedID(t testing.TB, ch <-chan Event, id string) Event {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		ev := waitEvent(t, ch, Connected, time.Until(deadline))
		if ev.Identity == id {
			return ev
		}
	}
}

func routerRecv(t testing.TB, r *Router) (string, [][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	id, frames, err := r.Recv(ctx)
	if err != nil {
		t.Fatalf("Router.Recv: %v", err)
	}
	return id, frames
}

func dealerRecv(t testing.TB, d *Dealer) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	frames, err := d.Recv(ctx)
	if err != nil {
		t.Fatalf("Dealer.Recv: %v", err)
	}
	return frames
}

func framesEqual(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}

func strFrames(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
