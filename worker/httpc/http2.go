package httpc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"
)

// DefaultHTTP2Streams is the default of Options.HTTP2Streams.
const DefaultHTTP2Streams = 100

// ErrNoH2 is wrapped when Options.HTTP2 is set and a TLS server did not
// select h2 in ALPN.
var ErrNoH2 = errors.New("httpc: the server did not select h2 in ALPN")

// HTTP/2 (Options.HTTP2)
//
// The framing, HPACK and flow control are golang.org/x/net/http2's
// ClientConn, over a connection this package dials (source address, TLS
// options, connection counters as for HTTP/1.1). A Client holds one
// ClientConn; Do and DoInto may then be called concurrently, each call a
// stream, at most Options.HTTP2Streams at once (further calls wait for a
// free stream, bounded by their timeout). When the server sends GOAWAY,
// requests already sent finish and the next request opens a new
// connection (counted as a reconnect). Received GOAWAY and RST_STREAM
// frames are counted in Counters (TLSCounts.H2GoAways, H2ResetStreams).
//
// Differences from HTTP/1.1 mode: redirects are followed on the same
// origin only (a redirect to another origin fails with InvalidRequest);
// requests to absolute URLs of another origin are refused the same way.

// x/net deprecates its Transport and ClientConn for net/http's own
// (Transport.NewClientConn, Go 1.26). cicada keeps x/net's because only it
// runs over a net.Conn the caller made: net/http must see the *tls.Conn
// itself, so its ClientConn cannot sit on the frame-counting wrapper.
//
//nolint:staticcheck // SA1019, see above
type (
	h2Transport  = http2.Transport
	h2ClientConn = http2.ClientConn
)

// h2shared is the HTTP/2 part of a config, shared by its Clients.
type h2shared struct {
	t       *h2Transport
	once    sync.Once
	headers []Header // the default headers then Options.Headers, parsed once
}

// h2state is one Client's HTTP/2 connection.
type h2state struct {
	mu      sync.Mutex
	cc      *h2ClientConn
	conn    net.Conn
	sniff   *h2sniffConn
	dialing chan struct{} // closed when the connect in progress ends
	hadConn bool
	closed  bool
	sem     chan struct{}
	jarMu   sync.Mutex // guards Client.jar in HTTP/2 mode
}

// applyProtocolOptions checks the TLS and HTTP/2 options and builds the
// TLS template from them.
func (cfg *config) applyProtocolOptions(opts *Options) error {
	if opts.HTTP2Streams < 0 {
		return fmt.Errorf("%w: Options.HTTP2Streams %d is negative", ErrInvalidRequest, opts.HTTP2Streams)
	}
	if opts.HTTP2Streams > 0 && !opts.HTTP2 {
		return fmt.Errorf("%w: Options.HTTP2Streams needs Options.HTTP2", ErrInvalidRequest)
	}
	if !opts.TLS.IsZero() || opts.HTTP2 {
		t, err := opts.TLS.Build(opts.TLSConfig, opts.HTTP2)
		if err != nil {
			return err
		}
		cfg.tlsTemplate, cfg.keepALPN = t, true
	}
	if opts.HTTP2 {
		cfg.http2 = true
		cfg.streams = opts.HTTP2Streams
		if cfg.streams == 0 {
			cfg.streams = DefaultHTTP2Streams
		}
		//nolint:staticcheck // SA1019: x/net's Transport, see h2Transport
		cfg.h2 = &h2shared{t: &h2Transport{
			AllowHTTP:                  true,
			DisableCompression:         true, // Accept-Encoding is ours; bodies are decoded here
			StrictMaxConcurrentStreams: true,
		}}
	}
	return nil
}

// handshakeDone counts a finished TLS handshake and checks ALPN.
func (c *Client) handshakeDone(tconn *tls.Conn, d time.Duration) error {
	st := tconn.ConnectionState()
	c.counterSet().handshake(st.DidResume, d)
	if c.cfg.http2 && st.NegotiatedProtocol != "h2" {
		return fmt.Errorf("%w (it selected %q)", ErrNoH2, st.NegotiatedProtocol)
	}
	return nil
}

// h2state returns the Client's HTTP/2 state, creating it.
func (c *Client) h2state() *h2state {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.h2 == nil {
		c.mu.h2 = &h2state{sem: make(chan struct{}, c.cfg.streams)}
	}
	return c.mu.h2
}

// close closes the HTTP/2 connection (Client.Close).
func (h *h2state) close(cs counterSet) {
	h.mu.Lock()
	h.closed = true
	cc, conn := h.cc, h.conn
	h.cc, h.conn = nil, nil
	h.mu.Unlock()
	if cc != nil {
		cc.Close()
		conn.Close()
		cs.closed(CloseClient)
	}
}

