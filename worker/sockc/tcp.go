package sockc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/cicada-load/cicada/worker/httpc"
)

// ErrServerClosed is wrapped when the server closed a TCP connection
// before the reply was complete.
var ErrServerClosed = errors.New("sockc: server closed the connection")

// Until says where a TCP reply ends: at the first Delimiter (included in
// the reply), after Length bytes, or, with neither, when no more bytes
// came for Idle (the reply is what came; possibly nothing).
type Until struct {
	Delimiter []byte
	Length    int
	// Idle ends a reply without delimiter or length: the read stops once
	// nothing arrived for this long. If zero, 100 ms.
	Idle time.Duration
}

// DefaultIdle is Until.Idle when it is zero.
const DefaultIdle = 100 * time.Millisecond

// TCPConn is one raw TCP (or TLS) client connection. Its methods serve
// one caller at a time, except Close.
type TCPConn struct {
	conn    net.Conn
	url     string
	opts    *Options
	pending []byte // bytes read beyond the last reply

	mu     sync.Mutex
	closed bool
}

// DialTCP connects to rawURL: "tcp://host:port" or "tls://host:port"
// (TLS with the Options' configuration, no ALPN unless TLSConfig has one).
func DialTCP(ctx context.Context, rawURL string, o *Options) (*TCPConn, error) {
	if o == nil {
		o = &Options{}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrInvalidURL, rawURL, err)
	}
	if (u.Scheme != "tcp" && u.Scheme != "tls") || u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("%w: %q: must be tcp://host:port or tls://host:port", ErrInvalidURL, rawURL)
	}
	conn, err := dial(ctx, u.Host, u.Hostname(), u.Scheme == "tls", nil, o)
	if err != nil {
		o.Counters.connectFailed(httpc.Classify(err))
		return nil, err
	}
	o.Counters.connected()
	return &TCPConn{conn: conn, url: rawURL, opts: o}, nil
}

// Send writes b.
func (c *TCPConn) Send(ctx context.Context, b []byte) error {
	if c.Closed() {
		return &httpc.Error{Kind: httpc.ClientClosed, Op: "write", URL: c.url, Err: ErrClosed}
	}
	stop := deadline(ctx, c.conn, c.opts.timeout())
	_, err := c.conn.Write(b)
	stop()
	if err != nil {
		err = ioError(ctx, err, "write", c.url)
		c.fail(err)
	}
	return err
}

// Read reads one reply as u says, appending it to buf[:0]. Bytes beyond
// the reply are kept for the next Read. A reply longer than
// Options.MaxMessage fails (Kind BodyTooLarge). The server closing the
// connection ends a reply without delimiter or length (and the
// connection); before a delimiter or length it fails with
// ErrServerClosed (Kind EOFBeforeResponse if nothing came, Incomplete
// otherwise). A timeout (Options.Timeout or ctx) fails with Kind
// ReadTimeout and closes the connection, since a late reply would be
// taken for the next one's.
func (c *TCPConn) Read(ctx context.Context, u Until, buf []byte) ([]byte, error) {
	out := buf[:0]
	if c.Closed() && len(c.pending) == 0 {
		return out, &httpc.Error{Kind: httpc.ClientClosed, Op: "read", URL: c.url, Err: ErrClosed}
	}
	out = append(out, c.pending...)
	c.pending = nil
	limit := c.opts.maxMessage()
	idle := u.Idle
	if idle <= 0 {
		idle = DefaultIdle
	}
	framed := len(u.Delimiter) > 0 || u.Length > 0
	end := time.Now().Add(c.opts.timeout())
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	var stop func() bool = func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { _ = c.conn.SetReadDeadline(time.Unix(1, 0)) })
	}
	defer stop()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	scanned := 0
	for {
		if n, ok := replyEnd(out, u, &scanned); ok {
			if n < len(out) {
				c.pending = append([]byte(nil), out[n:]...)
			}
			return out[:n], nil
		}
		if len(out) > limit {
			c.fail(&httpc.Error{Kind: httpc.BodyTooLarge})
			return out[:0], &httpc.Error{Kind: httpc.BodyTooLarge, Op: "read", URL: c.url, Err: fmt.Errorf("%w: reply over %d bytes", httpc.ErrBodyTooLarge, limit)}
		}
		if c.Closed() {
			break
		}
		d := end
		if !framed {
			if id := time.Now().Add(idle); id.Before(d) {
				d = id
			}
		}
		_ = c.conn.SetReadDeadline(d)
		n, err := c.conn.Read(*bp)
		out = append(out, (*bp)[:n]...)
		if err == nil {
			continue
		}
		switch {
		case errors.Is(err, io.EOF):
			c.shut("tcp close (server)")
		case !framed && errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil && time.Now().Before(end):
			return out, nil // idle: the reply is over
		default:
			e := ioError(ctx, err, "read", c.url)
			c.fail(e)
			return out[:0], e
		}
	}
	// The server closed the connection.
	if !framed {
		return out, nil
	}
	k := httpc.Incomplete
	if len(out) == 0 {
		k = httpc.EOFBeforeResponse
	}
	c.opts.Counters.failed(k)
	return out[:0], &httpc.Error{Kind: k, Op: "read", URL: c.url, Err: ErrServerClosed}
}

// replyEnd reports whether b holds a complete reply and its length.
// scanned remembers how far a delimiter search got.
func replyEnd(b []byte, u Until, scanned *int) (int, bool) {
	switch {
	case len(u.Delimiter) > 0:
		from := max(*scanned-len(u.Delimiter)+1, 0)
		if i := bytes.Index(b[from:], u.Delimiter); i >= 0 {
			return from + i + len(u.Delimiter), true
		}
		*scanned = len(b)
	case u.Length > 0:
		if len(b) >= u.Length {
			return u.Length, true
		}
	}
	return 0, false
}

func (c *TCPConn) fail(err error) {
	k := httpc.Classify(err)
	if k == httpc.Canceled || k == httpc.ClientClosed {
		return
	}
	c.opts.Counters.failed(k)
	label := "tcp close (error)"
	if k.IsTimeout() {
		label = "tcp close (timeout)"
	}
	c.shut(label)
}

// Closed reports whether the connection was closed (by either side).
func (c *TCPConn) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *TCPConn) shut(label string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.conn.Close()
	c.opts.Counters.closed(label)
}

// Close closes the connection ("tcp close (client)"). Safe from any
// goroutine; idempotent.
func (c *TCPConn) Close() error {
	c.shut("tcp close (client)")
	return nil
}
