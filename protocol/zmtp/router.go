package zmtp

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Router is a ZMTP ROUTER socket bound to one TCP endpoint: it accepts
// DEALER (and REQ, ROUTER) peers, receives their messages tagged with the
// peer's identity and routes messages to a peer by identity.
//
// Send is safe for concurrent use by many goroutines and never blocks. Recv
// is meant for one receive loop (concurrent calls are safe, but then split
// the messages between them). Close may be called from any goroutine.
type Router struct {
	opts    Options
	log     *slog.Logger
	ln      net.Listener
	handler Handler
	poll    *poller // nil: connections are served by goroutines
	// handlerMu serializes Handler calls from connection goroutines.
	handlerMu sync.Mutex
	in        chan inbound
	events    chan Event
	closing   chan struct{} // closed when Close starts
	g         group
	// authRefused counts peers refused by PLAIN authentication; refusals
	// rate-limits their log lines.
	authRefused atomic.Uint64
	refusals    refusalLog
	mu          struct {
		sync.RWMutex
		peers   map[string]*peer      // by identity: the current connection
		pending map[net.Conn]struct{} // connections in handshake
		closed  bool
		nextID  uint32 // next generated identity
	}
}

var _ io.Closer = (*Router)(nil)

// peer is one connected Router peer.
type peer struct {
	id string
	c  *conn
	q  *sendQueue
}

// inbound is a received message and its sender.
type inbound struct {
	id     string
	frames [][]byte
}

// Listen binds a Router to endpoint ("tcp://*:5557" for every interface,
// "tcp://127.0.0.1:0" for an ephemeral port, "tcp://[::1]:5557") and starts
// accepting peers in the background.
//
// With Options.Plain, only peers presenting those PLAIN credentials are
// accepted; credentials that cannot be sent (an empty password, more than
// 255 bytes) give ErrBadOptions.
func Listen(endpoint string, opts Options) (*Router, error) {
	addr, err := parseEndpoint(endpoint, true)
	if err != nil {
		return nil, err
	}
	if opts.Plain != nil {
		if err := opts.Plain.validate(); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("zmtp: listen %s: %w", endpoint, err)
	}
	opts = opts.withDefaults()
	r := &Router{
		opts:    opts,
		log:     opts.Logger,
		ln:      ln,
		in:      make(chan inbound, recvQueue),
		events:  make(chan Event, routerEventQueue),
		closing: make(chan struct{}),
	}
	r.mu.peers = make(map[string]*peer)
	r.mu.pending = make(map[net.Conn]struct{})
	r.mu.nextID = rand.Uint32()
	r.handler = opts.Handler
	if opts.noPoller {
		// served by goroutines
	} else if pl, err := newPoller(r); err == nil {
		r.poll = pl
		r.g.Go("zmtp-router-poller", pl.run)
	} else {
		r.log.Debug("zmtp: no poller; serving connections with goroutines", "err", err)
	}
	r.g.Go("zmtp-router-accept", r.acceptLoop)
	return r, nil
}

// Addr returns the bound address (with the actual port when bound to 0).
func (r *Router) Addr() net.Addr { return r.ln.Addr() }

// Events returns the channel of Connected and Disconnected events. It is
// buffered; events that find it full are dropped (and logged) so that the
// transport never waits for the application. It is closed by Close.
func (r *Router) Events() <-chan Event { return r.events }

// Recv returns the next message: the sender's identity and the message
// frames, without the identity frame. The frames belong to the caller.
// A Router with Options.Handler delivers nothing to Recv.
// It returns ctx.Err() when ctx is done and ErrClosed after Close.
func (r *Router) Recv(ctx context.Context) (identity string, frames [][]byte, err error) {
	select {
	case m := <-r.in:
		return m.id, m.frames, nil
	case <-ctx.Done():
		return "", nil, ctx.Err()
	case <-r.closing:
		return "", nil, ErrClosed
	}
}

// Send queues a message of one or more frames for the peer with the given
// identity and returns at once; it never blocks. The frames are copied, so
// the caller may reuse them. It returns ErrUnknownPeer when no such peer is
// connected, ErrQueueFull when the peer's queue is full (Options.SendQueue
// messages or Options.SendQueueBytes bytes), ErrEmptyMessage without frames
// and ErrClosed after Close.
func (r *Router) Send(identity string, frames ...[]byte) error {
	if len(frames) == 0 {
		return ErrEmptyMessage
	}
	msg := encodeMessage(frames)
	for attempt := 0; ; attempt++ {
		r.mu.RLock()
		p, closed := r.mu.peers[identity], r.mu.closed
		r.mu.RUnlock()
		if closed || r.isClosing() {
			return ErrClosed
		}
		if p == nil {
			return fmt.Errorf("%w %q", ErrUnknownPeer, identity)
		}
		err := p.q.push(msg)
		if err == nil && p.c.raw != nil {
			p.c.raw.flush() // written here, without waking a goroutine
		}
		if err == nil || errors.Is(err, ErrQueueFull) {
			return err
		}
		// The connection ended since the lookup; a newer connection with the
		// same identity may have replaced it.
		if attempt > 0 {
			return fmt.Errorf("%w %q (disconnected)", ErrUnknownPeer, identity)
		}
	}
}

