// Package sockc is the per-user WebSocket and raw TCP (or TLS) client of
// the cicada worker: what worker.User's socket steps run on.
//
// A WSConn is one RFC 6455 client connection (ws:// or wss://) with
// cicada's own framing (internal/wsframe); a TCPConn is one TCP or TLS
// connection that sends bytes and reads replies until a delimiter, a
// length or a timeout.
//
// # Memory
//
// Both are built to be held idle by the tens of thousands. An idle
// connection holds its net.Conn and its own fields: no goroutine, no
// bufio buffer (a read buffer comes from a sync.Pool for the duration of
// one Recv or Read, and bytes the peer sent beyond the reply are kept in
// a slice of their own until the next read), no write buffer. Nothing
// reads while nobody asks: a ping, a close or data the server sends to an
// idle connection waits in the kernel's socket buffer and is handled on
// the next read (pings are answered then, a close ends that read).
// bench/socket measures the resident memory per held connection beside a
// plain HTTP keep-alive connection.
//
// # Failures and counters
//
// Network failures are *httpc.Error values classified as HTTP requests'
// (refused, reset, connect timeout, read timeout, TLS, ...) so that their
// messages are the Locust-style strings the stats show. A WebSocket close
// by the server is a *CloseError (cicada's text: "WebSocketClosed(1011,
// 'overload')"), a refused handshake a *HandshakeError with the text
// Python's websocket-client raises ("WebSocketBadStatusException('Handshake
// status 403 Forbidden')"). A read that times out closes the connection,
// since a late reply would be taken for the next one's. Counters count
// connects, open connections,
// failures by kind and closes by protocol, side and WebSocket close code
// ("ws close 1000 (client)", "ws close 1011 (server)", "ws close 1006
// (server)" for a connection lost without a close frame, "tcp close
// (server)"); AddTo adds them to a worker heartbeat's counters.
//
// # Differences from Locust
//
// Locust has no WebSocket or TCP user of its own (2.12.1; later versions
// add a Socket.IO user); its documentation's convention for other
// protocols is to fire one request event per exchange. cicada's worker
// records each step as a request of method "WS" or "TCP".
package sockc

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/worker/httpc"
)

// Defaults for zero Options fields.
const (
	DefaultConnectTimeout = 60 * time.Second
	DefaultTimeout        = 60 * time.Second
	DefaultMaxMessage     = 1 << 20
)

// ErrClosed is wrapped by calls on a connection after Close.
var ErrClosed = errors.New("sockc: connection closed")

// ErrInvalidURL is wrapped when a WebSocket URL or TCP address cannot be
// used.
var ErrInvalidURL = errors.New("sockc: invalid URL")

// Options configure connections. The zero value works. Options and what
// its pointers refer to must not be modified after a dial.
type Options struct {
	// ConnectTimeout bounds TCP connect, TLS and WebSocket handshakes. If
	// zero, DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Timeout bounds one exchange (a send, a read). A context deadline
	// that is earlier wins. If zero, DefaultTimeout.
	Timeout time.Duration
	// TLSConfig is used for wss:// and tls:// (cloned; ServerName
	// defaults to the host). If nil, a default configuration.
	TLSConfig *tls.Config
	// InsecureSkipVerify disables certificate verification.
	InsecureSkipVerify bool
	// LocalAddr binds connections to a source address.
	LocalAddr *net.TCPAddr
	// MaxMessage bounds one WebSocket message or one TCP read. If zero,
	// DefaultMaxMessage.
	MaxMessage int
	// Counters, if not nil, receives the connection events.
	Counters *Counters
}

