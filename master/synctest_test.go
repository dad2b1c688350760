package master

import (
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
)

// memTransport is an in-memory transport: what the master sends is kept
// per worker, and deliver hands the master a worker's message as the
// Router's goroutine would. Everything blocks on channels or the inbox's
// condition variable, so a synctest bubble goes idle and its fake clock
// runs the master's tickers.
type memTransport struct {
	h      zmtp.Handler
	events chan zmtp.Event
	once   sync.Once
	mu     sync.Mutex
	sent   map[string][]string // message types sent, per worker id
}

func newMemTransport(h zmtp.Handler) *memTransport {
	return &memTransport{h: h, events: make(chan zmtp.Event), sent: map[string][]string{}}
}

func (t *memTransport) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (t *memTransport) Events() <-chan zmtp.Event { return t.events }
func (t *memTransport) Close() error {
	t.once.Do(func() { close(t.events) })
	return nil
}

func (t *memTransport) Send(id string, frames ...[]byte) error {
	msg, err := protocol.Decode(frames[0])
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.sent[id] = append(t.sent[id], msg.Type)
	t.mu.Unlock()
	return nil
}

// sentTo returns the message types sent to id so far.
func (t *memTransport) sentTo(id string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.sent[id]...)
}

// deliver hands the master one message from worker id, ending a poll round.
func (t *memTransport) deliver(tb testing.TB, id, typ string, data any) {
	tb.Helper()
	b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: id})
	if err != nil {
		tb.Fatal(err)
	}
	t.h.HandleMessage(id, [][]byte{b})
	t.h.FlushMessages()
}

// workerState returns the state of worker id in Status, "" if absent.
func workerState(m *Master, id string) string {
	for _, w := range m.Status().Workers {
		if w.ID == id {
			return w.State
		}
	}
	return ""
}

// startMemMaster runs a master on an in-memory transport, inside the
// caller's synctest bubble, until the test's cleanup (which runs in the
// bubble, so the master ends before it does). With checkRun, Run's error
// fails the test.
func startMemMaster(t *testing.T, o Options, checkRun bool) (*Master, *memTransport) {
	t.Helper()
	var tr *memTransport
	m, err := newMaster(o, func(_ string, zo zmtp.Options) (transport, error) {
		tr = newMemTransport(zo.Handler)
		return tr, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := m.Run(ctx); err != nil && checkRun {
			t.Errorf("Run = %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return m, tr
}

// TestLivenessOnFakeClock: on synctest's clock, a worker whose heartbeats
// stop is marked missing at exactly the tick Locust's heartbeat_worker
// would (its HeartbeatLiveness ticks used up, then one more finding it
// below zero), and removed exactly DeadTicks ticks later; a heartbeat
// restarts the count.
func TestLivenessOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logBuf{}
		o := testOptions(logs)
		o.HeartbeatInterval = time.Second
		o.HeartbeatLiveness = 3
		o.DeadTicks = 5
		m, tr := startMemMaster(t, o, true)
		start := time.Now()
		at := func(d time.Duration) { // sleep until start+d, then let the loop settle
			time.Sleep(time.Until(start.Add(d)))
			synctest.Wait()
		}

		tr.deliver(t, "w_1", protocol.TypeClientReady, &protocol.ClientReady{Version: "2.12.1"})
		synctest.Wait()
		if got := tr.sentTo("w_1"); len(got) != 1 || got[0] != protocol.TypeAck {
			t.Fatalf("sent to w_1 %v; want [ack]", got)
		}
		// A heartbeat at 2.5 s restarts the count: ticks 3, 4, 5 and 6
		// take liveness 3 to -1, tick 7 finds it below zero.
		at(2500 * time.Millisecond)
		tr.deliver(t, "w_1", protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateReady})
		at(7*time.Second - time.Nanosecond)
		if s := workerState(m, "w_1"); s != protocol.StateReady {
			t.Fatalf("just before the 7th tick w_1 is %q; want ready", s)
		}
		at(7 * time.Second)
		if s := workerState(m, "w_1"); s != protocol.StateMissing {
			t.Fatalf("at the 7th tick w_1 is %q; want missing; logs:\n%s", s, logs)
		}
		if !logs.has("Worker w_1 failed to send heartbeat, setting state to missing.") {
			t.Errorf("no missing line; logs:\n%s", logs)
		}
		// Missing at liveness -1: ticks 8 to 11 take it to -5, tick 12
		// finds it at -DeadTicks.
		at(12*time.Second - time.Nanosecond)
		if s := workerState(m, "w_1"); s != protocol.StateMissing {
			t.Fatalf("just before the 12th tick w_1 is %q; want missing", s)
		}
		at(12 * time.Second)
		if s := workerState(m, "w_1"); s != "" {
			t.Fatalf("at the 12th tick w_1 is %q; want removed; logs:\n%s", s, logs)
		}
		if !logs.has("Worker w_1 (index 0) missing for too long, removing it.") {
			t.Errorf("no removal line; logs:\n%s", logs)
		}
	})
}

// TestStopTimeoutOnFakeClock: Stop waits for the workers to report no
// users up to StopTimeout+StopWait, then logs the timeout and returns, on
// the first deadline check at or after that instant.
func TestStopTimeoutOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logBuf{}
		o := testOptions(logs)
		o.HeartbeatLiveness = 1000 // the silent worker stays ready
		o.StopTimeout = 2 * time.Second
		o.StopWait = 3 * time.Second
		o.UserClasses = []UserClass{{Name: "A"}}
		m, tr := startMemMaster(t, o, false)
		tr.deliver(t, "w_1", protocol.TypeClientReady, &protocol.ClientReady{Version: "2.12.1"})
		synctest.Wait()
		if err := m.Start(2, 100, nil); err != nil {
			t.Fatal(err)
		}
		tr.deliver(t, "w_1", protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: map[string]int64{"A": 2}, UserCount: 2})
		synctest.Wait()
		if n := m.Status().UserCount; n != 2 {
			t.Fatalf("user count %d; want 2", n)
		}
		begin := time.Now()
		var stopped time.Time
		stopDone := make(chan struct{})
		go func() {
			defer close(stopDone)
			if err := m.Stop(context.Background()); err != nil {
				t.Errorf("Stop = %v", err)
			}
			stopped = time.Now()
		}()
		synctest.Wait()
		if got := tr.sentTo("w_1"); got[len(got)-1] != protocol.TypeStop {
			t.Fatalf("sent to w_1 %v; want stop last", got)
		}
		<-stopDone
		due := o.StopTimeout + o.StopWait
		if took := stopped.Sub(begin); took < due || took > due+houseInterval(testOptions(nil).ReportWait) {
			t.Errorf("Stop returned after %v; want %v, to the next deadline check", took, due)
		}
		if !logs.has("Timeout waiting for all workers to stop") {
			t.Errorf("no timeout line; logs:\n%s", logs)
		}
	})
}
