package probe

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/diag"
)

// ErrOptions is wrapped for options that cannot be honoured.
var ErrOptions = errors.New("probe: invalid options")

// Defaults of Options' zero values.
const (
	DefaultDuration       = 2 * time.Second
	DefaultConnectTimeout = 3 * time.Second
	DefaultTimeout        = 5 * time.Second
	DefaultConns          = 64
	DefaultWindow         = 256
	DefaultMaxInFlight    = 20000
	DefaultCPUBusy        = 0.9
	DefaultLagTolerance   = 50 * time.Millisecond
	DefaultLateRatio      = 0.05
	// MaxSamples bounds the latencies a trial keeps (the rest are counted,
	// not sampled into the percentiles).
	MaxSamples = 1 << 20
)

// Options are a prober's; the zero value of every field but Addr works.
type Options struct {
	// Addr is the target's host:port (an IP address: the generator's
	// port-range check is per destination address).
	Addr string
	// Host is the HTTP Host header; if empty, Addr.
	Host string
	// Path is the request path; if empty, "/".
	Path string
	// HTTP makes CPS and Concurrent do one HTTP GET on each new
	// connection (RFC 9411's TCP/HTTP tests); false: bare TCP.
	HTTP bool
	// Duration is a rate trial's length; if zero, DefaultDuration.
	Duration time.Duration
	// ConnectTimeout bounds a connect (SYN to established); if zero,
	// DefaultConnectTimeout. A device that drops SYNs fails connects
	// after it.
	ConnectTimeout time.Duration
	// Timeout bounds one transaction or close; if zero, DefaultTimeout.
	Timeout time.Duration
	// Conns is how many keep-alive connections TPS and Throughput use; if
	// zero, DefaultConns.
	Conns int
	// Window bounds the connects in flight while Concurrent and Teardown
	// open their connections; if zero, DefaultWindow.
	Window int
	// MaxInFlight bounds CPS's connections in flight; if zero,
	// DefaultMaxInFlight (and never more than the open-files limit allows).
	MaxInFlight int
	// Hold is how long Concurrent holds its connections before the
	// second round.
	Hold time.Duration
	// CPUBusy is the fraction of the process's cores (GOMAXPROCS) above
	// which a trial is generator-limited; if zero, DefaultCPUBusy; 1 or
	// more: never.
	CPUBusy float64
	// LagTolerance and LateRatio: a trial whose pacer issued more than
	// LateRatio of its arrivals later than LagTolerance is
	// generator-limited; if zero, the defaults.
	LagTolerance time.Duration
	LateRatio    float64
	// TLS, if set, makes every connection HTTPS (tls.go): a handshake
	// after the connect, HTTP inside it (CPS and Concurrent always send
	// their GET). Its ServerName must be set unless InsecureSkipVerify
	// is; a ClientSessionCache in it resumes sessions.
	TLS *tls.Config
	// Mix, if set, makes TPS and Throughput fetch /bytes/N objects whose
	// sizes it draws per arrival (mix.go) instead of Path.
	Mix Mix
	// Limits reads the generator's limits; if nil, diag.ReadLimits (tests
	// inject their own).
	Limits func() (diag.Limits, error)
	// KeepSamples sets each Trial's Samples (a cluster worker ships them
	// as a histogram).
	KeepSamples bool
	// Held, if set, is called by Concurrent once its connections are open,
	// before Hold and the second round (a cluster's barrier: every worker
	// holds its share before any second round). An error ends the trial:
	// the connections are reset and Concurrent returns the error.
	Held func(ctx context.Context) error
}

// Prober runs trials against one target.
type Prober struct {
	o    Options
	dst  netip.AddrPort
	req  []byte
	reqC []byte // with Connection: close
	// mixReqs are the GETs of Options.Mix's sizes, in its order.
	mixReqs [][]byte
}