// doH2 is DoInto in HTTP/2 mode.
func (c *Client) doH2(ctx context.Context, req *Request, resp *Response, start time.Time) error {
	if err := ctxErr(ctx); err != nil {
		return c.ctxError(ctx, err, req.Path)
	}
	method := req.Method
	if method == "" {
		method = "GET"
	}
	if !validRequest(method, req.Headers) {
		return &Error{Kind: InvalidRequest, Op: "request", URL: c.cfg.base.origin + c.cfg.basePath + req.Path,
			Err: fmt.Errorf("%w: bad method or header in %s %s", ErrInvalidRequest, method, req.Path)}
	}
	cl := call{method: method, ep: &c.cfg.base, prefix: c.cfg.basePath, path: req.Path, req: req, body: req.Body, useJar: !c.cfg.disableCookies}
	if isAbsoluteURL(req.Path) {
		if err := c.resolveAbsolute(&cl, req.Path); err != nil {
			return err
		}
	} else if req.Path != "" && req.Path[0] != '/' {
		cl.prefix += "/"
	}
	deadline := start.Add(c.cfg.timeout)
	if d, ok := ctx.Deadline(); !ok || deadline.Before(d) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	h := c.h2state()
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return c.h2CtxError(ctx, &cl)
	}
	defer func() { <-h.sem }()
	for {
		if cl.ep != &c.cfg.base {
			return &Error{Kind: InvalidRequest, Op: "request", URL: cl.url(),
				Err: fmt.Errorf("%w: with HTTP2, requests go to the base URL's origin only", ErrInvalidURL)}
		}
		resp.origin, resp.prefix, resp.path = cl.ep.origin, cl.prefix, cl.path
		if err := c.h2Exchange(ctx, h, &cl, resp); err != nil {
			return err
		}
		if !isRedirect(resp.StatusCode) || c.cfg.maxRedirects < 0 {
			return nil
		}
		loc, ok := resp.lookup("Location")
		if !ok {
			return nil
		}
		if resp.Redirects >= c.cfg.maxRedirects {
			return &Error{Kind: InvalidRequest, Op: "request", URL: resp.URL(),
				Err: fmt.Errorf("%w: more than %d", ErrTooManyRedirects, c.cfg.maxRedirects)}
		}
		if err := c.redirect(&cl, resp, string(loc)); err != nil {
			return err
		}
		resp.Redirects++
	}
}

func (c *Client) h2CtxError(ctx context.Context, cl *call) error {
	err := ctxErr(ctx)
	if err == nil {
		err = context.Canceled
	}
	return c.ctxError(ctx, err, cl.path)
}

// h2Conn returns a ClientConn that can take a request, dialing one if
// the current one is gone or going away. reused is false for a new one.
func (c *Client) h2Conn(ctx context.Context, h *h2state, cl *call) (*h2ClientConn, bool, error) {
	h.mu.Lock()
	for {
		if h.closed || c.isClosed() {
			h.mu.Unlock()
			return nil, false, c.closedError()
		}
		// The frame scanner may see a GOAWAY before the ClientConn's read
		// loop has handled it: then the connection is already going away.
		if h.cc != nil && h.cc.CanTakeNewRequest() && !h.sniff.goaway.Load() {
			cc := h.cc
			h.mu.Unlock()
			return cc, true, nil
		}
		if h.dialing == nil {
			break
		}
		// Another stream of this user is connecting: wait for its
		// connection instead of dialing a second one.
		ch := h.dialing
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, c.h2CtxError(ctx, cl)
		}
		h.mu.Lock()
	}
	if h.cc != nil {
		cause := CloseServerIdle // the server closed it
		if h.sniff.goaway.Load() {
			cause = CloseServerRequested // it sent GOAWAY
		}
		h.cc.Close()
		h.conn.Close()
		h.cc, h.conn = nil, nil
		c.counterSet().closed(cause)
	}
	ch := make(chan struct{})
	h.dialing = ch
	h.mu.Unlock()
	cc, conn, sn, err := c.h2Dial(ctx, cl)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dialing = nil
	close(ch)
	if err != nil {
		return nil, false, err
	}
	if h.closed {
		cc.Close()
		conn.Close()
		return nil, false, c.closedError()
	}
	h.cc, h.conn, h.sniff = cc, conn, sn
	c.counterSet().connected(h.hadConn)
	h.hadConn = true
	return cc, false, nil
}

// h2Dial connects (TLS and ALPN included) and starts a ClientConn.
func (c *Client) h2Dial(ctx context.Context, cl *call) (*h2ClientConn, net.Conn, *h2sniffConn, error) {
	conn, _, err := c.dial(ctx, cl)
	if err != nil {
		return nil, nil, nil, err
	}
	sn := &h2sniffConn{Conn: conn, cs: c.counterSet()}
	cc, err := c.cfg.h2.t.NewClientConn(sn) //nolint:staticcheck // SA1019: see h2Transport
	if err != nil {
		conn.Close()
		return nil, nil, nil, c.connectError(ctx, cl, "dial", err)
	}
	conn.SetDeadline(time.Time{})
	return cc, conn, sn, nil
}

