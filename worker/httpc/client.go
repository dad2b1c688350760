package httpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Defaults for zero Options fields. Timeout and ConnectTimeout are Locust
// FastHttpSession's network_timeout and connection_timeout.
const (
	DefaultTimeout             = 60 * time.Second
	DefaultConnectTimeout      = 60 * time.Second
	DefaultMaxResponseBodySize = 64 << 20
	DefaultMaxRedirects        = 10
	DefaultUserAgent           = "cicada"
)

// readBufferSize is the size of the pooled read buffers. A response head
// (status line and all headers) must fit in it.
const readBufferSize = 8192

// Options configure a Client. The zero value works. Options, and the
// values its pointers and slices refer to, must not be modified after New.
type Options struct {
	// Timeout bounds one exchange on an open connection: writing the
	// request and reading the whole response. A context deadline that is
	// earlier wins. If zero, DefaultTimeout.
	Timeout time.Duration
	// ConnectTimeout bounds connecting: DNS, TCP and the TLS handshake.
	// If zero, DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// TLSConfig is used for https URLs. If nil, a default configuration;
	// ServerName defaults to the URL's host. ALPN is http/1.1 (h2 with
	// HTTP2) unless TLS.ALPN says otherwise.
	TLSConfig *tls.Config
	// TLS are TLS settings as data (CA bundle, client certificate, server
	// name, versions, cipher suites, session resumption, ALPN), applied on
	// top of TLSConfig; NewConfig reads the files. See TLSOptions.
	TLS TLSOptions
	// HTTP2 speaks HTTP/2: h2 over TLS (negotiated with ALPN; a server
	// that does not select h2 fails the connect) and h2c with prior
	// knowledge over plain http. Each Client keeps one connection and
	// serves up to HTTP2Streams requests at once on it. See http2.go.
	HTTP2 bool
	// HTTP2Streams bounds the concurrent requests (streams) of one Client
	// with HTTP2; the server's SETTINGS_MAX_CONCURRENT_STREAMS bounds them
	// too. If zero, DefaultHTTP2Streams.
	HTTP2Streams int
	// InsecureSkipVerify disables certificate verification (Locust's
	// insecure=True), whatever TLSConfig says.
	InsecureSkipVerify bool
	// LocalAddr binds connections to a source address (for --source-ips).
	// With port 0 the kernel picks the port at connect time
	// (IP_BIND_ADDRESS_NO_PORT on Linux), so every source IP gives a full
	// port range per destination.
	LocalAddr *net.TCPAddr
	// MaxResponseBodySize limits a response body (after decoding); a larger
	// one fails with Kind BodyTooLarge. If zero,
	// DefaultMaxResponseBodySize; negative means no limit.
	MaxResponseBodySize int
	// MaxRedirects is how many redirects Do follows (Locust follows them by
	// default). If zero, DefaultMaxRedirects; negative disables following,
	// so 3xx responses are returned as they are.
	MaxRedirects int
	// DisableCookies turns the per-user cookie jar off.
	DisableCookies bool
	// DisableCompression stops sending "Accept-Encoding: gzip, deflate"
	// (Locust sends it). Compressed bodies are decoded either way.
	DisableCompression bool
	// UserAgent is the User-Agent header. If empty, DefaultUserAgent.
	UserAgent string
	// Headers are sent with every request, after the default headers.
	// A key here replaces a default header of the same name.
	Headers []Header
	// Counters, if not nil, also receives this Client's connection events
	// (for example one Counters per worker). The package-wide Totals
	// always do.
	Counters *Counters
}

// endpoint is where requests of one origin go.
type endpoint struct {
	tls    bool
	addr   string // host:port to dial
	host   string // Host header
	origin string // scheme://host[:port], as in the URL
	tlsCfg *tls.Config
}