// New checks o and returns a Prober.
func New(o Options) (*Prober, error) {
	ap, err := netip.ParseAddrPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: address %q must be IP:port: %w", ErrOptions, o.Addr, err)
	}
	if o.Path == "" {
		o.Path = "/"
	}
	if !strings.HasPrefix(o.Path, "/") || strings.ContainsFunc(o.Path, isCTLOrSpace) {
		return nil, fmt.Errorf("%w: path %q must start with / and hold no space, line break or control character", ErrOptions, o.Path)
	}
	if o.Host == "" {
		o.Host = o.Addr
	}
	if strings.ContainsFunc(o.Host, isCTLOrSpace) {
		return nil, fmt.Errorf("%w: host %q holds a space, line break or control character", ErrOptions, o.Host)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"duration", o.Duration}, {"connect timeout", o.ConnectTimeout}, {"timeout", o.Timeout}, {"hold", o.Hold}, {"lag tolerance", o.LagTolerance}} {
		if d.v < 0 {
			return nil, fmt.Errorf("%w: %s %v is negative", ErrOptions, d.name, d.v)
		}
	}
	if math.IsNaN(o.CPUBusy) || math.IsNaN(o.LateRatio) {
		return nil, fmt.Errorf("%w: CPU busy %v and late ratio %v must be numbers", ErrOptions, o.CPUBusy, o.LateRatio)
	}
	if o.Conns < 0 || o.Window < 0 || o.MaxInFlight < 0 || o.CPUBusy < 0 || o.LateRatio < 0 || o.LateRatio >= 1 {
		return nil, fmt.Errorf("%w: conns, window, max in flight, CPU busy and late ratio must not be negative (late ratio below 1)", ErrOptions)
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Duration, DefaultDuration)
	def(&o.ConnectTimeout, DefaultConnectTimeout)
	def(&o.Timeout, DefaultTimeout)
	def(&o.LagTolerance, DefaultLagTolerance)
	if o.Conns == 0 {
		o.Conns = DefaultConns
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.CPUBusy == 0 {
		o.CPUBusy = DefaultCPUBusy
	}
	if o.LateRatio == 0 {
		o.LateRatio = DefaultLateRatio
	}
	if o.Limits == nil {
		o.Limits = diag.ReadLimits
	}
	if o.TLS != nil {
		o.HTTP = true
		if o.TLS.ServerName == "" && !o.TLS.InsecureSkipVerify {
			return nil, fmt.Errorf("%w: TLS needs a server name to verify (or InsecureSkipVerify)", ErrOptions)
		}
	}
	if err := o.Mix.check(); err != nil {
		return nil, err
	}
	p := &Prober{o: o, dst: ap}
	p.req = []byte("GET " + o.Path + " HTTP/1.1\r\nHost: " + o.Host + "\r\nUser-Agent: cicada-bench\r\n\r\n")
	p.reqC = []byte("GET " + o.Path + " HTTP/1.1\r\nHost: " + o.Host + "\r\nUser-Agent: cicada-bench\r\nConnection: close\r\n\r\n")
	for _, e := range o.Mix {
		p.mixReqs = append(p.mixReqs, []byte("GET /bytes/"+strconv.FormatInt(e.Size, 10)+" HTTP/1.1\r\nHost: "+o.Host+"\r\nUser-Agent: cicada-bench\r\n\r\n"))
	}
	return p, nil
}

// isCTLOrSpace: a space or an ASCII control character, which the request
// line and Host header must not hold (CR and LF would inject headers).
func isCTLOrSpace(r rune) bool { return r <= ' ' || r == 0x7f }

// Options returns the options with their defaults filled in.
func (p *Prober) Options() Options { return p.o }

// recorder collects one trial's outcomes; safe for concurrent use.
type recorder struct {
	mu        sync.Mutex
	lat       []time.Duration
	attempted int64
	failed    int64
	bytes     int64
	errs      map[string]int64
	generator string
	tls       tlsTally
	mix       []capacity.MixCount // per Options.Mix entry
}

func (r *recorder) ok(d time.Duration, n int64) {
	r.mu.Lock()
	r.attempted++
	r.bytes += n
	if len(r.lat) < MaxSamples {
		r.lat = append(r.lat, d)
	}
	r.mu.Unlock()
}

func (r *recorder) fail(err error) {
	kind, gen := Classify(err)
	r.mu.Lock()
	r.attempted++
	r.failed++
	if r.errs == nil {
		r.errs = map[string]int64{}
	}
	r.errs[kind]++
	if gen != "" && r.generator == "" {
		r.generator = gen
	}
	r.mu.Unlock()
}

// okMix and failMix record a transaction of Options.Mix's entry k (-1: no
// mix).
func (r *recorder) okMix(k int, d time.Duration, n int64) {
	r.ok(d, n)
	if k >= 0 {
		r.mu.Lock()
		r.mix[k].Count++
		r.mix[k].Bytes += n
		r.mu.Unlock()
	}
}

func (r *recorder) failMix(k int, err error) {
	r.fail(err)
	if k >= 0 {
		r.mu.Lock()
		r.mix[k].Failed++
		r.mu.Unlock()
	}
}

func (r *recorder) limit(why string) {
	r.mu.Lock()
	if r.generator == "" {
		r.generator = why
	}
	r.mu.Unlock()
}

// trial fills a capacity.Trial from the recorder.
func (p *Prober) trial(r *recorder, d time.Duration) capacity.Trial {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.Sort(r.lat)
	t := capacity.Trial{Duration: d, Attempted: r.attempted, Failed: r.failed, Bytes: r.bytes, Errors: r.errs, GeneratorLimit: r.generator}
	if r.tls.set {
		t.TLS = r.tls.result()
	}
	if r.mix != nil {
		t.Mix = slices.Clone(r.mix)
	}
	if p.o.KeepSamples {
		t.Samples = r.lat
	}
	t.P50, t.P95, t.P99 = pct(r.lat, 50), pct(r.lat, 95), pct(r.lat, 99)
	if n := len(r.lat); n > 0 {
		t.Max = r.lat[n-1]
	}
	return t
}

