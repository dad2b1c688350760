package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/stats"
)

// Defaults for Options fields left zero.
const (
	DefaultAddr            = ":8089"
	DefaultHistoryInterval = 2 * time.Second
	DefaultHistorySize     = 7200
	DefaultStatsCacheTTL   = 2 * time.Second
	DefaultShutdownTimeout = 5 * time.Second
	// DefaultReadTimeout bounds reading one request, headers and body:
	// Locust's forms are a few hundred bytes.
	DefaultReadTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds a response from the end of its request
	// to its last byte (GET /stop waits for the test to stop first, see
	// Options.WriteTimeout).
	DefaultWriteTimeout = time.Minute
	// DefaultMaxConns caps open web connections: a browser opens about
	// six, so 256 serve dozens of dashboards, while slow or idle clients
	// cannot take more than 256 of the master's file descriptors, which
	// it needs for its workers (one each).
	DefaultMaxConns = 256
	// readHeaderTimeout and idleTimeout bound the request headers and an
	// idle keep-alive connection.
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
)

// Options configures a Server. The zero value serves plain HTTP on :8089
// without authentication.
type Options struct {
	// Addr is the listen address, host:port (--web-host, --web-port). If
	// empty, DefaultAddr is used.
	Addr string
	// Auth is "user:pass" for HTTP Basic authentication on every route
	// except static assets and CORS preflights (--web-auth). Empty: none.
	Auth string
	// TLSCert and TLSKey are PEM files; HTTPS is served when both are set
	// (--tls-cert, --tls-key). Setting only one is refused (ErrTLSPair).
	TLSCert, TLSKey string
	// Logger receives server errors and Locust's info lines. If nil,
	// logs are discarded.
	Logger *slog.Logger
	// Version is shown in the dashboard footer and the report.
	Version string
	// ClassPicker shows the start form's choice of user classes
	// (--class-picker): the dashboard gets show_userclass_picker and
	// available_user_classes (Status.UserClasses, sorted) and sends the
	// ticked ones as user_classes, which StartRequest.UserClasses carries.
	ClassPicker bool
	// HistoryInterval is how often the chart history is sampled while a
	// test runs. If zero, DefaultHistoryInterval is used.
	HistoryInterval time.Duration
	// HistorySize bounds the number of history points; when full, every
	// second point is dropped and the sampling stride doubles, so a long
	// test keeps its whole time span at a coarser resolution. If zero,
	// DefaultHistorySize is used.
	HistorySize int
	// StatsCacheTTL is how long one /stats/requests body is shared by all
	// clients (Locust memoises it for 2 s). If zero, DefaultStatsCacheTTL
	// is used; negative disables the cache. Start, Stop and reset
	// invalidate it.
	StatsCacheTTL time.Duration
	// FullHistoryCSV is the path of the on-disk _stats_history.csv when the
	// master runs with --csv and --csv-full-history; it is served by
	// /stats/requests_full_history/csv. Empty: that route answers 404 as
	// Locust does.
	FullHistoryCSV string
	// ShutdownTimeout bounds the graceful shutdown in Run and Serve. If
	// zero, DefaultShutdownTimeout is used.
	ShutdownTimeout time.Duration
	// Format lays out the CSV downloads and the report's error texts; use
	// the master's, so downloads match its --csv files. The zero value is
	// what a Locust 2.12.1 master writes.
	Format stats.Format
	// Now is the clock. If nil, time.Now is used.
	Now func() time.Time
	// ReadTimeout bounds reading a request, headers and body, so that a
	// client sending its body slowly cannot hold a connection. If zero,
	// DefaultReadTimeout is used; negative: no limit.
	ReadTimeout time.Duration
	// WriteTimeout bounds a response, from the end of its request's
	// headers to its last byte, so that a client that does not read
	// cannot hold a connection. GET /stop is exempt while the runner
	// stops the test (Locust's /stop is synchronous); its reply then has
	// WriteTimeout. If zero, DefaultWriteTimeout is used; negative: no
	// limit.
	WriteTimeout time.Duration
	// MaxConns caps the open connections of Run and Serve (TLS or not);
	// at the cap, new connections wait in the kernel's accept queue until
	// one closes. If zero, DefaultMaxConns is used; negative: no cap.
	MaxConns int
}

// Server is Locust's web UI and HTTP API for a Runner, plus a Prometheus
// /metrics endpoint. Create it with New; serve it with Run or Serve, or
// mount Handler in another server. A Server is safe for concurrent use.
type Server struct {
	opts    Options
	runner  Runner
	log     *slog.Logger
	handler http.Handler
	history *History

	user, pass [32]byte // sha256 of the credentials
	authOn     bool
	authErr    error

	tlsOnce sync.Once
	tls     *tls.Config // nil: plain HTTP
	tlsErr  error

	cache statsCache

	wg      sync.WaitGroup // background goroutines (timers, sampler)
	ctx     context.Context
	cancel  context.CancelFunc
	started atomic.Bool

	methods map[string]string // path -> Allow header, written only by routes

	timersMu sync.Mutex
	timers   map[*time.Timer]struct{}
}