// config is a Client's immutable configuration.
type config struct {
	base            endpoint
	basePath        string // escaped path of the base URL, no trailing slash
	timeout         time.Duration
	dialer          net.Dialer
	maxBody         int // 0: no limit
	maxRedirects    int // <0: do not follow
	disableCookies  bool
	disableCompress bool
	userAgent       string
	overrides       overrides // default headers that Options.Headers replace
	defaultHeaders  []byte    // default headers, then Options.Headers, rendered
	optionHeaders   []byte    // Options.Headers rendered
	tlsTemplate     *tls.Config
	insecure        bool
	keepALPN        bool // tlsTemplate's NextProtos are final (TLS options or HTTP2)
	http2           bool
	streams         int
	h2              *h2shared
	extra           *Counters
}

// Client is one user's HTTP session: one keep-alive connection to the base
// URL's origin, opened on the first request and reopened transparently
// when the server closes it, plus a cookie jar.
//
// Do and DoInto serve one request at a time; calling them concurrently on
// one Client fails with ErrConcurrentUse instead of corrupting the session.
// Close and Counters may be called from any goroutine at any time.
//
// An idle Client holds its net.Conn and a few hundred bytes of its own: no
// goroutine, no buffers (those are pooled and held only during a request),
// no response data.
type Client struct {
	cfg      *config
	counters Counters
	busy     atomic.Bool // a Do is running; guards the fields below mu

	mu struct {
		sync.Mutex
		conn     net.Conn        // the keep-alive connection, nil if none
		active   net.Conn        // the connection the running exchange uses
		inflight <-chan struct{} // Done of the running Do's context
		closed   bool
		h2       *h2state // HTTP/2 mode: the connection (http2.go)
	}

	// Only the goroutine running Do touches these (busy guards them).
	raw         syscall.RawConn // of the keep-alive TCP connection, for the idle check
	hadConn     bool
	watchedDone <-chan struct{}
	stopWatch   func() bool
	jar         *cookieJar
	peekState   int8
	peekFn      func(fd uintptr) bool
}

// New returns the Client of one user for baseURL ("http://host:port",
// "https://host/prefix"). It does not connect. User info in the URL
// ("http://user:pass@host") becomes a Basic Authorization header, as in
// Locust. Errors wrap ErrInvalidURL or ErrInvalidRequest (bad
// Options.Headers). New is NewConfig followed by Config.NewClient; create
// many users through one Config to share its memory.
func New(baseURL string, opts Options) (*Client, error) {
	cfg, err := NewConfig(baseURL, opts)
	if err != nil {
		return nil, err
	}
	return cfg.NewClient(), nil
}

// Config is the checked, immutable configuration of the Clients of one
// base URL and Options. Clients made from one Config share it (about half
// of an idle Client's own memory). It is safe for concurrent use.
type Config struct {
	c config
}

// NewConfig checks baseURL and opts once for many Clients; see New.
func NewConfig(baseURL string, opts Options) (*Config, error) {
	c, err := newConfig(baseURL, opts)
	if err != nil {
		return nil, err
	}
	return &Config{c: *c}, nil
}

// NewClient returns a new user's Client. It does not connect.
func (cfg *Config) NewClient() *Client {
	return &Client{cfg: &cfg.c}
}

// BaseURL returns the origin and path prefix requests go to.
func (cfg *Config) BaseURL() string { return cfg.c.base.origin + cfg.c.basePath }

