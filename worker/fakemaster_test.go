package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
)

// fakeMaster is an in-process master built on zmtp.Router that records every
// message it receives.
type fakeMaster struct {
	t      testing.TB
	r      *zmtp.Router
	port   int
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu    sync.Mutex
	msgs  []got
	conns int // Connected events seen
	notif chan struct{}
}

type got struct {
	id  string
	at  time.Time
	msg protocol.Message
}

func newFakeMaster(t testing.TB, port int) *fakeMaster {
	t.Helper()
	m, err := newFakeMasterTry(t, port)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return m
}

func newFakeMasterTry(t testing.TB, port int) (*fakeMaster, error) {
	r, err := zmtp.Listen("tcp://127.0.0.1:"+strconv.Itoa(port), zmtp.Options{})
	if err != nil {
		return nil, err
	}
	m := &fakeMaster{t: t, r: r, port: r.Addr().(*net.TCPAddr).Port, done: make(chan struct{}), notif: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.loop(ctx)
	t.Cleanup(m.close)
	return m, nil
}

func (m *fakeMaster) loop(ctx context.Context) {
	defer close(m.done)
	events := m.r.Events()
	recvd := make(chan got, 1024)
	go func() {
		defer close(recvd)
		for {
			id, frames, err := m.r.Recv(ctx)
			if err != nil {
				return
			}
			msg, err := protocol.Decode(frames[0])
			if err != nil {
				m.t.Errorf("fake master: undecodable message from %q: %v", id, err)
				continue
			}
			if msg.NodeID != id {
				m.t.Errorf("fake master: node_id %q != identity %q", msg.NodeID, id)
			}
			recvd <- got{id: id, at: time.Now(), msg: msg}
		}
	}()
	for {
		select {
		case g, ok := <-recvd:
			if !ok {
				return
			}
			m.mu.Lock()
			m.msgs = append(m.msgs, g)
			m.mu.Unlock()
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Kind == zmtp.Connected {
				m.mu.Lock()
				m.conns++
				m.mu.Unlock()
			}
		}
	}
}

func (m *fakeMaster) close() {
	m.once.Do(m.doClose)
}

func (m *fakeMaster) doClose() {
	m.cancel()
	_ = m.r.Close()
	<-m.done
}

func (m *fakeMaster) send(id, typ string, data any) {
	m.t.Helper()
	b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: id})
	if err != nil {
		m.t.Fatalf("encode %s: %v", typ, err)
	}
	m.sendRaw(id, b)
}

func (m *fakeMaster) sendRaw(id string, frames ...[]byte) {
	m.t.Helper()
	// The peer may be between connections: retry briefly.
	var err error
	_ = testpeer.Poll(10*time.Second, 5*time.Millisecond, func() bool {
		err = m.r.Send(id, frames...)
		return !errors.Is(err, zmtp.ErrUnknownPeer)
	})
	if err != nil {
		m.t.Fatalf("send to %s: %v", id, err)
	}
}

// all returns the messages of type typ received so far (all types if "").
func (m *fakeMaster) all(typ string) []got {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []got
	for _, g := range m.msgs {
		if typ == "" || g.msg.Type == typ {
			out = append(out, g)
		}
	}
	return out
}

func (m *fakeMaster) count(typ string) int { return len(m.all(typ)) }

// await waits until n messages of type typ have arrived and returns the nth.
func (m *fakeMaster) await(typ string, n int, d time.Duration) got {
	m.t.Helper()
	var gs []got
	waitFor(m.t, d, fmt.Sprintf("%d %q messages (have %d)", n, typ, m.count(typ)), func() bool {
		gs = m.all(typ)
		return len(gs) >= n
	})
	return gs[n-1]
}

func (m *fakeMaster) connections() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.conns
}

// spawnMsg builds a spawn message.
func spawnMsg(ts float64, counts map[string]int64, stopTimeout *float64) *protocol.Spawn {
	host := "http://127.0.0.1:1"
	return &protocol.Spawn{Timestamp: ts, UserClassesCount: counts, Host: &host, StopTimeout: stopTimeout, ParsedOptions: map[string]any{}}
}

func f64(v float64) *float64 { return &v }

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("CICADA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// fastOptions returns worker options with short intervals for tests.
func fastOptions(t testing.TB, port int) Options {
	return Options{
		MasterPort:        port,
		Logger:            testLogger(t),
		HeartbeatInterval: 50 * time.Millisecond,
		StatsInterval:     time.Hour, // only the first and the final report
		ConnectInterval:   200 * time.Millisecond,
		ConnectTimeout:    -1,
		Transport:         zmtp.Options{ReconnectMin: 20 * time.Millisecond, ReconnectMax: 100 * time.Millisecond, Linger: time.Second},
	}
}

type runningWorker struct {
	w      *Worker
	cancel context.CancelFunc
	res    chan error
}

func startWorker(t testing.TB, opts Options, sc Scenario) *runningWorker {
	t.Helper()
	w, err := New(opts, sc)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rw := &runningWorker{w: w, cancel: cancel, res: make(chan error, 1)}
	go func() { rw.res <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-rw.res:
		case <-time.After(15 * time.Second):
			t.Errorf("worker Run did not return after cancel")
		}
	})
	return rw
}

// result waits for Run's result.
func (rw *runningWorker) result(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case err := <-rw.res:
		rw.res <- err // keep it for Cleanup
		return err
	case <-time.After(d):
		t.Fatalf("Run did not return within %v", d)
		return nil
	}
}

// register runs the handshake: wait for the nth client_ready, ack it.
func register(t testing.TB, m *fakeMaster, rw *runningWorker, nth int, index int64) {
	t.Helper()
	m.await(protocol.TypeClientReady, nth, 10*time.Second)
	m.send(rw.w.NodeID(), protocol.TypeAck, &protocol.Ack{Index: index, Cicada: protocol.CicadaVersion})
	waitFor(t, 10*time.Second, "registration", rw.w.Registered)
}

// startRegistered starts a worker of twoClasses with fastOptions against a
// new fake master and registers it with the given worker index.
func startRegistered(t *testing.T, index int64) (*fakeMaster, *runningWorker) {
	t.Helper()
	m := newFakeMaster(t, 0)
	rw := startWorker(t, fastOptions(t, m.port), twoClasses())
	register(t, m, rw, 1, index)
	return m, rw
}
