package master

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

func heartbeatPayload(t *testing.T) []byte {
	t.Helper()
	b, err := protocol.Encode(protocol.Message{Type: protocol.TypeHeartbeat, NodeID: "w",
		Data: &protocol.Heartbeat{State: StateRunning, CPUUsage: 1, MemoryUsage: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A full inbox holds the Router's goroutine back until the loop takes a
// batch; close releases it and drops what waits.
func TestInboxBoundedAndClosable(t *testing.T) {
	q := newInbox()
	hb := heartbeatPayload(t)
	for range inboxLimit {
		q.HandleMessage("w", [][]byte{hb})
	}
	q.FlushMessages()
	q.FlushMessages() // a second wake-up while one is pending is dropped
	blocked := make(chan struct{})
	go func() {
		q.HandleMessage("w", [][]byte{hb})
		close(blocked)
	}()
	select {
	case <-blocked:
		t.Fatal("HandleMessage returned although the inbox is full")
	case <-time.After(50 * time.Millisecond):
	}
	<-q.ready
	batch := q.take(nil)
	if len(batch) != inboxLimit {
		t.Fatalf("batch of %d; want %d", len(batch), inboxLimit)
	}
	if batch[0].err != nil || batch[0].msg.Type != protocol.TypeHeartbeat || batch[0].id != "w" {
		t.Fatalf("first message %+v", batch[0])
	}
	select {
	case <-blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("HandleMessage still blocked after take")
	}
	if got := q.take(batch); len(got) != 1 {
		t.Fatalf("second batch of %d; want 1", len(got))
	}

	for range inboxLimit {
		q.HandleMessage("w", [][]byte{hb})
	}
	blocked = make(chan struct{})
	go func() {
		q.HandleMessage("w", [][]byte{hb})
		close(blocked)
	}()
	q.close()
	select {
	case <-blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("HandleMessage still blocked after close")
	}
	if got := q.take(nil); len(got) != 0 {
		t.Fatalf("%d messages after close", len(got))
	}
}

func TestInboxMalformed(t *testing.T) {
	q := newInbox()
	q.HandleMessage("w", nil)
	q.HandleMessage("w", [][]byte{{0xc1}})
	batch := q.take(nil)
	if len(batch) != 2 || batch[0].err == nil || batch[1].err == nil {
		t.Fatalf("want two decode errors, got %+v", batch)
	}
}