func newConfig(baseURL string, opts Options) (*config, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%w %q: %w", ErrInvalidURL, baseURL, err)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w %q: a base URL cannot have a query or fragment", ErrInvalidURL, baseURL)
	}
	cfg := &config{
		timeout:         opts.Timeout,
		maxBody:         opts.MaxResponseBodySize,
		maxRedirects:    opts.MaxRedirects,
		disableCookies:  opts.DisableCookies,
		disableCompress: opts.DisableCompression,
		userAgent:       opts.UserAgent,
		tlsTemplate:     opts.TLSConfig,
		insecure:        opts.InsecureSkipVerify,
		extra:           opts.Counters,
	}
	if err := cfg.applyProtocolOptions(&opts); err != nil {
		return nil, err
	}
	ep, err := cfg.endpointOf(u, baseURL)
	if err != nil {
		return nil, err
	}
	cfg.base = *ep
	cfg.basePath = strings.TrimSuffix(u.EscapedPath(), "/")
	if cfg.timeout <= 0 {
		cfg.timeout = DefaultTimeout
	}
	connectTimeout := opts.ConnectTimeout
	if connectTimeout <= 0 {
		connectTimeout = DefaultConnectTimeout
	}
	switch {
	case cfg.maxBody == 0:
		cfg.maxBody = DefaultMaxResponseBodySize
	case cfg.maxBody < 0:
		cfg.maxBody = 0
	}
	if cfg.maxRedirects == 0 {
		cfg.maxRedirects = DefaultMaxRedirects
	}
	if cfg.userAgent == "" {
		cfg.userAgent = DefaultUserAgent
	}
	cfg.dialer = net.Dialer{Timeout: connectTimeout, KeepAlive: -1}
	if opts.LocalAddr != nil {
		cfg.dialer.LocalAddr = opts.LocalAddr
		if opts.LocalAddr.Port == 0 {
			cfg.dialer.Control = bindNoPort
		}
	}

	headers := opts.Headers
	if u.User != nil {
		pass, _ := u.User.Password()
		auth := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass))
		headers = append([]Header{{Key: "Authorization", Value: "Basic " + auth}}, headers...)
	}
	if !validRequest("GET", headers) {
		return nil, fmt.Errorf("%w: Options.Headers has an invalid name or value", ErrInvalidRequest)
	}
	cfg.overrides = overridesOf(headers)
	var ob []byte
	for _, h := range headers {
		if !computed(h.Key) {
			ob = append(ob, h.Key+": "+h.Value+"\r\n"...)
		}
	}
	cfg.optionHeaders = ob
	var db []byte
	if cfg.overrides&overrideUserAgent == 0 {
		db = append(db, "User-Agent: "+cfg.userAgent+"\r\n"...)
	}
	if cfg.overrides&overrideAccept == 0 {
		db = append(db, "Accept: */*\r\n"...)
	}
	if cfg.overrides&overrideAcceptEncoding == 0 && !cfg.disableCompress {
		db = append(db, "Accept-Encoding: gzip, deflate\r\n"...)
	}
	cfg.defaultHeaders = append(db, ob...)
	return cfg, nil
}

// endpointOf checks an absolute URL and returns its endpoint.
func (cfg *config) endpointOf(u *url.URL, raw string) (*endpoint, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		if scheme == "" {
			return nil, fmt.Errorf("%w %q: missing scheme (want http:// or https://)", ErrInvalidURL, raw)
		}
		return nil, fmt.Errorf("%w %q: unsupported scheme %q (want http or https)", ErrInvalidURL, raw, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("%w %q: missing host", ErrInvalidURL, raw)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("%w %q: bad port %q", ErrInvalidURL, raw, port)
	}
	ep := &endpoint{
		tls:    scheme == "https",
		addr:   net.JoinHostPort(host, port),
		host:   u.Host,
		origin: scheme + "://" + u.Host,
	}
	if ep.tls {
		ep.tlsCfg = tlsConfigFor(cfg.tlsTemplate, host, cfg.insecure, cfg.keepALPN)
	}
	return ep, nil
}

// tlsConfigs caches the per-host TLS configurations, so that thousands of
// users of one host share one (a tls.Config is safe for concurrent use).
var tlsConfigs sync.Map // tlsKey -> *tls.Config

type tlsKey struct {
	tmpl     *tls.Config
	host     string
	insecure bool
	keepALPN bool
}

func tlsConfigFor(tmpl *tls.Config, host string, insecure, keepALPN bool) *tls.Config {
	key := tlsKey{tmpl, host, insecure, keepALPN}
	if v, ok := tlsConfigs.Load(key); ok {
		return v.(*tls.Config)
	}
	var c *tls.Config
	if tmpl != nil {
		c = tmpl.Clone()
	} else {
		c = &tls.Config{}
	}
	if c.ServerName == "" {
		c.ServerName = host
	}
	if insecure {
		c.InsecureSkipVerify = true
	}
	if !keepALPN {
		c.NextProtos = []string{"http/1.1"}
	} else {
		// tmpl was built for one Config (TLSOptions.Build): caching it
		// process-wide would keep every such Config alive.
		return c
	}
	v, _ := tlsConfigs.LoadOrStore(key, c)
	return v.(*tls.Config)
}

