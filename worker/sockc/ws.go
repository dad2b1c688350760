package sockc

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cicada-load/cicada/internal/pyrepr"
	"github.com/cicada-load/cicada/internal/wsframe"
	"github.com/cicada-load/cicada/worker/httpc"
)

// Message types for WSConn.Send and Recv.
const (
	Text   = wsframe.OpText
	Binary = wsframe.OpBinary
)

// CloseError is a WebSocket connection closed by the server: with a close
// frame (its code and reason), or without one (Code 1006).
type CloseError struct {
	Code   int
	Reason string
}

// Error returns "WebSocketClosed(1011, 'overload')".
func (e *CloseError) Error() string {
	return "WebSocketClosed(" + strconv.Itoa(e.Code) + ", " + pyrepr.String(e.Reason) + ")"
}

// HandshakeError is an opening handshake the server refused or answered
// wrongly.
type HandshakeError struct {
	Status int    // the response's status code; 101 when a header was wrong
	Reason string // the status line's reason, or what was wrong
}

// Error returns websocket-client's text: "WebSocketBadStatusException(
// 'Handshake status 403 Forbidden')".
func (e *HandshakeError) Error() string {
	return "WebSocketBadStatusException(" + pyrepr.String("Handshake status "+strconv.Itoa(e.Status)+" "+e.Reason) + ")"
}

// WSConn is one WebSocket client connection. Its methods serve one
// caller at a time (the user's goroutine), except Close, which may be
// called from any goroutine.
type WSConn struct {
	conn    net.Conn
	url     string
	opts    *Options
	rd      wsframe.Reader
	pending []byte // bytes read beyond the last frame

	mu     sync.Mutex
	closed bool
}

// DialWS opens a WebSocket connection to rawURL (ws://, wss://; http://
// and https:// are taken as ws:// and wss://) with the extra handshake
// headers. Errors are *httpc.Error (network, TLS, timeouts) or
// *HandshakeError; a bad URL or header wraps ErrInvalidURL.
func DialWS(ctx context.Context, rawURL string, headers []httpc.Header, o *Options) (*WSConn, error) {
	if o == nil {
		o = &Options{}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrInvalidURL, rawURL, err)
	}
	var tlsOn bool
	port := "80"
	switch u.Scheme {
	case "ws", "http":
	case "wss", "https":
		tlsOn, port = true, "443"
	default:
		return nil, fmt.Errorf("%w: %q: the scheme must be ws or wss", ErrInvalidURL, rawURL)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w: %q: no host", ErrInvalidURL, rawURL)
	}
	if u.Port() != "" {
		port = u.Port()
	}
	for _, h := range headers {
		if h.Key == "" || strings.ContainsAny(h.Key, "\r\n\x00: ") || strings.ContainsAny(h.Value, "\r\n\x00") {
			return nil, fmt.Errorf("%w: header %q", ErrInvalidURL, h.Key)
		}
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	conn, err := dial(ctx, addr, u.Hostname(), tlsOn, []string{"http/1.1"}, o)
	if err != nil {
		o.Counters.connectFailed(httpc.Classify(err))
		return nil, err
	}
	c := &WSConn{conn: conn, url: rawURL, opts: o}
	c.rd = wsframe.Reader{R: (*rawReader)(c), MaxMessage: int64(o.maxMessage())}
	if err := c.handshake(ctx, u, headers); err != nil {
		conn.Close()
		k := httpc.HTTPStatus
		if he := (*httpc.Error)(nil); errors.As(err, &he) {
			k = he.Kind
		}
		o.Counters.connectFailed(k)
		return nil, err
	}
	o.Counters.connected()
	return c, nil
}

