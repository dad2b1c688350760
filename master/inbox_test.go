package master

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

func heartbeatPayload(t *testing.T) []byte {
	t.Helper()
	b, err := protocol.Encode(protocol.Message{Type: protocol.TypeHeartbeat, NodeID: "w",
		Data: &protocol.Heartbeat{State: protocol.StateRunning, CPUUsage: 1, MemoryUsage: 1}})
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

// A round that brings more messages than the limit, before any
// FlushMessages, still reaches the loop: the full inbox wakes it.
func TestInboxOverfullRoundWakesLoop(t *testing.T) {
	q := newInbox()
	hb := heartbeatPayload(t)
	const n = 3*inboxLimit + 5
	done := make(chan struct{})
	go func() {
		for range n {
			q.HandleMessage("w", [][]byte{hb})
		}
		close(done)
	}()
	got := 0
	var batch []inbound
	deadline := time.After(30 * time.Second)
	for got < n {
		select {
		case <-q.ready:
		case <-done:
			// All handed over; take the rest without a wake-up.
		case <-deadline:
			t.Fatalf("took %d of %d messages; the producer is stuck", got, n)
		}
		batch = q.take(batch)
		got += len(batch)
		clear(batch)
	}
	<-done
}