// BaseURL returns the origin and path prefix requests go to.
func (c *Client) BaseURL() string { return c.cfg.base.origin + c.cfg.basePath }

// Counters returns this Client's connection counters.
func (c *Client) Counters() CountersSnapshot { return c.counters.Snapshot() }

func (c *Client) counterSet() counterSet { return counterSet{own: &c.counters, extra: c.cfg.extra} }

// Close closes the connection (interrupting a running Do, which then fails
// with ErrClosed) and makes later calls of Do fail with ErrClosed. It is
// idempotent and always returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	conn, active, h2 := c.mu.conn, c.mu.active, c.mu.h2
	c.mu.conn = nil
	c.mu.Unlock()
	if h2 != nil {
		h2.close(c.counterSet())
	}
	if conn != nil {
		conn.Close()
		c.counterSet().closed(CloseClient)
	}
	if active != nil && active != conn {
		active.Close() // a one-shot connection; its Do counts the close
	}
	if c.busy.CompareAndSwap(false, true) {
		if c.stopWatch != nil {
			c.stopWatch()
			c.stopWatch, c.watchedDone = nil, nil
		}
		c.busy.Store(false)
	}
	return nil
}

// Do sends req and reads the whole response into a new Response that the
// caller owns. On error the Response is still returned, with Duration set
// (Locust records the time to failure) and the other fields zero; the
// error is an *Error whose message is the Locust failure string.
// A 4xx or 5xx status is not an error: see Response.StatusError.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {
	resp := new(Response)
	err := c.DoInto(ctx, req, resp)
	return resp, err
}

// DoInto is Do writing into a caller-owned Response, reusing its buffers:
// it does not allocate in the steady state. resp is reset first; on error
// only its Duration is meaningful.
func (c *Client) DoInto(ctx context.Context, req *Request, resp *Response) error {
	start := time.Now()
	resp.reset()
	if c.cfg.http2 {
		err := c.doH2(ctx, req, resp, start)
		resp.Duration = time.Since(start)
		if err != nil {
			resp.StatusCode = 0
			resp.Body = resp.Body[:0]
			resp.hdr = resp.hdr[:0]
		}
		return err
	}
	if !c.busy.CompareAndSwap(false, true) {
		return &Error{Kind: ClientClosed, Op: "request", Err: ErrConcurrentUse}
	}
	err := c.do(ctx, req, resp, start)
	c.busy.Store(false)
	resp.Duration = time.Since(start)
	if err != nil {
		resp.StatusCode = 0
		resp.Body = resp.Body[:0]
		resp.hdr = resp.hdr[:0]
	}
	return err
}

