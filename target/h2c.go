package target

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// h2c (Options.H2C): HTTP/2 cleartext with prior knowledge on the same
// port as HTTP/1.1. An accept loop reads the first bytes of each new
// connection (on a goroutine of its own, at most h2cSniffTimeout): the
// HTTP/2 client preface sends it to net/http's server (HTTP/2 only,
// unencrypted), anything else to fasthttp as before. The HTTP/2 requests
// run the same routes: each is turned into a fasthttp.RequestCtx for the
// one handler. A Server without H2C keeps fasthttp on the listener.

// h2cPreface is the HTTP/2 client connection preface (RFC 9113 3.4).
const h2cPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// h2cSniffTimeout bounds how long a new connection may take to send its
// first bytes before it is handed to the HTTP/1.1 server anyway.
const h2cSniffTimeout = 10 * time.Second

// h2cMux splits the accepted connections between the two servers.
type h2cMux struct {
	s      *Server
	src    net.Listener // the retrying listener
	h1, h2 *chanListener
	hs     *http.Server
}

func newH2CMux(s *Server, src net.Listener) *h2cMux {
	m := &h2cMux{s: s, src: src, h1: newChanListener(src.Addr()), h2: newChanListener(src.Addr())}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	m.hs = &http.Server{
		Handler:   http.HandlerFunc(s.serveH2),
		Protocols: &p,
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				s.accepted.Add(1)
				s.open.Add(1)
			case http.StateClosed, http.StateHijacked:
				s.open.Add(-1)
			}
		},
		IdleTimeout: s.opts.IdleTimeout,
	}
	return m
}

// run accepts until the source listener fails, then closes both sides.
func (m *h2cMux) run() {
	go m.hs.Serve(m.h2) //nolint:errcheck // ends with ErrServerClosed or the closed listener
	for {
		c, err := m.src.Accept()
		if err != nil {
			m.h1.close()
			m.h2.close()
			m.hs.Close()
			return
		}
		go m.route(c)
	}
}

func (m *h2cMux) route(c net.Conn) {
	buf := make([]byte, len(h2cPreface))
	c.SetReadDeadline(time.Now().Add(h2cSniffTimeout))
	n := 0
	for n < len(buf) {
		k, err := c.Read(buf[n:])
		n += k
		if err != nil || !bytes.HasPrefix([]byte(h2cPreface), buf[:n]) {
			break
		}
	}
	c.SetReadDeadline(time.Time{})
	pc := &prefixConn{Conn: c, pre: buf[:n]}
	if n == len(buf) && string(buf) == h2cPreface {
		m.h2.push(pc)
		return
	}
	m.h1.push(pc)
}

// serveH2 runs one HTTP/2 request through the fasthttp handler.
func (s *Server) serveH2(w http.ResponseWriter, r *http.Request) {
	var req fasthttp.Request
	req.Header.SetMethod(r.Method)
	req.SetRequestURI(r.URL.RequestURI())
	req.Header.SetHost(r.Host)
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return
	}
	req.SetBody(body)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, nil, nil)
	s.handle(&ctx)
	h := w.Header()
	for k, v := range ctx.Response.Header.All() {
		if string(k) == "Content-Length" || string(k) == "Connection" || string(k) == "Date" || string(k) == "Server" {
			continue
		}
		h.Add(string(k), string(v))
	}
	if ct := ctx.Response.Header.ContentType(); len(ct) > 0 {
		h.Set("Content-Type", string(ct))
	}
	w.WriteHeader(ctx.Response.StatusCode())
	if r.Method != http.MethodHead {
		w.Write(ctx.Response.Body())
	}
}

// prefixConn replays the sniffed bytes before reading on.
type prefixConn struct {
	net.Conn
	pre []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// chanListener is a net.Listener fed by push.
type chanListener struct {
	addr   net.Addr
	ch     chan net.Conn
	done   chan struct{}
	closer sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) close() { l.closer.Do(func() { close(l.done) }) }

// Close closes the listener; the source listener stays the Server's.
func (l *chanListener) Close() error { l.close(); return nil }

func (l *chanListener) Addr() net.Addr { return l.addr }