func (c *WSConn) handshake(ctx context.Context, u *url.URL, headers []httpc.Header) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.connectTimeout())
	defer cancel()
	stop := deadline(ctx, c.conn, c.opts.connectTimeout())
	defer stop()
	var kb [16]byte
	_, _ = crand.Read(kb[:])
	key := base64.StdEncoding.EncodeToString(kb[:])
	var b strings.Builder
	b.WriteString("GET ")
	b.WriteString(u.RequestURI())
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(u.Host)
	b.WriteString("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ")
	b.WriteString(key)
	b.WriteString("\r\nSec-WebSocket-Version: 13\r\n")
	for _, h := range headers {
		b.WriteString(h.Key)
		b.WriteString(": ")
		b.WriteString(h.Value)
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return ioError(ctx, err, "handshake", c.url)
	}
	br := brPool.Get().(*bufio.Reader)
	br.Reset(c.conn)
	defer func() {
		br.Reset(nil)
		brPool.Put(br)
	}()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &httpc.Error{Kind: httpc.EOFBeforeResponse, Op: "handshake", URL: c.url, Err: httpc.ErrEOFBeforeResponse}
		}
		var ne net.Error
		if errors.As(err, &ne) {
			return ioError(ctx, err, "handshake", c.url)
		}
		return &httpc.Error{Kind: httpc.Protocol, Op: "handshake", URL: c.url, Err: err}
	}
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusSwitchingProtocols:
		return &HandshakeError{Status: resp.StatusCode, Reason: strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)))}
	case !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket"):
		return &HandshakeError{Status: 101, Reason: "without Upgrade: websocket"}
	case resp.Header.Get("Sec-WebSocket-Accept") != wsframe.AcceptKey(key):
		return &HandshakeError{Status: 101, Reason: "with a wrong Sec-WebSocket-Accept"}
	case resp.Header.Get("Sec-WebSocket-Extensions") != "":
		return &HandshakeError{Status: 101, Reason: "with an extension that was not asked for"}
	}
	if n := br.Buffered(); n > 0 {
		p, _ := br.Peek(n)
		c.pending = append([]byte(nil), p...)
	}
	return nil
}

// rawReader reads a WSConn's pending bytes, then its connection.
type rawReader WSConn

func (r *rawReader) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		if len(r.pending) == 0 {
			r.pending = nil
		}
		return n, nil
	}
	return r.conn.Read(p)
}

// wbufPool holds frame buffers lent to one write at a time.
var wbufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

var brPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// Send sends one message (Text or Binary) in one frame.
func (c *WSConn) Send(ctx context.Context, op byte, payload []byte) error {
	if c.isClosed() {
		return &httpc.Error{Kind: httpc.ClientClosed, Op: "write", URL: c.url, Err: ErrClosed}
	}
	err := c.writeFrame(ctx, op, payload, c.opts.timeout())
	if err != nil {
		c.fail(ctx, err, "write")
	}
	return err
}

func (c *WSConn) writeFrame(ctx context.Context, op byte, payload []byte, timeout time.Duration) error {
	var mask [4]byte
	m := rand.Uint32() //nolint:gosec // a frame mask, not a secret
	mask[0], mask[1], mask[2], mask[3] = byte(m), byte(m>>8), byte(m>>16), byte(m>>24)
	bp := wbufPool.Get().(*[]byte)
	frame := wsframe.AppendFrame((*bp)[:0], op, payload, &mask)
	stop := deadline(ctx, c.conn, timeout)
	_, err := c.conn.Write(frame)
	stop()
	if cap(frame) <= 64<<10 {
		*bp = frame[:0]
		wbufPool.Put(bp)
	}
	if err != nil {
		return ioError(ctx, err, "write", c.url)
	}
	return nil
}