func (c *Client) do(ctx context.Context, req *Request, resp *Response, start time.Time) error {
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
	c.watch(ctx)
	for {
		resp.origin, resp.prefix, resp.path = cl.ep.origin, cl.prefix, cl.path
		cl.deadline = time.Now().Add(c.cfg.timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(cl.deadline) {
			cl.deadline = d
		}
		var err error
		if cl.ep == &c.cfg.base {
			err = c.keepAliveExchange(ctx, &cl, resp)
		} else {
			err = c.oneShotExchange(ctx, &cl, resp)
		}
		if err != nil {
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

// ctxError is the error for a canceled or expired context: Canceled, or
// for an expired deadline a ReadTimeout wrapping context.DeadlineExceeded
// (so a caller can tell its own deadline from the server's slowness).
func (c *Client) ctxError(ctx context.Context, err error, path string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Kind: ReadTimeout, Op: "read", URL: c.cfg.base.origin + c.cfg.basePath + path, Err: err}
	}
	return &Error{Kind: Canceled, Op: "request", Err: err}
}

func isRedirect(code int) bool {
	return code == 301 || code == 302 || code == 303 || code == 307 || code == 308
}

func isAbsoluteURL(p string) bool {
	return len(p) > 7 && (strings.EqualFold(p[:7], "http://") || len(p) > 8 && strings.EqualFold(p[:8], "https://"))
}

// resolveAbsolute points cl at an absolute URL.
func (c *Client) resolveAbsolute(cl *call, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return &Error{Kind: InvalidRequest, Op: "request", URL: raw, Err: fmt.Errorf("%w %q: %w", ErrInvalidURL, raw, err)}
	}
	ep, err := c.cfg.endpointOf(u, raw)
	if err != nil {
		return &Error{Kind: InvalidRequest, Op: "request", URL: raw, Err: err}
	}
	cl.prefix = ""
	cl.path = u.RequestURI()
	if ep.origin == c.cfg.base.origin || ep.addr == c.cfg.base.addr && ep.tls == c.cfg.base.tls && ep.host == c.cfg.base.host {
		cl.ep = &c.cfg.base
		return nil
	}
	cl.ep = ep
	cl.useJar = false
	return nil
}

// redirect points cl at the Location loc of resp.
func (c *Client) redirect(cl *call, resp *Response, loc string) error {
	switch {
	case isAbsoluteURL(loc):
		if err := c.resolveAbsolute(cl, loc); err != nil {
			return err
		}
	case strings.HasPrefix(loc, "//"):
		scheme := "http:"
		if cl.ep.tls {
			scheme = "https:"
		}
		if err := c.resolveAbsolute(cl, scheme+loc); err != nil {
			return err
		}
	default:
		base, err := url.Parse(resp.URL())
		if err != nil {
			return &Error{Kind: Protocol, Op: "read", URL: resp.URL(), Err: err}
		}
		ref, err := url.Parse(loc)
		if err != nil {
			return &Error{Kind: Protocol, Op: "read", URL: resp.URL(), Err: fmt.Errorf("bad Location %q: %w", loc, err)}
		}
		cl.prefix = ""
		cl.path = base.ResolveReference(ref).RequestURI()
	}
	code := resp.StatusCode
	if code == 303 && cl.method != "HEAD" || (code == 301 || code == 302) && cl.method == "POST" {
		cl.method = "GET"
		cl.body = nil
	}
	return nil
}

// watch makes a cancellation of ctx interrupt the running exchange. The
// registration is kept across calls with the same context, so a user that
// passes its own context to every Do pays for it once.
func (c *Client) watch(ctx context.Context) {
	done := ctx.Done()
	if done == nil || done == c.watchedDone {
		return
	}
	if c.stopWatch != nil {
		c.stopWatch()
	}
	c.watchedDone = done
	c.stopWatch = context.AfterFunc(ctx, func() { c.interrupt(done) })
}

// interrupt wakes the exchange of the Do whose context has Done channel done.
func (c *Client) interrupt(done <-chan struct{}) {
	c.mu.Lock()
	if c.mu.inflight == done && c.mu.active != nil {
		c.mu.active.SetDeadline(time.Unix(1, 0))
	}
	c.mu.Unlock()
}

// setActive records the connection an exchange is about to use and checks
// for Close. It returns false if the Client is closed.
func (c *Client) setActive(ctx context.Context, conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return false
	}
	c.mu.active = conn
	c.mu.inflight = ctx.Done()
	return true
}

func (c *Client) clearActive() {
	c.mu.Lock()
	c.mu.active = nil
	c.mu.inflight = nil
	c.mu.Unlock()
}