// h2Exchange sends cl as one stream and reads the whole response.
func (c *Client) h2Exchange(ctx context.Context, h *h2state, cl *call, resp *Response) error {
	var hresp *http.Response
	var reused bool
	for attempt := 0; ; attempt++ {
		cc, r, err := c.h2Conn(ctx, h, cl)
		if err != nil {
			return err
		}
		hreq, err := c.h2Request(ctx, h, cl)
		if err != nil {
			return &Error{Kind: InvalidRequest, Op: "request", URL: cl.url(), Err: err}
		}
		hresp, err = cc.RoundTrip(hreq)
		if err == nil {
			reused = r
			break
		}
		if attempt > 0 || !unprocessed(err) || ctxErr(ctx) != nil {
			return c.h2Failure(ctx, cl, err)
		}
		// The server did not process the stream (GOAWAY before it,
		// REFUSED_STREAM): once more, on a new connection if this one is
		// going away, as x/net's Transport does.
	}
	defer hresp.Body.Close()
	resp.StatusCode = hresp.StatusCode
	if resp.hdr == nil {
		resp.hdr = make([]byte, 0, 512)
	}
	reason := http.StatusText(hresp.StatusCode)
	resp.hdr = appendField(resp.hdr[:0], []byte(reason))
	for k, vs := range hresp.Header {
		for _, v := range vs {
			resp.hdr = appendField(resp.hdr, []byte(k))
			resp.hdr = appendField(resp.hdr, []byte(v))
		}
	}
	if err := c.h2Body(hresp, resp); err != nil {
		if errors.Is(err, ErrBodyTooLarge) {
			c.counterSet().failed(BodyTooLarge)
			return &Error{Kind: BodyTooLarge, Op: "read", URL: cl.url(), Err: err}
		}
		return c.h2Failure(ctx, cl, err)
	}
	if cl.useJar {
		if sc := hresp.Header.Values("Set-Cookie"); len(sc) > 0 {
			now := time.Now()
			h.jarMu.Lock()
			for _, v := range sc {
				if c.jar == nil {
					c.jar = &cookieJar{}
				}
				c.jar.set(v, cl.fullPath(), now)
			}
			h.jarMu.Unlock()
		}
	}
	if resp.Redirects == 0 {
		resp.Reused = reused
	}
	return nil
}

// unprocessed reports a stream the server did not process, which x/net's
// Transport retries: a GOAWAY that came before it was sent (x/net's
// unexported errClientConnGotGoAway and errClientConnUnusable, matched by
// text) or REFUSED_STREAM.
func unprocessed(err error) bool {
	var se http2.StreamError
	if errors.As(err, &se) {
		return se.Code == http2.ErrCodeRefusedStream
	}
	s := err.Error()
	return s == "http2: Transport received Server's graceful shutdown GOAWAY" || s == "http2: client conn not usable"
}

// h2Failure classifies a failed stream.
func (c *Client) h2Failure(ctx context.Context, cl *call, err error) error {
	if cerr := ctxErr(ctx); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			c.counterSet().failed(ReadTimeout)
			return &Error{Kind: ReadTimeout, Op: "read", URL: cl.url(), Err: cerr}
		}
		return c.ctxError(ctx, cerr, cl.path)
	}
	if c.isClosed() {
		return c.closedError()
	}
	var se http2.StreamError
	var kind Kind
	switch {
	case errors.As(err, &se), strings.Contains(errText(err), "GOAWAY"):
		kind = Reset // the server reset the stream or refused it in GOAWAY
	case errors.Is(err, ErrBodyTooLarge):
		kind = BodyTooLarge
	default:
		kind = classify(err, "read")
	}
	c.counterSet().failed(kind)
	return &Error{Kind: kind, Op: "read", URL: cl.url(), Err: err}
}

