package zmtp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// errReconnect is the cause recorded when Reconnect drops the connection.
var errReconnect = errors.New("zmtp: reconnect requested")

// Dealer is a ZMTP DEALER socket connected to one endpoint. It connects in
// the background and reconnects forever with exponential backoff, keeping
// its identity. Messages sent while disconnected are queued (up to
// Options.SendQueue messages and Options.SendQueueBytes bytes) and written
// after the next handshake.
//
// Send is safe for concurrent use by many goroutines and never blocks. Recv
// is meant for one receive loop (concurrent calls are safe, but then split
// the messages between them). Reconnect and Close may be called from any
// goroutine.
type Dealer struct {
	addr     string
	identity string
	opts     Options
	log      *slog.Logger
	q        *sendQueue
	in       chan [][]byte
	events   chan Event
	redial   chan struct{} // capacity 1: skip the backoff wait
	closing  chan struct{} // closed when Close starts
	ctx      context.Context
	cancel   context.CancelFunc
	g        group
	mu       struct {
		sync.Mutex
		c      *conn    // current connection, nil while disconnected
		hs     net.Conn // connection in handshake, closed by Close
		closed bool
	}
}

var _ io.Closer = (*Dealer)(nil)

// Dial returns a Dealer for endpoint ("tcp://host:port", "tcp://[::1]:port")
// at once; it connects in the background. identity is announced in READY
// and becomes the Dealer's routing identity at a Router: 1-255 bytes of
// UTF-8 not starting with 0x00, or "" to let the Router generate one. Dial
// fails only for a malformed endpoint or identity, or PLAIN credentials
// (Options.Plain) that cannot be sent (ErrBadOptions).
func Dial(endpoint, identity string, opts Options) (*Dealer, error) {
	addr, err := parseEndpoint(endpoint, false)
	if err != nil {
		return nil, err
	}
	if err := validIdentity(identity); err != nil {
		return nil, err
	}
	if opts.Plain != nil {
		if err := opts.Plain.validate(); err != nil {
			return nil, err
		}
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dealer{
		addr:     addr,
		identity: identity,
		opts:     opts,
		log:      opts.Logger.With("endpoint", endpoint),
		q:        newSendQueue(opts.SendQueue, opts.SendQueueBytes),
		in:       make(chan [][]byte, recvQueue),
		events:   make(chan Event, dealerEventQueue),
		redial:   make(chan struct{}, 1),
		closing:  make(chan struct{}),
		ctx:      ctx,
		cancel:   cancel,
	}
	d.g.Go("zmtp-dealer", d.run)
	return d, nil
}

// Identity returns the identity given to Dial.
func (d *Dealer) Identity() string { return d.identity }

// Events returns the channel of Connected and Disconnected events, one pair
// per connection. It is buffered; events that find it full are dropped (and
// logged). It is closed by Close.
func (d *Dealer) Events() <-chan Event { return d.events }

// Send queues a message of one or more frames and returns at once; it never
// blocks. The frames are copied, so the caller may reuse them. While
// disconnected, messages stay queued and are written after the next
// handshake; when the queue is full (Options.SendQueue messages or
// Options.SendQueueBytes bytes) Send returns ErrQueueFull. Messages being written when a connection breaks are lost
// (at most once). It returns ErrEmptyMessage without frames and ErrClosed
// after Close.
func (d *Dealer) Send(frames ...[]byte) error {
	if len(frames) == 0 {
		return ErrEmptyMessage
	}
	return d.q.push(encodeMessage(frames))
}

// Queued returns the number of messages waiting to be written.
func (d *Dealer) Queued() int { return d.q.len() }

// Recv returns the next message. The frames belong to the caller. It
// returns ctx.Err() when ctx is done and ErrClosed after Close.
func (d *Dealer) Recv(ctx context.Context) ([][]byte, error) {
	select {
	case m := <-d.in:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-d.closing:
		return nil, ErrClosed
	}
}

// Reconnect drops the current connection (if any) and dials again at once
// with the same identity, as a Locust worker does on the master's
// "reconnect" message. Queued messages are kept.
func (d *Dealer) Reconnect() {
	d.mu.Lock()
	c := d.mu.c
	d.mu.Unlock()
	select {
	case d.redial <- struct{}{}:
	default:
	}
	if c != nil {
		c.shutdown(errReconnect)
	}
}

// Close waits up to Options.Linger for queued messages to be written if
// connected, then closes the connection, drops what is still queued and
// waits for all goroutines of the Dealer to end. Later calls return
// ErrClosed.
func (d *Dealer) Close() error {
	d.mu.Lock()
	if d.mu.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	d.mu.closed = true
	close(d.closing)
	c := d.mu.c
	if d.mu.hs != nil {
		d.mu.hs.Close()
	}
	d.mu.Unlock()
	d.cancel()
	if c != nil && d.opts.Linger > 0 {
		d.q.waitIdle(d.opts.Linger, c.done)
	}
	d.q.close(ErrClosed)
	d.mu.Lock()
	c = d.mu.c
	d.mu.Unlock()
	if c != nil {
		c.shutdown(ErrClosed)
	}
	d.g.Wait()
	close(d.events)
	return nil
}

func (d *Dealer) isClosing() bool {
	select {
	case <-d.closing:
		return true
	default:
		return false
	}
}

// run dials, runs a session per connection and backs off between attempts,
// until Close.
func (d *Dealer) run() {
	delay := d.opts.ReconnectMin
	for !d.isClosing() {
		err := d.connect()
		if d.isClosing() {
			return
		}
		if errors.Is(err, errReconnect) {
			select { // the request is served
			case <-d.redial:
			default:
			}
			delay = d.opts.ReconnectMin
			continue
		}
		var ok *sessionEnded
		if errors.As(err, &ok) && ok.lasted >= d.opts.ReconnectMax {
			// The connection worked for a while: start over. A peer that
			// accepts and drops at once (say, a duplicate identity fight)
			// keeps backing off.
			delay = d.opts.ReconnectMin
		}
		wait := jitter(delay)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-d.redial:
			t.Stop()
			delay = d.opts.ReconnectMin
			continue
		case <-d.closing:
			t.Stop()
			return
		}
		delay = nextBackoff(delay, d.opts.ReconnectMax)
	}
}