// Recv reads the next message into buf (grown as needed) and returns its
// type and payload. Pings met on the way are answered, pongs skipped.
// A close frame from the server is answered and ends the connection:
// Recv returns a *CloseError with its code (1006 when the connection
// ended without one). A timeout also closes the connection, since a
// late reply would be taken for the next one's.
func (c *WSConn) Recv(ctx context.Context, buf []byte) (op byte, payload []byte, err error) {
	if c.isClosed() {
		return 0, buf[:0], &httpc.Error{Kind: httpc.ClientClosed, Op: "read", URL: c.url, Err: ErrClosed}
	}
	stop := deadline(ctx, c.conn, c.opts.timeout())
	defer stop()
	br := brPool.Get().(*bufio.Reader)
	br.Reset((*rawReader)(c))
	c.rd.R = br
	defer func() {
		if n := br.Buffered(); n > 0 {
			// br's bytes come before what it did not take from pending.
			p, _ := br.Peek(n)
			c.pending = append(append(make([]byte, 0, n+len(c.pending)), p...), c.pending...)
		}
		br.Reset(nil)
		brPool.Put(br)
		c.rd.R = (*rawReader)(c)
	}()
	for {
		f, err := c.rd.Next(buf)
		if err != nil {
			return 0, buf[:0], c.readFailed(ctx, err)
		}
		switch f.Op {
		case wsframe.OpText, wsframe.OpBinary:
			return f.Op, f.Payload, nil
		case wsframe.OpPing:
			if err := c.writeFrame(ctx, wsframe.OpPong, f.Payload, c.opts.timeout()); err != nil {
				c.fail(ctx, err, "write")
				return 0, buf[:0], err
			}
		case wsframe.OpClose:
			code, reason, _ := wsframe.ParseClose(f.Payload) // checked by Next
			var mask [4]byte
			reply := wsframe.AppendClose(nil, 0, "", &mask)
			if code != wsframe.CloseNoStatus {
				reply = wsframe.AppendClose(nil, code, "", &mask)
			}
			_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.conn.Write(reply)
			c.shut("ws close " + strconv.Itoa(code) + " (server)")
			return 0, buf[:0], &CloseError{Code: code, Reason: reason}
		}
	}
}

// readFailed turns a read error into the returned error and closes the
// connection where it can no longer be used.
func (c *WSConn) readFailed(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		c.shut("ws close 1006 (server)")
		return &CloseError{Code: wsframe.CloseAbnormal, Reason: "connection closed without a close frame"}
	case errors.Is(err, wsframe.ErrProtocol), errors.Is(err, wsframe.ErrTooLarge):
		code := wsframe.CloseCodeFor(err)
		var mask [4]byte
		_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.conn.Write(wsframe.AppendClose(nil, code, "", &mask))
		c.shut("ws close " + strconv.Itoa(code) + " (client)")
		k := httpc.Protocol
		if errors.Is(err, wsframe.ErrTooLarge) {
			k = httpc.BodyTooLarge
		}
		c.opts.Counters.failed(k)
		return &httpc.Error{Kind: k, Op: "read", URL: c.url, Err: err}
	}
	e := ioError(ctx, err, "read", c.url)
	c.fail(ctx, e, "read")
	return e
}

// fail counts a failed exchange and closes the connection (but for a
// cancellation by a stopping user, which Close handles).
func (c *WSConn) fail(ctx context.Context, err error, _ string) {
	k := httpc.Classify(err)
	if k == httpc.Canceled || k == httpc.ClientClosed {
		return
	}
	c.opts.Counters.failed(k)
	label := "ws close (error)"
	if k.IsTimeout() {
		label = "ws close (timeout)"
	}
	c.shut(label)
}

func (c *WSConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// shut closes the socket once, counting label.
func (c *WSConn) shut(label string) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.closed = true
	c.mu.Unlock()
	c.conn.Close()
	c.opts.Counters.closed(label)
	return true
}

// Closed reports whether the connection was closed (by either side).
func (c *WSConn) Closed() bool { return c.isClosed() }

// Close sends a close frame with code (1000 if 0) and reason and closes
// the connection. With wait, it first waits up to the exchange timeout
// (at most a second) for the server's close frame, as RFC 6455 asks
// of a client; without, it closes at once (a stopping user). Safe from
// any goroutine; idempotent.
func (c *WSConn) Close(code int, reason string, wait bool) error {
	if code == 0 {
		code = wsframe.CloseNormal
	}
	if c.isClosed() {
		return nil
	}
	var mask [4]byte
	m := rand.Uint32() //nolint:gosec // a frame mask
	mask[0], mask[1], mask[2], mask[3] = byte(m), byte(m>>8), byte(m>>16), byte(m>>24)
	_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := c.conn.Write(wsframe.AppendClose(nil, code, reason, &mask))
	if wait && err == nil {
		_ = c.conn.SetReadDeadline(time.Now().Add(min(time.Second, c.opts.timeout())))
		var b []byte
		for range 16 { // skip a few messages still in flight
			f, err := c.rd.Next(b)
			if err != nil || f.Op == wsframe.OpClose {
				break
			}
		}
	}
	c.shut("ws close " + strconv.Itoa(code) + " (client)")
	return nil
}