// AuthRefusals returns the number of peers that a Router with Options.Plain
// has refused since Listen: peers without PLAIN (NULL peers such as Python
// Locust workers), with wrong credentials or with a malformed HELLO. It is
// safe for concurrent use.
func (r *Router) AuthRefusals() uint64 { return r.authRefused.Load() }

// Peers returns the identities of the connected peers, in no order.
func (r *Router) Peers() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := make([]string, 0, len(r.mu.peers))
	for id := range r.mu.peers {
		ids = append(ids, id)
	}
	return ids
}

// Disconnect closes the connection of the peer with the given identity; a
// Disconnected event with Err ErrClosed follows. It returns ErrUnknownPeer
// when no such peer is connected.
func (r *Router) Disconnect(identity string) error {
	r.mu.RLock()
	p := r.mu.peers[identity]
	r.mu.RUnlock()
	if p == nil {
		return fmt.Errorf("%w %q", ErrUnknownPeer, identity)
	}
	p.c.shutdown(ErrClosed)
	return nil
}

// Close stops accepting, waits up to Options.Linger for queued messages to
// be written, closes every connection and waits for all goroutines of the
// Router to end. Later calls return ErrClosed.
func (r *Router) Close() error {
	r.mu.Lock()
	if r.mu.closed || r.isClosing() {
		r.mu.Unlock()
		return ErrClosed
	}
	close(r.closing)
	if r.poll != nil {
		r.poll.wake()
	}
	for nc := range r.mu.pending {
		nc.Close()
	}
	peers := make([]*peer, 0, len(r.mu.peers))
	for _, p := range r.mu.peers {
		peers = append(peers, p)
	}
	r.mu.Unlock()
	err := r.ln.Close()
	if r.opts.Linger > 0 {
		deadline := time.Now().Add(r.opts.Linger)
		for _, p := range peers {
			p.q.waitIdle(time.Until(deadline), p.c.done)
		}
	}
	r.mu.Lock()
	r.mu.closed = true
	for _, p := range r.mu.peers {
		p.c.shutdown(ErrClosed)
	}
	r.mu.Unlock()
	r.g.Wait()
	close(r.events)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("zmtp: close listener: %w", err)
	}
	return nil
}

// baseGoroutines is the number of goroutines an open Router runs besides
// those of its connections: the accept loop and the poller.
func (r *Router) baseGoroutines() int64 {
	if r.poll != nil {
		return 2
	}
	return 1
}

func (r *Router) isClosing() bool {
	select {
	case <-r.closing:
		return true
	default:
		return false
	}
}

// acceptLoop accepts connections and hands each to its own goroutine, so a
// slow handshake never delays the next peer.
func (r *Router) acceptLoop() {
	var delay time.Duration
	for {
		nc, err := r.ln.Accept()
		if err != nil {
			if r.isClosing() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or similar: back off instead of spinning.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			r.log.Warn("zmtp: accept failed", "err", err, "retry_in", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.closing:
				t.Stop()
				return
			}
			continue
		}
		delay = 0
		r.g.Go("zmtp-router-conn", func() { r.serveConn(nc) })
	}
}

// serveConn runs the handshake, registers the peer, starts its writer and
// runs its read loop until the connection ends.
func (r *Router) serveConn(nc net.Conn) {
	r.mu.Lock()
	if r.mu.closed || r.isClosing() {
		r.mu.Unlock()
		nc.Close()
		return
	}
	r.mu.pending[nc] = struct{}{}
	r.mu.Unlock()

	br := bufio.NewReaderSize(nc, handshakeBufferSize)
	nc.SetDeadline(time.Now().Add(r.opts.HandshakeTimeout)) //nolint:errcheck // shows in the handshake
	info, err := handshakeAuth(br, nc, socketRouter, "", r.opts.MaxFrameSize, r.opts.Plain)
	if err == nil {
		err = nc.SetDeadline(time.Time{})
	}
	if err != nil {
		r.mu.Lock()
		delete(r.mu.pending, nc)
		r.mu.Unlock()
		nc.Close()
		switch {
		case r.isClosing():
		case errors.Is(err, ErrAuth):
			r.authRefused.Add(1)
			if ok, suppressed := r.refusals.allow(time.Now()); ok {
				r.log.Warn("zmtp: refused peer", "remote", nc.RemoteAddr().String(), "err", err, "refusals_not_logged", suppressed)
			}
		case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
			// Port probes and health checks: connect and close.
			r.log.Debug("zmtp: peer left during handshake", "remote", nc.RemoteAddr().String(), "err", err)
		default:
			r.log.Warn("zmtp: rejected peer", "remote", nc.RemoteAddr().String(), "err", handshakeError(err, r.opts.HandshakeTimeout))
		}
		return
	}
	c := newConn(nc, info)
	if r.poll != nil {
		raw, err := r.poll.adopt(c)
		if err != nil {
			r.log.Debug("zmtp: serving a connection with goroutines", "remote", c.remote.String(), "err", err)
		}
		c.raw = raw
	}
	p := &peer{c: c, q: newSendQueue(r.opts.SendQueue, r.opts.SendQueueBytes)}
	if c.raw != nil {
		var buffered []byte
		if n := br.Buffered(); n > 0 {
			buffered, _ = br.Peek(n)
		}
		c.raw.prepare(p, buffered)
	}
	if !r.register(p) {
		c.shutdown(ErrClosed)
		return
	}
	if c.raw != nil {
		r.poll.add(c.raw)
		return
	}
	c.startReader(br, r.opts.MaxFrameSize)
	r.g.Go("zmtp-router-writer", func() { c.writeLoop(p.q, r.opts.WriteTimeout) })
	err = c.readLoop(func(frames [][]byte) bool {
		if r.handler != nil {
			r.handlerMu.Lock()
			r.handler.HandleMessage(p.id, frames)
			r.handler.FlushMessages()
			r.handlerMu.Unlock()
			return true
		}
		select {
		case r.in <- inbound{id: p.id, frames: frames}:
			return true
		case <-c.done:
			return false
		}
	})
	c.shutdown(err)
	r.unregister(p)
}