// nextBackoff doubles d up to max.
func nextBackoff(d, max time.Duration) time.Duration {
	if d >= max/2 {
		return max
	}
	return 2 * d
}

// jitter returns a delay drawn uniformly from [d/2, d].
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// sessionEnded is connect's result after an established connection ended.
type sessionEnded struct {
	lasted time.Duration
	cause  error
}

func (e *sessionEnded) Error() string { return fmt.Sprintf("zmtp: connection ended: %v", e.cause) }
func (e *sessionEnded) Unwrap() error { return e.cause }

// connect dials once, runs the handshake and, if it succeeds, the session.
// It returns a *sessionEnded after a session (wrapping errReconnect after
// Reconnect), and the dial or handshake error otherwise.
func (d *Dealer) connect() error {
	dialer := net.Dialer{Timeout: d.opts.HandshakeTimeout}
	nc, err := dialer.DialContext(d.ctx, "tcp", d.addr)
	if err != nil {
		d.log.Debug("zmtp: dial failed", "err", err)
		return err
	}
	d.mu.Lock()
	if d.mu.closed {
		d.mu.Unlock()
		nc.Close()
		return ErrClosed
	}
	d.mu.hs = nc
	d.mu.Unlock()
	br := bufio.NewReaderSize(nc, handshakeBufferSize)
	nc.SetDeadline(time.Now().Add(d.opts.HandshakeTimeout)) //nolint:errcheck // shows in the handshake
	info, err := handshakeAuth(br, nc, socketDealer, d.identity, d.opts.MaxFrameSize, d.opts.Plain)
	if err == nil {
		err = nc.SetDeadline(time.Time{})
	}
	d.mu.Lock()
	d.mu.hs = nil
	d.mu.Unlock()
	if err != nil {
		nc.Close()
		err = handshakeError(err, d.opts.HandshakeTimeout)
		if !d.isClosing() {
			d.log.Warn("zmtp: handshake failed", "remote", nc.RemoteAddr().String(), "err", err)
		}
		return err
	}
	c := newConn(nc, info)
	c.startReader(br, d.opts.MaxFrameSize)
	d.mu.Lock()
	if d.mu.closed {
		d.mu.Unlock()
		c.shutdown(ErrClosed)
		return ErrClosed
	}
	d.mu.c = c
	d.mu.Unlock()
	d.log.Debug("zmtp: connected", "remote", c.remote.String(), "zmtp", fmt.Sprintf("%d.%d", info.major, info.minor))
	d.emit(Event{Kind: Connected, Identity: info.identity, Remote: c.remote})
	connectedAt := time.Now()

	writerDone := make(chan struct{})
	d.g.Go("zmtp-dealer-writer", func() {
		defer close(writerDone)
		c.writeLoop(d.q, d.opts.WriteTimeout)
	})
	err = c.readLoop(func(frames [][]byte) bool {
		select {
		case d.in <- frames:
			return true
		case <-c.done:
			return false
		}
	})
	c.shutdown(err)
	<-writerDone // the next connection's writer must not overlap this one
	d.mu.Lock()
	d.mu.c = nil
	d.mu.Unlock()
	cause := c.cause()
	if !errors.Is(cause, ErrClosed) && !errors.Is(cause, errReconnect) {
		d.log.Info("zmtp: disconnected", "remote", c.remote.String(), "err", cause)
	}
	d.emit(Event{Kind: Disconnected, Identity: info.identity, Remote: c.remote, Err: cause})
	return &sessionEnded{lasted: time.Since(connectedAt), cause: cause}
}

// emit reports ev without blocking.
func (d *Dealer) emit(ev Event) {
	select {
	case d.events <- ev:
	default:
		d.log.Warn("zmtp: events channel full, event dropped", "kind", ev.Kind.String())
	}
}
