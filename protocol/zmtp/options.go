package zmtp

import (
	"context"
	"log/slog"
	"math"
	"net"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero values of Options.
const (
	// DefaultMaxFrameSize bounds received frames: 64 MiB, far above Locust's
	// largest stats message.
	DefaultMaxFrameSize = 64 << 20
	// DefaultHandshakeTimeout bounds the greeting and READY exchange.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultWriteTimeout is how long a peer may leave a write blocked before
	// it is dropped.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultSendQueue is the number of messages queued per Router peer or
	// per Dealer.
	DefaultSendQueue = 10000
	// DefaultSendQueueBytes bounds the bytes queued per Router peer or per
	// Dealer.
	DefaultSendQueueBytes = 64 << 20
	// DefaultReconnectMin is the Dealer's first reconnect delay.
	DefaultReconnectMin = 100 * time.Millisecond
	// DefaultReconnectMax caps the Dealer's reconnect delay.
	DefaultReconnectMax = 5 * time.Second
	// DefaultLinger is how long Close waits for queued messages to be written.
	DefaultLinger = time.Second
	// MaxMessageFrames is the largest number of frames accepted in one
	// received multi-part message; more is a protocol error.
	MaxMessageFrames = 1024
)

// Options configures a Router or a Dealer. The zero value is ready to use;
// every zero field takes the documented default.
type Options struct {
	// MaxFrameSize bounds every received frame, and the sum of the frames of
	// one multi-part message, in bytes. It is checked against the frame
	// header before any memory is allocated. If zero, DefaultMaxFrameSize.
	MaxFrameSize int64
	// HandshakeTimeout bounds the greeting and READY exchange of each
	// connection. The Router runs handshakes off its accept loop, so a silent
	// peer never delays others. It is also the Dealer's dial timeout.
	// If zero, DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// WriteTimeout is how long one write of a batch of queued messages (at
	// most about 1 MiB, or one larger message) may stay blocked before the
	// peer is considered frozen and its connection is dropped. A frozen peer
	// never stalls other peers. If zero, DefaultWriteTimeout.
	WriteTimeout time.Duration
	// SendQueue is the number of messages queued per Router peer, or by a
	// Dealer (including while it is disconnected). Beyond it Send returns
	// ErrQueueFull. If zero, DefaultSendQueue.
	SendQueue int
	// SendQueueBytes also bounds the queue, in encoded bytes; a message is
	// always accepted into an empty queue, whatever its size. If zero,
	// DefaultSendQueueBytes.
	SendQueueBytes int64
	// ReconnectMin and ReconnectMax bound the Dealer's exponential reconnect
	// backoff; each delay is drawn uniformly from [d/2, d]. If zero,
	// DefaultReconnectMin and DefaultReconnectMax.
	ReconnectMin, ReconnectMax time.Duration
	// Linger is how long Close waits for queued messages to be written to
	// connected peers before closing the connections. If zero, DefaultLinger;
	// if negative, Close does not wait.
	Linger time.Duration
	// Handler, for a Router, receives every message in place of Recv (see
	// Handler). If nil, messages queue for Recv.
	Handler Handler
	// PollInterval, for a Router on Linux, is the least time between two
	// rounds of reads: messages that arrive meanwhile wait in the kernel and
	// are then read together, so that a Router with thousands of busy peers
	// wakes up once per interval rather than once per message. It adds up to
	// PollInterval of latency. If zero, the Router reads as soon as data
	// arrives.
	PollInterval time.Duration
	// Plain, if set, turns on ZMTP's PLAIN mechanism (RFC 24/ZMTP-PLAIN) in
	// place of NULL. A Router then refuses every peer that does not present
	// these credentials (NULL peers such as Python Locust workers included)
	// with an ERROR command, logs the refusals at most once per second and
	// counts them (Router.AuthRefusals). A Dealer presents them and refuses
	// a peer that does not offer PLAIN: it never falls back to NULL. The
	// password travels in clear; see the package documentation. If nil, the
	// NULL mechanism, as Locust uses.
	Plain *PlainAuth
	// noPoller makes a Router serve connections with goroutines even on
	// Linux (tests of that path).
	noPoller bool
	// Logger receives connection-level logs (rejected handshakes, dropped
	// peers, duplicate identities, reconnects); never one line per message.
	// If nil, logs are discarded.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = DefaultMaxFrameSize
	}
	if o.MaxFrameSize > math.MaxInt {
		o.MaxFrameSize = math.MaxInt
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.SendQueue <= 0 {
		o.SendQueue = DefaultSendQueue
	}
	if o.SendQueueBytes <= 0 {
		o.SendQueueBytes = DefaultSendQueueBytes
	}
	if o.ReconnectMin <= 0 {
		o.ReconnectMin = DefaultReconnectMin
	}
	if o.ReconnectMax <= 0 {
		o.ReconnectMax = DefaultReconnectMax
	}
	if o.ReconnectMax < o.ReconnectMin {
		o.ReconnectMax = o.ReconnectMin
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Plain != nil {
		creds := *o.Plain // the caller may change its copy later
		o.Plain = &creds
	}
	return o
}

// A Handler receives a Router's messages as they are read, on the Router's
// own goroutine, which saves a hand-off per message compared with Recv.
// Calls never overlap. A Handler must return quickly: while it runs, no
// peer is read.
type Handler interface {
	// HandleMessage receives one message: the sender's identity and the
	// frames, without the identity frame. The frames, and the bytes they
	// hold, are only valid until HandleMessage returns.
	HandleMessage(identity string, frames [][]byte)
	// FlushMessages follows each batch of HandleMessage calls: the messages
	// read in one round (or one message, when connections are served by
	// goroutines). A Handler that queues messages for another goroutine
	// wakes it here, once per batch.
	FlushMessages()
}

// EventKind says what an Event reports.
type EventKind int

const (
	// Connected reports a completed handshake: a new Router peer, or the
	// Dealer's (re)connection. A Dealer's user should re-register with its
	// peer on every Connected event.
	Connected EventKind = iota + 1
	// Disconnected reports the end of a connection that had completed its
	// handshake; Event.Err says why.
	Disconnected
)

// String returns "connected" or "disconnected".
func (k EventKind) String() string {
	switch k {
	case Connected:
		return "connected"
	case Disconnected:
		return "disconnected"
	}
	return "unknown"
}

// Event is a connection state change reported by Router.Events and
// Dealer.Events.
type Event struct {
	Kind EventKind
	// Identity is the peer's identity: for a Router, the routing identity
	// used by Send and Recv; for a Dealer, whatever identity the Router
	// announced (usually empty).
	Identity string
	// Remote is the peer's network address.
	Remote net.Addr
	// Err is the cause of a disconnection (io.EOF when the peer closed,
	// ErrClosed after Close, ErrDuplicateIdentity, ErrWriteTimeout, ...);
	// nil for Connected.
	Err error
}

// Channel and buffer sizes. Events that find the Events channel full are
// dropped and logged, so that an application that does not read events never
// blocks the transport.
const (
	routerEventQueue = 1024
	dealerEventQueue = 64
	recvQueue        = 256
	readBufferSize   = 32 << 10
	// handshakeBufferSize keeps connections that never finish their
	// handshake cheap.
	handshakeBufferSize = 1 << 10
)

// group starts and tracks goroutines, so that Close can wait for all of them.
type group struct {
	wg sync.WaitGroup
	n  atomic.Int64
}

// Go runs f in a new goroutine labelled name for pprof.
// Precondition: called before Wait, or from a goroutine of the group.
func (g *group) Go(name string, f func()) {
	g.wg.Add(1)
	g.n.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.n.Add(-1)
		pprof.Do(context.Background(), pprof.Labels("zmtp", name), func(context.Context) { f() })
	}()
}

// Wait waits for every goroutine of the group.
func (g *group) Wait() { g.wg.Wait() }

// running reports the number of live goroutines (for tests).
func (g *group) running() int64 { return g.n.Load() }
