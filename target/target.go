// Package target is the built-in HTTP target server of `cicada target`: a
// small, fast server to point load tests at, which holds many idle
// keep-alive connections cheaply.
//
// Routes (any method unless said otherwise):
//
//	/status/<code>   answers with that status (100-599); 3xx redirect to /
//	/bytes/<n>       an n-byte body (0 to MaxObjectSize, 16 MiB): the throughput test's objects
//	/delay/<ms>      waits ms milliseconds (at most Options.MaxDelay), then serves the page
//	/_cicada/stats   the counters as JSON (not counted as a request)
//	/auth/login      POST {"user", "password"}: a token; /auth/* else needs it (401), see auth.go
//	/_cicada/stall?ms=N  every response paused for N ms from now (stall.go)
//	/ws              WebSocket echo (see WSPath); /ws/set-cookie?k=v sets cookie k=v
//	POST, PUT, PATCH any other path: the length of the request body, in decimal
//	anything else    the page (Options.Body); HEAD gets its headers only
//
// With Options.H2C the same routes are served over h2c (HTTP/2 with prior
// knowledge) on the same port.
//
// With Options.TLS they are served over HTTPS instead (HTTP/1.1, tls.go);
// SelfSigned makes a throw-away certificate for a test that wants no files.
//
// The server is fasthttp's with ReduceMemoryUsage: an idle keep-alive
// connection keeps its goroutine but no read or write buffer.
//
// A failing accept (out of file descriptors: EMFILE, ENFILE) does not stop
// the server: it backs off (5 ms doubling to 1 s) and accepts again once
// connections close, as protocol/zmtp's accept loop does, so that a load
// test cannot kill its own target. Counters.AcceptErrors counts them.
//
// Dataplane (NewDataplane, `cicada target --dataplane`) is the other
// target: the page served by the userspace data plane's server stacks
// (dataplane/stack, one per core, run by dataplane/engine) over an
// AF_PACKET or AF_XDP link, after dataplane/ifcheck accepted the
// interface. It holds connections as table records, not file descriptors;
// see its doc for what it deliberately does not serve. LOCKS.md has its
// locks.
package target

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// DefaultBody is the default page: 128 bytes of HTML, the size of a tiny
// nginx page.
var DefaultBody = []byte("<!DOCTYPE html>\n<html>\n<head><title>cicada</title></head>\n" +
	"<body><h1>cicada target</h1><p>It works. Go ahead.</p></body>\n</html>\n")

// Defaults for zero Options fields.
const (
	DefaultListen      = "127.0.0.1:8080"
	DefaultContentType = "text/html"
	DefaultMaxDelay    = time.Minute
	// ShutdownTimeout bounds how long Run waits for in-flight requests
	// after its context is done.
	ShutdownTimeout = 5 * time.Second
)

// ErrClosed is returned by Run when the Server was already run or closed.
var ErrClosed = errors.New("target: server closed")

// Options configure a Server. The zero value works.
type Options struct {
	// Listen is the TCP address to listen on. If empty, DefaultListen.
	// Port 0 picks a free port (see Server.Addr).
	Listen string
	// Body is the page served on GET. If nil, DefaultBody. It must not be
	// modified after New.
	Body []byte
	// ContentType of the page. If empty, DefaultContentType.
	ContentType string
	// IdleTimeout closes keep-alive connections idle for longer. If zero,
	// idle connections are kept until the client closes them.
	IdleTimeout time.Duration
	// MaxDelay caps /delay/<ms>. If zero, DefaultMaxDelay.
	MaxDelay time.Duration
	// H2C also serves HTTP/2 cleartext with prior knowledge (h2c) on the
	// same port: connections that open with the HTTP/2 preface get the
	// same routes over HTTP/2 (see h2c.go).
	H2C bool
	// StallAfter and StallFor script one stall (stall.go): every request
	// is held from StallAfter after New for StallFor. Zero StallFor: none.
	StallAfter, StallFor time.Duration
	// TLS, if set, serves HTTPS instead of plain HTTP (tls.go; see
	// ServerTLS and SelfSigned). Not with H2C.
	TLS *tls.Config
	// Logger receives a warning when accepting fails (at most one per
	// 10 s, with the count of failures) and a note when it works again.
	// If nil, nothing is logged.
	Logger *slog.Logger
}