func (o *Options) connectTimeout() time.Duration {
	if o.ConnectTimeout > 0 {
		return o.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (o *Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

func (o *Options) maxMessage() int {
	if o.MaxMessage > 0 {
		return o.MaxMessage
	}
	return DefaultMaxMessage
}

// Counters counts the connection events of many connections. Safe for
// concurrent use; the zero value is ready.
type Counters struct {
	connects      atomic.Int64
	open          atomic.Int64
	connectErrors [httpc.NumKinds]atomic.Int64
	errors        [httpc.NumKinds]atomic.Int64
	tls           tlsCounts // completed handshakes (tlscount.go)

	mu     sync.Mutex
	closes map[string]int64
}

// Snapshot is a copy of Counters.
type Snapshot struct {
	Connects, Open int64
	Closes         map[string]int64 // by label, "ws close 1000 (client)"
	ConnectErrors  [httpc.NumKinds]int64
	Errors         [httpc.NumKinds]int64
}

// Snapshot returns the current values.
func (c *Counters) Snapshot() Snapshot {
	s := Snapshot{Connects: c.connects.Load(), Open: c.open.Load(), Closes: map[string]int64{}}
	for i := range c.errors {
		s.ConnectErrors[i] = c.connectErrors[i].Load()
		s.Errors[i] = c.errors[i].Load()
	}
	c.mu.Lock()
	for k, v := range c.closes {
		s.Closes[k] = v
	}
	c.mu.Unlock()
	return s
}

// AddTo adds the counters to a worker heartbeat's: connects, open and
// established connections, closes by label, failures by kind, completed
// TLS handshakes.
func (c *Counters) AddTo(pc *protocol.ConnCounters) {
	c.addTLSTo(pc)
	s := c.Snapshot()
	pc.Connects += s.Connects
	pc.Open += s.Open
	pc.Established += s.Open
	add := func(m *map[string]int64, k string, n int64) {
		if n == 0 {
			return
		}
		if *m == nil {
			*m = make(map[string]int64)
		}
		(*m)[k] += n
	}
	for k, v := range s.Closes {
		add(&pc.Closes, k, v)
	}
	for i := range s.Errors {
		add(&pc.ConnectErrors, httpc.Kind(i).String(), s.ConnectErrors[i])
		add(&pc.Errors, httpc.Kind(i).String(), s.Errors[i])
	}
}

func (c *Counters) connected() {
	if c != nil {
		c.connects.Add(1)
		c.open.Add(1)
	}
}

func (c *Counters) connectFailed(k httpc.Kind) {
	if c != nil {
		c.connectErrors[k].Add(1)
	}
}

func (c *Counters) failed(k httpc.Kind) {
	if c != nil && k != httpc.Canceled {
		c.errors[k].Add(1)
	}
}

func (c *Counters) closed(label string) {
	if c == nil {
		return
	}
	c.open.Add(-1)
	c.mu.Lock()
	if c.closes == nil {
		c.closes = make(map[string]int64)
	}
	c.closes[label]++
	c.mu.Unlock()
}

// dial connects to addr ("host:port") over TCP, then TLS when tlsOn.
func dial(ctx context.Context, addr, host string, tlsOn bool, alpn []string, o *Options) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, o.connectTimeout())
	defer cancel()
	d := net.Dialer{}
	if o.LocalAddr != nil {
		d.LocalAddr = o.LocalAddr
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, netError(err, "dial", addr)
	}
	if !tlsOn {
		return conn, nil
	}
	var cfg *tls.Config
	if o.TLSConfig != nil {
		cfg = o.TLSConfig.Clone()
	} else {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if o.InsecureSkipVerify {
		cfg.InsecureSkipVerify = true //nolint:gosec // the scenario asked for it
	}
	if len(cfg.NextProtos) == 0 && alpn != nil {
		cfg.NextProtos = alpn
	}
	tc := tls.Client(conn, cfg)
	start := time.Now()
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, netError(err, "tls", addr)
	}
	o.Counters.handshaked(tc.ConnectionState(), time.Since(start)) // tlscount.go
	return tc, nil
}

// netError wraps a raw network error as an *httpc.Error with its Kind.
// A deadline hit while connecting is a connect timeout.
func netError(err error, op, url string) error {
	var he *httpc.Error
	if errors.As(err, &he) {
		return err
	}
	k := httpc.Classify(err)
	if (op == "dial" || op == "tls" || op == "handshake") && (k == httpc.ReadTimeout || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)) {
		k = httpc.ConnectTimeout
	}
	return &httpc.Error{Kind: k, Op: op, URL: url, Err: err}
}

// deadline sets conn's deadline for one exchange from ctx and timeout and
// makes a cancellation of ctx interrupt the I/O; call the returned stop
// when the exchange is over.
func deadline(ctx context.Context, conn net.Conn, timeout time.Duration) (stop func() bool) {
	d := time.Now().Add(timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	_ = conn.SetDeadline(d)
	if ctx.Done() == nil {
		return func() bool { return true }
	}
	return context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
}

// ioError classifies a failed read or write: a context error if ctx ended.
func ioError(ctx context.Context, err error, op, url string) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return &httpc.Error{Kind: httpc.Canceled, Op: op, URL: url, Err: ctx.Err()}
	}
	return netError(err, op, url)
}

// bufPool holds read buffers lent to one read at a time.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}
