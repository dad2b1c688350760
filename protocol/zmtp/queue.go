package zmtp

import (
	"sync"
	"time"
)

// Batch bounds of one write: Go's writev takes at most 1024 buffers, and a
// bounded batch gives WriteTimeout a meaning independent of queue length.
const (
	maxBatchMsgs  = 1024
	maxBatchBytes = 1 << 20
)

// sendQueue is a bounded FIFO of encoded messages that wakes one writer
// goroutine (the nats-server pattern: a mutex-guarded slice plus a wake-up
// channel of capacity 1, instead of a channel per message). push never
// blocks.
type sendQueue struct {
	limit      int           // messages
	limitBytes int64         // bytes
	wake       chan struct{} // capacity 1; a token means "look at the queue"
	mu         struct {
		sync.Mutex
		msgs    [][]byte
		bytes   int64         // sum of len(msgs)
		writing bool          // a batch taken by take is being written
		closed  error         // non-nil: push fails with it
		idle    chan struct{} // closed when the queue drains, for waitIdle
	}
}

func newSendQueue(limit int, limitBytes int64) *sendQueue {
	return &sendQueue{limit: limit, limitBytes: limitBytes, wake: make(chan struct{}, 1)}
}

// push appends an encoded message. It returns ErrQueueFull beyond the limit
// and the close error after close.
func (q *sendQueue) push(m []byte) error {
	q.mu.Lock()
	if q.mu.closed != nil {
		err := q.mu.closed
		q.mu.Unlock()
		return err
	}
	if len(q.mu.msgs) >= q.limit || (len(q.mu.msgs) > 0 && q.mu.bytes+int64(len(m)) > q.limitBytes) {
		q.mu.Unlock()
		return ErrQueueFull
	}
	q.mu.msgs = append(q.mu.msgs, m)
	q.mu.bytes += int64(len(m))
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return nil
}

// take moves a batch of messages from the front of the queue to dst and
// marks the queue as writing. It returns dst unchanged when empty.
func (q *sendQueue) take(dst [][]byte) [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	msgs := q.mu.msgs
	n, size := 0, 0
	for n < len(msgs) && n < maxBatchMsgs && (n == 0 || size+len(msgs[n]) <= maxBatchBytes) {
		size += len(msgs[n])
		n++
	}
	if n == 0 {
		return dst
	}
	dst = append(dst, msgs[:n]...)
	rest := copy(msgs, msgs[n:])
	clear(msgs[rest:])
	q.mu.msgs = msgs[:rest]
	q.mu.bytes -= int64(size)
	q.mu.writing = true
	return dst
}

// written ends the write of the batch returned by take.
func (q *sendQueue) written() {
	q.mu.Lock()
	q.mu.writing = false
	q.signalIdleLocked()
	q.mu.Unlock()
}

// signalIdleLocked wakes waitIdle callers if the queue has drained.
// Precondition: q.mu is held.
func (q *sendQueue) signalIdleLocked() {
	if q.mu.idle != nil && len(q.mu.msgs) == 0 && !q.mu.writing {
		close(q.mu.idle)
		q.mu.idle = nil
	}
}

// close makes push fail with err and drops queued messages.
func (q *sendQueue) close(err error) {
	q.mu.Lock()
	if q.mu.closed == nil {
		q.mu.closed = err
	}
	for _, m := range q.mu.msgs {
		putBuf(m)
	}
	clear(q.mu.msgs)
	q.mu.msgs = nil
	q.mu.bytes = 0
	q.signalIdleLocked()
	q.mu.Unlock()
}

// len returns the number of queued messages.
func (q *sendQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.mu.msgs)
}

// waitIdle waits until the queue is empty and no batch is being written,
// until timeout, or until abort is closed. It reports whether the queue
// drained.
func (q *sendQueue) waitIdle(timeout time.Duration, abort <-chan struct{}) bool {
	q.mu.Lock()
	if len(q.mu.msgs) == 0 && !q.mu.writing {
		q.mu.Unlock()
		return true
	}
	if q.mu.idle == nil {
		q.mu.idle = make(chan struct{})
	}
	idle := q.mu.idle
	q.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
	case <-abort:
	}
	return false
}