// Counters are the server's counters at one moment.
type Counters struct {
	Requests            int64 `json:"requests"`             // requests answered, /_cicada/stats excluded
	ConnectionsAccepted int64 `json:"connections_accepted"` // connections accepted since New
	ConnectionsOpen     int64 `json:"connections_open"`     // connections open now
	AcceptErrors        int64 `json:"accept_errors"`        // failed accepts, retried (EMFILE...)
}

// Server is a running target server. Its methods are safe for concurrent
// use.
type Server struct {
	opts  Options
	ln    net.Listener
	srv   *fasthttp.Server
	page  []byte
	ctype []byte
	start time.Time

	requests     atomic.Int64
	accepted     atomic.Int64
	open         atomic.Int64
	acceptErrors atomic.Int64

	stallMu               sync.Mutex
	stallFrom, stallUntil int64 // the stall window, unix ns (stall.go)

	done      chan struct{} // closed when shutting down; wakes /delay
	closeOnce sync.Once
	running   atomic.Bool
}

// New listens on opts.Listen and returns the Server; Run serves.
func New(opts Options) (*Server, error) {
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if opts.Body == nil {
		opts.Body = DefaultBody
	}
	if opts.ContentType == "" {
		opts.ContentType = DefaultContentType
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.TLS != nil && opts.H2C {
		return nil, fmt.Errorf("%w: h2c is HTTP/2 in cleartext, not over TLS", ErrTLS)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("target: listen %s: %w", opts.Listen, err)
	}
	s := &Server{opts: opts, ln: ln, page: opts.Body, ctype: []byte(opts.ContentType), start: time.Now(), done: make(chan struct{})}
	if opts.StallFor > 0 {
		from := s.start.Add(opts.StallAfter).UnixNano()
		s.setStall(from, from+int64(opts.StallFor))
	}
	s.srv = &fasthttp.Server{
		Handler:                       s.handle,
		Name:                          "cicada-target",
		ReduceMemoryUsage:             true,
		IdleTimeout:                   opts.IdleTimeout,
		CloseOnShutdown:               true,
		DisablePreParseMultipartForm:  true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: false,
		ConnState:                     s.connState,
	}
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL returns "http://" + Addr() ("https://" with Options.TLS).
func (s *Server) URL() string {
	if s.opts.TLS != nil {
		return "https://" + s.ln.Addr().String()
	}
	return "http://" + s.ln.Addr().String()
}

// Counters returns the current counters.
func (s *Server) Counters() Counters {
	return Counters{
		Requests:            s.requests.Load(),
		ConnectionsAccepted: s.accepted.Load(),
		ConnectionsOpen:     s.open.Load(),
		AcceptErrors:        s.acceptErrors.Load(),
	}
}

// Run serves until ctx is done, then stops accepting, closes idle
// connections and waits up to ShutdownTimeout for requests in flight
// (/delay is cut short). It returns nil after such a shutdown, the
// serving error if serving fails, or ErrClosed if the Server was already
// run or closed.
func (s *Server) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrClosed
	}
	select {
	case <-s.done:
		return ErrClosed
	default:
	}
	errc := make(chan error, 1)
	var ln net.Listener = &retryListener{Listener: s.ln, s: s}
	if s.opts.TLS != nil {
		ln = tls.NewListener(ln, s.opts.TLS)
	}
	if s.opts.H2C {
		m := newH2CMux(s, ln)
		go m.run()
		ln = m.h1
	}
	go func() { errc <- s.srv.Serve(ln) }()
	select {
	case err := <-errc:
		select {
		case <-s.done:
			return nil // Close was called
		default:
		}
		s.closeOnce.Do(func() { close(s.done) })
		if err == nil || ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("target: serve: %w", err)
	case <-ctx.Done():
	}
	s.closeOnce.Do(func() { close(s.done) })
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := s.srv.ShutdownWithContext(sctx)
	// Shutdown does nothing if Serve has not registered the listener yet;
	// closing it ourselves makes Serve return either way.
	s.ln.Close()
	<-errc
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("target: shutdown: %w", err)
	}
	return nil
}

// Close stops the server at once: it closes the listener and all
// connections (a running Run returns nil). It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	s.running.Store(true) // a later Run returns ErrClosed
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := s.srv.ShutdownWithContext(ctx)
	s.ln.Close()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("target: close: %w", err)
	}
	return nil
}

// acceptLogInterval is the least time between two accept-failure warnings.
const acceptLogInterval = 10 * time.Second