// keepAliveExchange runs cl on the keep-alive connection, connecting or
// reconnecting as needed, and retries once on a fresh connection when a
// reused one turns out to have been closed by the server.
func (c *Client) keepAliveExchange(ctx context.Context, cl *call, resp *Response) error {
	for attempt := 0; ; attempt++ {
		conn, reused, err := c.acquire(ctx, cl)
		if err != nil {
			return err
		}
		if !c.setActive(ctx, conn) {
			return c.closedError()
		}
		// The deadline is set before this check, so a cancellation after it
		// lands on the connection (interrupt) and is not overwritten.
		if err := ctxErr(ctx); err != nil {
			c.clearActive()
			return c.ctxError(ctx, err, cl.path)
		}
		res := c.exchange(conn, cl, resp)
		c.clearActive()
		if res.err == nil {
			if res.closeAfter {
				c.drop(conn, res.cause)
			}
			if resp.Redirects == 0 {
				resp.Reused = reused && attempt == 0
			}
			return nil
		}
		if err := ctxErr(ctx); err != nil {
			c.drop(conn, CloseCanceled)
			return c.ctxError(ctx, err, cl.path)
		}
		if c.isClosed() {
			return c.closedError()
		}
		kind := classify(res.err, res.op)
		if reused && attempt == 0 && res.received == 0 &&
			(res.op == "write" || idempotent(cl.method) && (kind == EOFBeforeResponse || kind == Reset)) {
			c.drop(conn, CloseServerIdle)
			continue
		}
		c.drop(conn, CloseError)
		c.counterSet().failed(kind)
		return &Error{Kind: kind, Op: res.op, URL: cl.url(), Err: res.err}
	}
}

// oneShotExchange runs cl over a connection of its own (another origin).
func (c *Client) oneShotExchange(ctx context.Context, cl *call, resp *Response) error {
	conn, _, err := c.dial(ctx, cl)
	if err != nil {
		return err
	}
	c.counterSet().connected(false)
	defer func() {
		conn.Close()
		c.counterSet().closed(CloseOneShot)
	}()
	conn.SetDeadline(cl.deadline)
	if !c.setActive(ctx, conn) {
		return c.closedError()
	}
	if err := ctxErr(ctx); err != nil {
		c.clearActive()
		return c.ctxError(ctx, err, cl.path)
	}
	res := c.exchange(conn, cl, resp)
	c.clearActive()
	if res.err == nil {
		return nil
	}
	if err := ctxErr(ctx); err != nil {
		return c.ctxError(ctx, err, cl.path)
	}
	if c.isClosed() {
		return c.closedError()
	}
	kind := classify(res.err, res.op)
	c.counterSet().failed(kind)
	return &Error{Kind: kind, Op: res.op, URL: cl.url(), Err: res.err}
}

func (cl *call) url() string { return cl.ep.origin + cl.prefix + cl.path }

func idempotent(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.closed
}

func (c *Client) closedError() error {
	return &Error{Kind: ClientClosed, Op: "request", Err: ErrClosed}
}

// acquire returns the keep-alive connection with its deadline set:
// the idle one if the server has not closed it, or a new one.
func (c *Client) acquire(ctx context.Context, cl *call) (conn net.Conn, reused bool, err error) {
	c.mu.Lock()
	closed := c.mu.closed
	conn = c.mu.conn
	c.mu.Unlock()
	if closed {
		return nil, false, c.closedError()
	}
	if conn != nil {
		if conn.SetDeadline(cl.deadline) == nil && c.idleAlive() {
			return conn, true, nil
		}
		c.drop(conn, CloseServerIdle)
	}
	conn, raw, err := c.dial(ctx, cl)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		conn.Close()
		return nil, false, c.closedError()
	}
	c.mu.conn = conn
	c.mu.Unlock()
	c.raw = raw
	reconnect := c.hadConn
	c.hadConn = true
	c.counterSet().connected(reconnect)
	conn.SetDeadline(cl.deadline)
	return conn, false, nil
}

// drop closes conn if it is still the keep-alive connection.
func (c *Client) drop(conn net.Conn, cause CloseCause) {
	c.mu.Lock()
	mine := c.mu.conn == conn
	if mine {
		c.mu.conn = nil
	}
	c.mu.Unlock()
	if mine {
		c.raw = nil
		conn.Close()
		c.counterSet().closed(cause)
	}
}

