package master

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/leakcheck"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/stats"
)

// Generous deadlines: the tests run on a loaded 2-core machine with -race.
const (
	waitLong  = 30 * time.Second
	waitShort = 10 * time.Second
)

func TestMain(m *testing.M) { leakcheck.Main(m, "/cicada/master/") }

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testpeer.Eventually(t, within, what, cond)
}

// logBuf collects log lines (message text only) for assertions.
type logBuf struct {
	mu    sync.Mutex
	lines []string
	tee   bool
}

func (l *logBuf) Enabled(context.Context, slog.Level) bool { return true }
func (l *logBuf) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	if l.tee {
		fmt.Fprintln(os.Stderr, line)
	}
	return nil
}
func (l *logBuf) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logBuf) WithGroup(string) slog.Handler      { return l }

func (l *logBuf) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func (l *logBuf) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// syncBuf is a goroutine-safe bytes.Buffer for Options.Stderr.
type syncBuf = testpeer.SyncBuffer

// testOptions returns options for an in-process master on an ephemeral
// loopback port with fast timings.
func testOptions(logs *logBuf) Options {
	return Options{
		BindHost:           "127.0.0.1",
		BindPort:           -1,
		Logger:             slog.New(logs),
		ReportWait:         300 * time.Millisecond,
		FinalReportTimeout: 500 * time.Millisecond,
		FinalReportGrace:   200 * time.Millisecond,
		StatsInterval:      100 * time.Millisecond,
		CSVInterval:        100 * time.Millisecond,
		WaitLogInterval:    50 * time.Millisecond,
		ShapeTick:          50 * time.Millisecond,
	}
}

// harness runs a master in the background.
type harness struct {
	t      testing.TB
	m      *Master
	logs   *logBuf
	cancel context.CancelFunc
	done   chan struct{}
	code   int
	err    error
}

func startMaster(t testing.TB, opts Options, logs *logBuf) *harness {
	t.Helper()
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, m: m, logs: logs, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		var res Result
		res, h.err = m.Run(ctx)
		h.code = res.ExitCode()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(waitLong):
			t.Errorf("master did not stop")
		}
	})
	return h
}

func (h *harness) endpoint() string {
	return "tcp://" + h.m.Addr().(*net.TCPAddr).String()
}

// wait waits for Run to return and gives its results.
func (h *harness) wait() (int, error) {
	h.t.Helper()
	select {
	case <-h.done:
		return h.code, h.err
	case <-time.After(waitLong):
		h.t.Fatalf("Run did not return; logs:\n%s", h.logs)
		return 0, nil
	}
}

func (h *harness) worker(id string) *fakeWorker {
	return dialWorker(h.t, h.endpoint(), id)
}

// fakeWorker is a scripted worker on a real DEALER.
type fakeWorker struct {
	t    testing.TB
	id   string
	d    *zmtp.Dealer
	msgs chan protocol.Message
	stop chan struct{}
	wg   sync.WaitGroup
}

func dialWorker(t testing.TB, endpoint, id string) *fakeWorker {
	t.Helper()
	d, err := zmtp.Dial(endpoint, id, zmtp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &fakeWorker{t: t, id: id, d: d, msgs: make(chan protocol.Message, 10000), stop: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			frames, err := d.Recv(ctx)
			if err != nil {
				return
			}
			msg, err := protocol.Decode(frames[0])
			if err != nil {
				t.Errorf("worker %s: undecodable message from master: %v", id, err)
				continue
			}
			select {
			case w.msgs <- msg:
			default:
				t.Errorf("worker %s: message buffer full", id)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.close()
		w.wg.Wait()
	})
	return w
}

func (w *fakeWorker) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
		w.d.Close()
	}
}

func (w *fakeWorker) send(typ string, data any) {
	w.t.Helper()
	b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: w.id})
	if err != nil {
		w.t.Fatal(err)
	}
	w.sendRaw(b)
}

func (w *fakeWorker) sendRaw(frames ...[]byte) {
	w.t.Helper()
	if err := w.d.Send(frames...); err != nil {
		w.t.Fatal(err)
	}
}

// expect returns the next message of type typ, skipping others (which are
// dropped), or fails.
func (w *fakeWorker) expect(typ string) protocol.Message {
	w.t.Helper()
	timeout := time.After(waitShort)
	for {
		select {
		case m := <-w.msgs:
			if m.Type == typ {
				return m
			}
		case <-timeout:
			w.t.Fatalf("worker %s: no %s message within %v", w.id, typ, waitShort)
		}
	}
}

// drain returns every message received so far.
func (w *fakeWorker) drain() []protocol.Message {
	var out []protocol.Message
	for {
		select {
		case m := <-w.msgs:
			out = append(out, m)
		default:
			return out
		}
	}
}

func (w *fakeWorker) ready(data *protocol.ClientReady) int64 {
	w.t.Helper()
	w.send(protocol.TypeClientReady, data)
	ack := w.expect(protocol.TypeAck)
	return ack.Data.(*protocol.Ack).Index
}

func (w *fakeWorker) heartbeat(state string) {
	w.send(protocol.TypeHeartbeat, &protocol.Heartbeat{State: state, CPUUsage: 1.5, MemoryUsage: 1 << 20})
}

// beat sends heartbeats every interval until stop is closed, in state
// *state (read under mu).
func (w *fakeWorker) beatEvery(interval time.Duration, state func() string) (stop func()) {
	done := make(chan struct{})
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-w.stop:
				return
			case <-t.C:
				b, _ := protocol.Encode(protocol.Message{Type: protocol.TypeHeartbeat,
					Data: &protocol.Heartbeat{State: state(), CPUUsage: 1, MemoryUsage: 1 << 20}, NodeID: w.id})
				_ = w.d.Send(b)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// report builds a stats report with n successes and f failures on GET /x.
func report(n, f int, classes map[string]int64) *protocol.StatsReport {
	r := stats.NewRecorder(nil)
	r.Clear()
	for i := 0; i < n; i++ {
		r.Record("GET", "/x", 3*time.Millisecond, 10, "")
	}
	for i := 0; i < f; i++ {
		r.Record("GET", "/x", 3*time.Millisecond, 10, "HTTPError('500 Server Error')")
	}
	var users int64
	for _, c := range classes {
		users += c
	}
	return r.Report(classes, users)
}

func ready(version string) *protocol.ClientReady {
	return &protocol.ClientReady{Version: version}
}

var skipCheck = &protocol.ClientReady{VersionSkipCheck: true}