// New returns a Server for runner. It does not listen; see Run and Serve.
func New(opts Options, runner Runner) *Server {
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.HistoryInterval <= 0 {
		opts.HistoryInterval = DefaultHistoryInterval
	}
	if opts.HistorySize <= 0 {
		opts.HistorySize = DefaultHistorySize
	}
	if opts.StatsCacheTTL == 0 {
		opts.StatsCacheTTL = DefaultStatsCacheTTL
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = DefaultMaxConns
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		opts:    opts,
		runner:  runner,
		log:     log,
		history: NewHistory(opts.HistorySize),
		timers:  make(map[*time.Timer]struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if opts.Auth != "" {
		user, pass, ok := strings.Cut(opts.Auth, ":")
		if !ok || strings.Contains(pass, ":") {
			s.authErr = ErrBadAuth
		}
		s.user, s.pass = sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
		s.authOn = true
	}
	s.handler = s.routes()
	return s
}

// Handler returns the server's HTTP handler (all routes, authentication
// and CORS), for tests or for mounting in another server.
func (s *Server) Handler() http.Handler { return s.handler }

// History returns the chart history the server samples while it runs.
func (s *Server) History() *History { return s.history }

// Listen checks the options that can make the server fail to start
// (credentials, the TLS certificate and key) and listens on Options.Addr,
// so that a caller learns at once, before serving, that the web UI cannot
// start. Hand the listener to Serve.
func (s *Server) Listen() (net.Listener, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	return ln, nil
}

// Run listens on Options.Addr and serves until ctx is done, then shuts down
// gracefully (waiting up to Options.ShutdownTimeout for open requests). It
// returns nil after a shutdown caused by ctx.
func (s *Server) Run(ctx context.Context) error {
	ln, err := s.Listen()
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// check returns the first reason the options cannot be served: bad
// credentials, half a TLS pair, or a certificate that does not load.
func (s *Server) check() error {
	if s.authErr != nil {
		return s.authErr
	}
	_, err := s.tlsConfig()
	return err
}

// tlsConfig loads the TLS certificate once; it returns nil without error
// when TLS is not configured.
func (s *Server) tlsConfig() (*tls.Config, error) {
	s.tlsOnce.Do(func() {
		cert, key := s.opts.TLSCert, s.opts.TLSKey
		switch {
		case cert == "" && key == "":
		case cert == "" || key == "":
			s.tlsErr = ErrTLSPair
		default:
			c, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				s.tlsErr = fmt.Errorf("web: tls: %w", err)
				return
			}
			s.tls = &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
		}
	})
	return s.tls, s.tlsErr
}

// Serve serves on ln until ctx is done, like Run. It takes ownership of ln.
// It serves TLS when Options.TLSCert and TLSKey are both set. A Server can
// be served once; later calls return ErrClosed.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.check(); err != nil {
		ln.Close()
		return err
	}
	if !s.started.CompareAndSwap(false, true) {
		ln.Close()
		return ErrClosed
	}
	if s.opts.MaxConns > 0 {
		ln = newLimitListener(ln, s.opts.MaxConns)
	}
	if tc, _ := s.tlsConfig(); tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       max(s.opts.ReadTimeout, 0),
		WriteTimeout:      max(s.opts.WriteTimeout, 0),
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.history.Run(s.ctx, s.runner, s.opts.HistoryInterval, s.opts.Now)
	}()

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	shutErr := hs.Shutdown(sctx)
	cancel()
	if shutErr != nil {
		hs.Close()
	}
	if err == nil {
		err = <-errc
	}
	s.close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	return nil
}

// close stops the background goroutines and pending run-time timers and
// waits for them.
func (s *Server) close() {
	s.cancel()
	s.timersMu.Lock()
	for t := range s.timers {
		if t.Stop() {
			s.wg.Done()
		}
		delete(s.timers, t)
	}
	s.timersMu.Unlock()
	s.wg.Wait()
}

// afterFunc runs f after d on a tracked timer that close cancels.
func (s *Server) afterFunc(d time.Duration, f func()) {
	s.timersMu.Lock()
	defer s.timersMu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	s.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		defer s.wg.Done()
		s.timersMu.Lock()
		delete(s.timers, t)
		s.timersMu.Unlock()
		f()
	})
	s.timers[t] = struct{}{}
}