// h2Request builds the net/http request of cl: the same headers as an
// HTTP/1.1 request (Host becomes :authority).
func (c *Client) h2Request(ctx context.Context, h *h2state, cl *call) (*http.Request, error) {
	cfg := c.cfg
	target := cl.path
	if cl.prefix == "" && target == "" {
		target = "/"
	}
	var b strings.Builder
	b.WriteString(cl.ep.origin)
	b.WriteString(cl.prefix)
	b.WriteString(target)
	u, err := url.Parse(b.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	var body io.ReadCloser = http.NoBody
	if len(cl.body) > 0 {
		body = io.NopCloser(bytes.NewReader(cl.body))
	}
	hr, err := http.NewRequestWithContext(ctx, cl.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	hr.ContentLength = int64(len(cl.body))
	hr.Host = cl.ep.host
	cfg.h2.once.Do(func() { cfg.h2.headers = parseHeaderLines(cfg.defaultHeaders) })
	o := overridesOf(cl.req.Headers)
	for _, hd := range cfg.h2.headers {
		if ov := overridesOf([]Header{hd}); ov&o != 0 {
			continue // replaced by the request's own header
		}
		hr.Header.Add(hd.Key, hd.Value)
	}
	if host := hostOverride(cl.req.Headers, cfg.h2.headers); host != "" {
		hr.Host = host
	}
	if cl.useJar {
		h.jarMu.Lock()
		if c.jar != nil {
			var buf bytes.Buffer
			bw := bufio.NewWriter(&buf)
			c.jar.write(bw, cl.fullPath(), cl.ep.tls, time.Now())
			bw.Flush()
			if line := strings.TrimSpace(strings.TrimPrefix(buf.String(), "Cookie: ")); line != "" {
				hr.Header.Set("Cookie", line)
			}
		}
		h.jarMu.Unlock()
	}
	for _, hd := range cl.req.Headers {
		if !computed(hd.Key) {
			hr.Header.Add(hd.Key, hd.Value)
		}
	}
	return hr, nil
}

// hostOverride is a Host header of the request or of Options.Headers.
func hostOverride(lists ...[]Header) string {
	for _, l := range lists {
		for _, h := range l {
			if strings.EqualFold(h.Key, "Host") {
				return h.Value
			}
		}
	}
	return ""
}

// parseHeaderLines splits rendered "Key: Value\r\n" lines.
func parseHeaderLines(b []byte) []Header {
	var out []Header
	for line := range strings.SplitSeq(string(b), "\r\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok {
			out = append(out, Header{Key: k, Value: v})
		}
	}
	return out
}

// h2Body reads (and decodes) the response body into resp.
func (c *Client) h2Body(hresp *http.Response, resp *Response) error {
	limit := c.cfg.maxBody
	body := resp.Body[:0]
	for {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)] // grow
		}
		n, err := hresp.Body.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if limit > 0 && len(body) > limit {
			resp.Body = body[:0]
			return &bodyTooLargeError{limit: limit}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			resp.Body = body[:0]
			return err
		}
	}
	enc := hresp.Header.Get("Content-Encoding")
	var decode func(io.Writer, []byte) (int, error)
	switch {
	case len(body) == 0 || enc == "":
	case strings.EqualFold(enc, "gzip") || strings.EqualFold(enc, "x-gzip"):
		decode = fasthttp.WriteGunzip
	case strings.EqualFold(enc, "deflate"):
		decode = fasthttp.WriteInflate
	}
	if decode == nil {
		resp.Body = body
		return nil
	}
	lw := limitWriter{max: limit}
	if _, err := decode(&lw, body); err != nil {
		if errors.Is(err, ErrBodyTooLarge) {
			return &bodyTooLargeError{limit: limit}
		}
		return fmt.Errorf("bad %s body: %w", enc, err)
	}
	resp.Body = lw.b
	return nil
}

// h2sniffConn counts the GOAWAY and RST_STREAM frames the server sends by
// following the frame headers of the byte stream the ClientConn reads
// (a server's bytes are frames from the first one on).
type h2sniffConn struct {
	net.Conn
	cs     counterSet
	fs     frameScanner
	goaway atomic.Bool
}

func (s *h2sniffConn) Read(p []byte) (int, error) {
	n, err := s.Conn.Read(p)
	if n > 0 {
		s.fs.scan(p[:n], func(typ uint8) {
			switch typ {
			case frameGoAway:
				s.goaway.Store(true)
				s.cs.h2Frame(true)
			case frameRSTStream:
				s.cs.h2Frame(false)
			}
		})
	}
	return n, err
}

// HTTP/2 frame types counted (RFC 9113 section 6).
const (
	frameRSTStream = 0x3
	frameGoAway    = 0x7
)

// frameScanner follows HTTP/2 frame boundaries across reads: it collects
// each 9-byte frame header, reports the frame's type, and skips its
// payload. It never allocates and accepts any bytes.
type frameScanner struct {
	hdr  [9]byte
	have uint8  // header bytes collected
	skip uint32 // payload bytes still to skip
}

func (f *frameScanner) scan(p []byte, frame func(typ uint8)) {
	for len(p) > 0 {
		if f.skip > 0 {
			n := min(uint32(len(p)), f.skip)
			f.skip -= n
			p = p[n:]
			continue
		}
		n := copy(f.hdr[f.have:], p)
		f.have += uint8(n)
		p = p[n:]
		if f.have < 9 {
			return
		}
		f.have = 0
		f.skip = uint32(f.hdr[0])<<16 | uint32(f.hdr[1])<<8 | uint32(f.hdr[2])
		frame(f.hdr[3])
	}
}