// deliver hands a message read by the poller to the Handler, or to Recv
// (waiting while Recv's queue is full, which stops all reading: TCP flow
// control then holds the peers back). Recv gets a copy, unless the poller
// donates the buffer the frames are in.
func (r *Router) deliver(p *peer, frames [][]byte, donate bool) {
	if r.handler != nil {
		r.handler.HandleMessage(p.id, frames)
		return
	}
	if donate {
		owned := append([][]byte(nil), frames...)
		select {
		case r.in <- inbound{id: p.id, frames: owned}:
		case <-r.closing:
		}
		return
	}
	size := 0
	for _, f := range frames {
		size += len(f)
	}
	buf := make([]byte, 0, size)
	owned := make([][]byte, len(frames))
	for i, f := range frames {
		buf = append(buf, f...)
		owned[i] = buf[len(buf)-len(f) : len(buf) : len(buf)]
	}
	select {
	case r.in <- inbound{id: p.id, frames: owned}:
	case <-r.closing:
	}
}

// register gives p its identity (announced, or generated for anonymous
// peers) and makes it the current connection for that identity. A current
// connection with the same identity is closed: the newest connection wins.
// It returns false if the Router is closed.
func (r *Router) register(p *peer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.mu.pending, p.c.nc)
	if r.mu.closed || r.isClosing() {
		return false
	}
	p.id = p.c.info.identity
	if p.id == "" {
		p.id = r.generateIDLocked()
	}
	if old := r.mu.peers[p.id]; old != nil {
		r.log.Warn("zmtp: duplicate identity, newest connection wins; closing the old one",
			"identity", p.id, "old_remote", old.c.remote.String(), "new_remote", p.c.remote.String())
		old.q.close(ErrDuplicateIdentity)
		old.c.shutdown(ErrDuplicateIdentity)
		r.emit(Event{Kind: Disconnected, Identity: p.id, Remote: old.c.remote, Err: ErrDuplicateIdentity})
	}
	r.mu.peers[p.id] = p
	r.log.Debug("zmtp: peer connected", "identity", p.id, "remote", p.c.remote.String(),
		"socket_type", p.c.info.socketType, "zmtp", fmt.Sprintf("%d.%d", p.c.info.major, p.c.info.minor))
	r.emit(Event{Kind: Connected, Identity: p.id, Remote: p.c.remote})
	return true
}

// unregister removes p if it is still the current connection for its
// identity and reports the disconnection.
func (r *Router) unregister(p *peer) {
	err := p.c.cause()
	p.q.close(ErrClosed)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.peers[p.id] != p {
		return // replaced by a newer connection; already reported
	}
	delete(r.mu.peers, p.id)
	if !errors.Is(err, ErrClosed) {
		r.log.Info("zmtp: peer disconnected", "identity", p.id, "remote", p.c.remote.String(), "err", err)
	}
	r.emit(Event{Kind: Disconnected, Identity: p.id, Remote: p.c.remote, Err: err})
}

// generateIDLocked returns a fresh 5-byte identity starting with 0x00, as
// libzmq generates for anonymous peers. Precondition: r.mu is held.
func (r *Router) generateIDLocked() string {
	for {
		var b [5]byte
		binary.BigEndian.PutUint32(b[1:], r.mu.nextID)
		r.mu.nextID++
		if id := string(b[:]); r.mu.peers[id] == nil {
			return id
		}
	}
}

// emit reports ev without blocking. Precondition: r.mu is held (so that
// events of one identity are emitted in order).
func (r *Router) emit(ev Event) {
	select {
	case r.events <- ev:
	default:
		r.log.Warn("zmtp: events channel full, event dropped", "kind", ev.Kind.String(), "identity", ev.Identity)
	}
}