// authorized reports whether r carries the configured credentials. Both
// halves are compared in constant time over their SHA-256 digests, so
// neither content nor length leaks through timing.
func (s *Server) authorized(r *http.Request) bool {
	if !s.authOn {
		return true
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	u, p := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
	return subtle.ConstantTimeCompare(u[:], s.user[:])&subtle.ConstantTimeCompare(p[:], s.pass[:]) == 1
}

// wrap adds what every Locust route has: CORS (flask-cors: the header on
// every response, preflights answered without credentials) and Basic auth.
func (s *Server) wrap(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		setSecurityHeaders(h)
		if r.Method == http.MethodOptions {
			allow, ok := s.methods[r.URL.Path]
			if !ok {
				allow = "GET, HEAD, OPTIONS"
			}
			h.Set("Allow", allow)
			if m := r.Header.Get("Access-Control-Request-Method"); m != "" {
				h.Set("Access-Control-Allow-Methods", "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT")
				if rh := r.Header.Get("Access-Control-Request-Headers"); rh != "" {
					h.Set("Access-Control-Allow-Headers", rh)
				}
			}
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Content-Length", "0")
			w.WriteHeader(http.StatusOK)
			return
		}
		if !isPublic(r.URL.Path) && !s.authorized(r) {
			h.Set("WWW-Authenticate", `Basic realm=""`)
			h.Set("Content-Length", "0")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// isPublic reports whether path is served without credentials (Locust
// 2.12.1 leaves /static unauthenticated; cicada's assets are the same).
func isPublic(path string) bool {
	return strings.HasPrefix(path, "/assets/") || strings.HasPrefix(path, "/static/")
}

// routes builds the route table (Locust 2.12.1 locust/web.py, the routes of
// WebUI.__init__).
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	s.methods = make(map[string]string)
	handle := func(method, path string, h http.Handler) {
		mux.Handle(method+" "+path, h)
		if method == http.MethodGet {
			s.methods[path] = "GET, HEAD, OPTIONS"
		} else {
			s.methods[path] = "OPTIONS, " + method
		}
	}
	get := func(path string, h http.HandlerFunc) { handle(http.MethodGet, path, h) }
	mux.HandleFunc("GET /{$}", s.handleIndex)
	// The state-changing routes refuse cross-site browser requests; /stop
	// and /stats/reset stay GET, as in Locust, for its scripts.
	handle(http.MethodPost, "/swarm", sameOrigin(s.handleSwarm))
	get("/stop", sameOrigin(s.handleStop))
	get("/stats/reset", sameOrigin(s.handleReset))
	get("/stats/requests", s.handleRequests)
	get("/stats/requests/csv", s.handleRequestsCSV)
	get("/stats/failures/csv", s.handleFailuresCSV)
	get("/stats/phases/csv", s.handlePhasesCSV) // phases.go: cicada's per-phase timings
	get("/stats/requests_full_history/csv", s.handleFullHistoryCSV)
	get("/stats/report", s.handleReport)
	get("/stats/history", s.handleHistory)
	get("/exceptions", s.handleExceptions)
	get("/exceptions/csv", s.handleExceptionsCSV)
	get("/tasks", s.handleTasks)
	get("/logs", s.handleLogs)
	get("/worker-count", s.handleWorkerCount)
	get("/metrics", s.handleMetrics)
	get("/thresholds", s.handleThresholds)
	get("/thresholds/live", s.handleLiveThresholds) // thresholdslive.go
	mux.Handle("GET /assets/", s.assetHandler("/assets/"))
	mux.Handle("GET /static/", s.assetHandler("/static/"))
	mux.HandleFunc("/", s.handleNotFound)
	return s.wrap(mux)
}

// notFoundPage is the body of a 404, in the form of Flask's (Werkzeug) page.
const notFoundPage = `<!doctype html>
<html lang=en>
<title>404 Not Found</title>
<h1>Not Found</h1>
<p>The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.</p>
`

// methodNotAllowedPage is the body of a 405, in the form of Flask's page.
const methodNotAllowedPage = `<!doctype html>
<html lang=en>
<title>405 Method Not Allowed</title>
<h1>Method Not Allowed</h1>
<p>The method is not allowed for the requested URL.</p>
`

// handleNotFound answers paths without a route (404) and known paths with
// the wrong method (405 with Allow, as Flask does).
func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	if allow, ok := s.methods[r.URL.Path]; ok {
		w.Header().Set("Allow", allow)
		writeText(w, http.StatusMethodNotAllowed, methodNotAllowedPage)
		return
	}
	writeText(w, http.StatusNotFound, notFoundPage)
}

// writeJSON writes a JSON body built by jw.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// writeText writes a Flask-style text response (text/html; charset=utf-8).
func writeText(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}
