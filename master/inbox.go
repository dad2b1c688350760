package master

import (
	"fmt"
	"sync"

	"github.com/cicada-load/cicada/protocol"
)

// inboxLimit bounds the decoded messages waiting for the loop. Beyond it
// the Router's goroutine waits, which stops reading the workers: TCP flow
// control then holds them back instead of the master's memory growing.
const inboxLimit = 16384

// inbox is the zmtp.Handler of the master's Router: it decodes each message
// on the Router's goroutine and hands the loop one batch per poll round, so
// that the loop wakes once per round rather than once per message.
type inbox struct {
	mu     sync.Mutex
	space  sync.Cond // signalled when the loop takes a batch, or on close
	msgs   []inbound
	closed bool
	ready  chan struct{} // capacity 1: a batch is waiting
}

func newInbox() *inbox {
	q := &inbox{ready: make(chan struct{}, 1)}
	q.space.L = &q.mu
	return q
}

// HandleMessage decodes one message (stats reports from the pool: the loop
// releases them once merged) and queues it.
func (q *inbox) HandleMessage(id string, frames [][]byte) {
	in := inbound{id: id}
	if len(frames) == 0 {
		in.err = fmt.Errorf("%w: empty message", protocol.ErrMalformed)
	} else {
		in.msg, in.err = protocol.DecodePooled(frames[0])
		in.foreignID = in.err == nil && in.msg.NodeID != id
	}
	q.mu.Lock()
	for len(q.msgs) >= inboxLimit && !q.closed {
		// The loop may not have been told yet (FlushMessages ends a
		// round, and one round may bring more than the limit).
		q.FlushMessages()
		q.space.Wait()
	}
	if q.closed {
		q.mu.Unlock()
		in.release()
		return
	}
	q.msgs = append(q.msgs, in)
	q.mu.Unlock()
}

// FlushMessages wakes the loop for the batch.
func (q *inbox) FlushMessages() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take swaps the waiting batch for spare (an emptied earlier batch).
func (q *inbox) take(spare []inbound) []inbound {
	q.mu.Lock()
	batch := q.msgs
	q.msgs = spare[:0]
	q.space.Broadcast()
	q.mu.Unlock()
	return batch
}

// close drops what waits and makes later messages be dropped, so that the
// Router's goroutine never waits for a loop that has ended.
func (q *inbox) close() {
	q.mu.Lock()
	q.closed = true
	for i := range q.msgs {
		q.msgs[i].release()
	}
	clear(q.msgs)
	q.msgs = q.msgs[:0]
	q.space.Broadcast()
	q.mu.Unlock()
}

// release hands a pooled stats report back.
func (in *inbound) release() {
	if r, ok := in.msg.Data.(*protocol.StatsReport); ok {
		r.Release()
	}
}