// dial connects to cl's endpoint, TLS included, counting failures.
func (c *Client) dial(ctx context.Context, cl *call) (net.Conn, syscall.RawConn, error) {
	ep := cl.ep
	cs := c.counterSet()
	cs.connecting(1)
	conn, err := c.cfg.dialer.DialContext(ctx, "tcp", ep.addr)
	cs.connecting(-1)
	if err != nil {
		return nil, nil, c.connectError(ctx, cl, "dial", err)
	}
	var raw syscall.RawConn
	if tc, ok := conn.(*net.TCPConn); ok {
		raw, _ = tc.SyscallConn()
	}
	if ep.tls {
		conn.SetDeadline(time.Now().Add(c.cfg.dialer.Timeout))
		tconn := tls.Client(conn, ep.tlsCfg)
		hsStart := time.Now()
		if err := tconn.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, nil, c.connectError(ctx, cl, "tls", err)
		}
		if err := c.handshakeDone(tconn, time.Since(hsStart)); err != nil {
			conn.Close()
			return nil, nil, c.connectError(ctx, cl, "tls", err)
		}
		conn = tconn
	}
	return conn, raw, nil
}

func (c *Client) connectError(ctx context.Context, cl *call, op string, err error) error {
	if cerr := ctxErr(ctx); cerr != nil {
		return c.ctxError(ctx, cerr, cl.path)
	}
	kind := classify(err, op)
	c.counterSet().connectFailed(kind)
	return &Error{Kind: kind, Op: op, URL: cl.url(), Err: err}
}

// result is the outcome of one exchange.
type result struct {
	err        error  // nil on success
	op         string // "write" or "read"
	received   int64  // bytes read from the connection
	closeAfter bool   // close the connection (on success)
	cause      CloseCause
}

// exchange writes the request of cl to conn and reads the response into
// resp. The buffers come from a pool and go back before it returns, so
// nothing in resp refers to them.
func (c *Client) exchange(conn net.Conn, cl *call, resp *Response) result {
	x := exchangePool.Get().(*exchange)
	now := time.Now()
	res := c.send(x, conn, cl, now)
	if res.err == nil {
		res = c.receive(x, conn, cl, resp)
		if res.err == nil {
			res = c.copyOut(x, cl, resp, now)
		}
	}
	x.release()
	return res
}

// send writes the request. The phases of an exchange are separate
// non-inlined functions so that the deepest path (receive, down in the
// fasthttp parser and the netpoller) does not also carry the other
// phases' frames, which keeps the stack a user goroutine grows to small.
//
//go:noinline
func (c *Client) send(x *exchange, conn net.Conn, cl *call, now time.Time) result {
	x.wr.conn = conn
	x.bw.Reset(&x.wr)
	c.writeRequest(x.bw, cl, x.scratch[:], now)
	if err := x.bw.Flush(); err != nil {
		if x.wr.err != nil {
			err = x.wr.err
		}
		return result{err: err, op: "write"}
	}
	return result{}
}

// receive reads and parses the response into x.fr.
//
//go:noinline
func (c *Client) receive(x *exchange, conn net.Conn, cl *call, resp *Response) result {
	x.rd.conn = conn
	x.br.Reset(&x.rd)
	if cl.method == "HEAD" {
		x.fr.SkipBody = true
	}
	err := x.fr.ReadLimitBody(x.br, c.cfg.maxBody)
	res := result{received: x.rd.n, op: "read"}
	if err != nil {
		raw := x.rd.err
		switch {
		case errors.Is(err, fasthttp.ErrBodyTooLarge):
			res.err = &bodyTooLargeError{limit: c.cfg.maxBody}
		case errors.Is(raw, io.EOF) && x.rd.n == 0:
			res.err = ErrEOFBeforeResponse
		case errors.Is(raw, io.EOF):
			res.err = &incompleteError{n: x.rd.n}
		case raw != nil:
			res.err = raw
		default:
			res.err = err
		}
	}
	return res
}

// copyOut copies the parsed response into resp and decides whether the
// connection can be kept.
//
//go:noinline
func (c *Client) copyOut(x *exchange, cl *call, resp *Response, now time.Time) result {
	res := result{received: x.rd.n, op: "read"}
	resp.StatusCode = x.fr.StatusCode()
	if resp.hdr == nil {
		resp.hdr = make([]byte, 0, 512) // one allocation for a typical head
	}
	resp.hdr = appendHeaders(appendField(resp.hdr[:0], x.fr.Header.StatusMessage()), &x.fr.Header)
	if err := c.copyBody(x, resp); err != nil {
		res.err = err
		return res
	}
	if cl.useJar {
		c.storeCookies(x, cl, now)
	}
	switch {
	case x.fr.Header.ConnectionClose() || x.rd.err != nil:
		res.closeAfter, res.cause = true, CloseServerRequested
	case x.br.Buffered() > 0:
		res.closeAfter, res.cause = true, CloseError
	}
	return res
}