// pct is the nearest-rank percentile of sorted.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// Classify names a failure's kind and, when the generator caused it, the
// generator limit it shows ("" for the device's failures).
func Classify(err error) (kind, generator string) {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.EMFILE):
		return "open-files", "open files: connect failed with EMFILE (raise ulimit -n)"
	case errors.Is(err, syscall.ENFILE):
		return "system-files", "system files: connect failed with ENFILE (fs.file-max)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "ports", "ports: connect failed with EADDRNOTAVAIL (the port range towards the target is used up)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused", ""
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset", ""
	case errors.Is(err, errNotOpened):
		return "not-opened", ""
	case errors.Is(err, errNoClose):
		return "no-close", ""
	case errors.Is(err, errStatus):
		return "http-status", ""
	case errors.Is(err, errTLS):
		return "tls", ""
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed", ""
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout", ""
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable", ""
	}
	return "other", ""
}

var errStatus = errors.New("probe: HTTP status not 2xx")

// watch measures a trial's CPU use and checks the generator's limits.
type watch struct {
	p       *Prober
	start   time.Time
	cpu     time.Duration
	cpuOK   bool
	delay   time.Duration
	delayOK bool
}

func (p *Prober) startWatch() *watch {
	w := &watch{p: p, start: time.Now()}
	w.cpu, w.cpuOK = cpuTime()
	w.delay, w.delayOK = runDelay()
	return w
}

// cpuLimit returns a generator strain when the process was CPU-bound:
// its CPU time over the trial was more than CPUBusy of its cores
// (saturated), or its CPU time and its threads' wait for a core together
// were (starved: the host's other load took the cores it asked for).
func (w *watch) cpuLimit() string {
	now, ok := cpuTime()
	wall := time.Since(w.start)
	if !ok || !w.cpuOK || wall <= 0 || w.p.o.CPUBusy >= 1 {
		return ""
	}
	cores := runtime.GOMAXPROCS(0)
	busy := float64(now-w.cpu) / float64(wall) / float64(cores)
	if busy > w.p.o.CPUBusy {
		return fmt.Sprintf("CPU saturated: %.0f%% of %d cores (over %.0f%%)", busy*100, cores, w.p.o.CPUBusy*100)
	}
	if d, ok := runDelay(); ok && w.delayOK {
		wait := float64(d-w.delay) / float64(wall) / float64(cores)
		if busy+wait > w.p.o.CPUBusy {
			return fmt.Sprintf("CPU starved: used %.0f%% of %d cores and waited %.0f%% for one (other load on the host; over %.0f%% together)",
				busy*100, cores, wait*100, w.p.o.CPUBusy*100)
		}
	}
	return ""
}

// preflight checks the generator's limits for conns connections to the
// target, as diag does for a worker; a limit it shows is returned.
func (p *Prober) preflight(conns int) string {
	l, _ := p.o.Limits()
	tw, _ := diag.TimeWait([]netip.AddrPort{p.dst})
	for _, w := range diag.Check(l, diag.Plan{Users: conns, PerDestination: map[netip.AddrPort]int{p.dst: conns}}, tw) {
		switch w.Kind {
		case diag.KindOpenFiles, diag.KindSystemFiles, diag.KindPorts:
			return w.Kind + ": " + w.Message
		}
	}
	return ""
}

// fdRoom is how many more descriptors the process may open (-1: unknown).
func (p *Prober) fdRoom() int {
	l, err := p.o.Limits()
	if err != nil || l.OpenFiles < 0 || l.FilesInUse < 0 {
		return -1
	}
	return int(l.OpenFiles - l.FilesInUse)
}

func (p *Prober) dial(ctx context.Context) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: p.o.ConnectTimeout}
	c, err := d.DialContext(ctx, "tcp4", p.o.Addr)
	if err != nil {
		return nil, fmt.Errorf("probe: connect: %w", err)
	}
	return c.(*net.TCPConn), nil
}

// httpConn is one keep-alive connection: its TCP socket (for linger and
// half-close), what HTTP goes over (the socket, or TLS over it) and its
// reader.
type httpConn struct {
	c  *net.TCPConn
	rw net.Conn
	br *bufio.Reader
}

// do sends req and reads one response, returning the body's length; a
// non-2xx status is an error wrapping errStatus.
func (p *Prober) do(ctx context.Context, h *httpConn, req []byte) (int64, error) {
	stop, err := p.arm(ctx, h.rw)
	if err != nil {
		return 0, err
	}
	defer stop()
	if _, err := h.rw.Write(req); err != nil {
		return 0, fmt.Errorf("probe: request: %w", err)
	}
	resp, err := http.ReadResponse(h.br, nil)
	if err != nil {
		return 0, fmt.Errorf("probe: response: %w", err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return n, fmt.Errorf("probe: body: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return n, fmt.Errorf("%w: %d", errStatus, resp.StatusCode)
	}
	return n, nil
}

func newHTTPConn(c *net.TCPConn, rw net.Conn) *httpConn {
	return &httpConn{c: c, rw: rw, br: bufio.NewReaderSize(rw, 16<<10)}
}