// retryListener retries a failed Accept with backoff instead of returning
// the error, which would end fasthttp's Serve for good; only a closed
// listener or a shutdown ends it. fasthttp calls Accept from one goroutine,
// so the log state needs no lock.
type retryListener struct {
	net.Listener
	s *Server

	lastWarn time.Time // when the last warning was logged
	unlogged int64     // failures since then
}

// Accept returns the next connection, waiting out accept errors. It warns
// at most once per acceptLogInterval, and notes the recovery after a
// warning.
func (l *retryListener) Accept() (net.Conn, error) {
	var delay time.Duration
	warned := false
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			if warned {
				l.s.opts.Logger.Info("target: accepting again")
			}
			return c, nil
		}
		select {
		case <-l.s.done:
			return nil, err
		default:
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		l.s.acceptErrors.Add(1)
		l.unlogged++
		if now := time.Now(); now.Sub(l.lastWarn) >= acceptLogInterval {
			l.s.opts.Logger.Warn("target: accept failed, retrying with backoff", "err", err, "failed_accepts", l.unlogged)
			l.lastWarn, l.unlogged, warned = now, 0, true
		}
		delay = min(max(2*delay, 5*time.Millisecond), time.Second)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-l.s.done:
			t.Stop()
			return nil, err
		}
	}
}

func (s *Server) connState(_ net.Conn, st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateNew:
		s.accepted.Add(1)
		s.open.Add(1)
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		s.open.Add(-1)
	}
}

var (
	prefixStatus = []byte("/status/")
	prefixDelay  = []byte("/delay/")
	pathStats    = []byte("/_cicada/stats")
)

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	path := ctx.Path()
	switch {
	case string(path) == string(pathStats):
		s.serveStats(ctx)
		return
	case string(path) == string(pathStall):
		s.serveStall(ctx)
		return
	}
	s.stallWait()
	switch {
	case hasPrefix(path, prefixWS):
		s.requests.Add(1)
		s.serveWSPaths(ctx)
		return
	case hasPrefix(path, prefixStatus):
		s.requests.Add(1)
		code, ok := atoiPath(path[len(prefixStatus):])
		if !ok || code < 100 || code > 599 {
			badRequest(ctx, "status code must be 100-599")
			return
		}
		ctx.SetStatusCode(code)
		if code >= 300 && code < 400 {
			ctx.Response.Header.Set("Location", "/")
		}
		if code >= 200 && code != 204 && code != 304 {
			ctx.SetContentType("text/plain; charset=utf-8")
			ctx.Response.SetBodyString(strconv.Itoa(code) + " " + fasthttp.StatusMessage(code) + "\n")
		}
		return
	case hasPrefix(path, prefixBytes):
		s.serveBytes(ctx, path[len(prefixBytes):])
		return
	case hasPrefix(path, prefixDelay):
		s.requests.Add(1)
		ms, ok := atoiPath(path[len(prefixDelay):])
		if !ok {
			badRequest(ctx, "delay must be a number of milliseconds")
			return
		}
		d := time.Duration(ms) * time.Millisecond
		if d > s.opts.MaxDelay || d < 0 {
			d = s.opts.MaxDelay
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-s.done:
			t.Stop()
		}
		s.servePage(ctx)
		return
	}
	s.requests.Add(1)
	if hasPrefix(path, prefixAuth) {
		s.serveAuth(ctx) // auth.go
		return
	}
	if ctx.IsPost() || ctx.IsPut() || ctx.IsPatch() {
		ctx.SetContentType("text/plain; charset=utf-8")
		var b [24]byte
		body := strconv.AppendInt(b[:0], int64(len(ctx.PostBody())), 10)
		ctx.Response.SetBody(append(body, '\n'))
		return
	}
	s.servePage(ctx)
}

func (s *Server) servePage(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetContentTypeBytes(s.ctype)
	ctx.Response.SetBodyRaw(s.page)
}

func (s *Server) serveStats(ctx *fasthttp.RequestCtx) {
	type stats struct {
		Counters
		UptimeSeconds float64 `json:"uptime_seconds"`
	}
	b, _ := json.Marshal(stats{Counters: s.Counters(), UptimeSeconds: time.Since(s.start).Seconds()})
	ctx.SetContentType("application/json")
	ctx.Response.SetBody(append(b, '\n'))
}

func badRequest(ctx *fasthttp.RequestCtx, msg string) {
	ctx.SetStatusCode(fasthttp.StatusBadRequest)
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.Response.SetBodyString(msg + "\n")
}

func hasPrefix(b, prefix []byte) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == string(prefix)
}

// atoiPath parses a small non-negative decimal path segment.
func atoiPath(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