// appendHeaders appends the headers of h as fields to dst.
//
//go:noinline
func appendHeaders(dst []byte, h *fasthttp.ResponseHeader) []byte {
	for k, v := range h.All() {
		dst = appendField(dst, k)
		dst = appendField(dst, v)
	}
	return dst
}

// copyBody copies (decoding gzip and deflate) the body into resp.
func (c *Client) copyBody(x *exchange, resp *Response) error {
	body := x.fr.Body()
	enc := x.fr.Header.ContentEncoding()
	var decode func(io.Writer, []byte) (int, error)
	switch {
	case len(body) == 0 || len(enc) == 0:
	case equalFold(enc, "gzip") || equalFold(enc, "x-gzip"):
		decode = fasthttp.WriteGunzip
	case equalFold(enc, "deflate"):
		decode = fasthttp.WriteInflate
	}
	if decode == nil {
		resp.Body = append(resp.Body[:0], body...)
		return nil
	}
	x.lw.b, x.lw.max = resp.Body[:0], c.cfg.maxBody
	_, err := decode(&x.lw, body)
	resp.Body, x.lw.b = x.lw.b, nil
	if err != nil {
		resp.Body = resp.Body[:0]
		if errors.Is(err, ErrBodyTooLarge) {
			return &bodyTooLargeError{limit: c.cfg.maxBody}
		}
		return fmt.Errorf("bad %s body: %w", enc, err)
	}
	return nil
}

func (c *Client) storeCookies(x *exchange, cl *call, now time.Time) {
	for _, v := range x.fr.Header.Cookies() {
		if c.jar == nil {
			c.jar = &cookieJar{}
		}
		c.jar.set(string(v), cl.fullPath(), now)
	}
}

// incompleteError is a response cut short by the server closing.
type incompleteError struct{ n int64 }

func (e *incompleteError) Error() string {
	return "httpc: server closed the connection mid-response after " + strconv.FormatInt(e.n, 10) + " bytes"
}

func (e *incompleteError) Is(target error) bool { return target == ErrIncompleteResponse }

// exchange is the per-request working set, pooled: buffers and the
// fasthttp response used while one request is in flight.
type exchange struct {
	rd      countingReader
	wr      errWriter
	br      *bufio.Reader
	bw      *bufio.Writer
	fr      fasthttp.Response
	lw      limitWriter
	scratch [24]byte
}

var exchangePool = sync.Pool{New: func() any {
	x := &exchange{}
	x.br = bufio.NewReaderSize(&x.rd, readBufferSize)
	x.bw = bufio.NewWriterSize(&x.wr, 4096)
	return x
}}

func (x *exchange) release() {
	x.br.Reset(&x.rd)
	x.bw.Reset(&x.wr)
	x.rd = countingReader{}
	x.wr = errWriter{}
	x.fr.Reset()
	x.lw = limitWriter{}
	exchangePool.Put(x)
}

// countingReader reads from a connection, counting bytes and keeping the
// first error, which fasthttp would otherwise turn into a bare io.EOF.
type countingReader struct {
	conn net.Conn
	n    int64
	err  error
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.conn.Read(p)
	r.n += int64(n)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// errWriter writes to a connection, keeping the first error.
type errWriter struct {
	conn net.Conn
	err  error
}

func (w *errWriter) Write(p []byte) (int, error) {
	n, err := w.conn.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// limitWriter appends to b, failing beyond max bytes (0: no limit).
type limitWriter struct {
	b   []byte
	max int
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.max > 0 && len(w.b)+len(p) > w.max {
		return 0, ErrBodyTooLarge
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// ctxErr is ctx.Err(), but also reports an expired deadline that the
// context's timer has not marked yet: the connection deadline, set from
// the same instant, can fire first, and a caller looping until ctx is done
// must not see a burst of timeouts that are really its own deadline.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
