package users

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// plan is a scenario compiled for the data plane, without its host: the
// requests become bytes once the host is known (buildProgram).
type plan struct {
	classes  []planClass
	requests []planRequest
	headers  [][2]string   // default and Options.Headers, rendered once
	timeout  time.Duration // the HTTP timeout: the stack's IdleTimeout
}

type planClass struct {
	name       string
	host       string // the class's own host ("" for the scenario's)
	onStart    []int
	tasks      []planTask
	sequential bool
	wait       worker.WaitSpec // a zero Kind: no wait
}

type planTask struct {
	weight   int
	requests []int
}

type planRequest struct {
	where   string // class/task/request, for errors
	method  string
	name    string // stats name
	path    string
	headers [][2]string
	host    string // a Host header of the request's own, or ""
	body    []byte
	accept  []uint16 // nil: status < 400 succeeds
}

// refused returns an error wrapping ErrRefused for a scenario element.
func refused(where, format string, args ...any) error {
	return fmt.Errorf("users: %s: "+format+": %w", append([]any{where}, append(args, ErrRefused)...)...)
}

// compile checks the scenario against what the data plane runs and
// compiles it. The first refusal is returned.
func compile(sc *worker.Scenario) (*plan, error) {
	h := &sc.HTTP
	switch {
	case len(sc.Classes) == 0:
		return nil, refused("scenario", "no user classes")
	case !h.DisableCookies:
		return nil, refused("http.disable_cookies", "the data plane keeps no cookies (Set-Cookie is not read, no Cookie is sent back); set http.disable_cookies: true to run without them")
	case h.MaxRedirects >= 0:
		return nil, refused("http.max_redirects", "the data plane does not follow redirects (a 3xx counts as its own status); set http.max_redirects: 0")
	case h.ConnectTimeout != 0:
		return nil, refused("http.connect_timeout", "the data plane's connects end after its SYN retransmissions, not after a timeout; remove connect_timeout")
	case h.TLSConfig != nil || h.InsecureSkipVerify:
		return nil, refused("http.insecure", "the data plane has no TLS")
	case !h.TLS.IsZero():
		return nil, refused("http.tls", "the data plane has no TLS")
	case h.HTTP2 || h.HTTP2Streams != 0:
		return nil, refused("http.http2", "the data plane speaks HTTP/1.1 only")
	case h.LocalAddr != nil:
		return nil, refused("http LocalAddr", "the data plane's source addresses are its client IPs")
	}
	p := &plan{timeout: h.Timeout}
	// The default headers of the kernel worker's client (worker/httpc),
	// without Accept-Encoding: the data plane does not decode bodies, so
	// it asks for none; sizes are then the decoded ones the kernel worker
	// reports.
	var opt [][2]string
	for i, hd := range h.Headers {
		if err := checkHeader(fmt.Sprintf("http.headers[%d]", i), hd); err != nil {
			return nil, err
		}
		opt = append(opt, [2]string{hd.Key, hd.Value})
	}
	ua := h.UserAgent
	if ua == "" {
		ua = httpc.DefaultUserAgent
	}
	if !hasHeader(opt, "User-Agent") {
		p.headers = append(p.headers, [2]string{"User-Agent", ua})
	}
	if !hasHeader(opt, "Accept") {
		p.headers = append(p.headers, [2]string{"Accept", "*/*"})
	}
	for _, hd := range opt {
		if !strings.EqualFold(hd[0], "Host") {
			p.headers = append(p.headers, hd)
		}
	}
	for ci := range sc.Classes {
		c := &sc.Classes[ci]
		cw := fmt.Sprintf("class %q", c.Name)
		pc := planClass{name: c.Name, host: c.Host, sequential: c.Sequential}
		switch {
		case c.OnStop != nil || len(c.OnStopRequests) > 0:
			return nil, refused(cw+" on_stop", "the data plane does not run on_stop (a stopped user's connection is closed)")
		case c.Wait != nil && c.WaitSpec == nil:
			return nil, refused(cw+" wait", "a Go wait-time function cannot run on the data plane; give UserClass.WaitSpec")
		case c.OnStart != nil && len(c.OnStartRequests) == 0:
			return nil, refused(cw+" on_start", "Go code cannot run on the data plane; give the on_start requests as data")
		}
		if c.WaitSpec != nil {
			pc.wait = *c.WaitSpec
		}
		for ri := range c.OnStartRequests {
			i, err := p.add(fmt.Sprintf("%s on_start[%d]", cw, ri), &c.OnStartRequests[ri])
			if err != nil {
				return nil, err
			}
			pc.onStart = append(pc.onStart, i)
		}
		for ti := range c.Tasks {
			t := &c.Tasks[ti]
			tw := fmt.Sprintf("%s task %d (%q)", cw, ti, t.Name)
			if t.Parallel {
				return nil, refused(tw+" parallel", "the data plane sends a user's requests one at a time")
			}
			if t.Socket != nil {
				return nil, refused(tw, "a %s task cannot run on the data plane, which speaks HTTP/1.1 only; run this class on a worker without --dataplane", t.Socket.Kind)
			}
			if len(t.Requests) == 0 {
				return nil, refused(tw, "a Go task function cannot run on the data plane; give the task's requests as data (Task.Requests)")
			}
			pt := planTask{weight: max(t.Weight, 1)}
			for ri := range t.Requests {
				i, err := p.add(fmt.Sprintf("%s request %d", tw, ri), &t.Requests[ri])
				if err != nil {
					return nil, err
				}
				pt.requests = append(pt.requests, i)
			}
			if c.Sequential {
				// Locust's sequential order runs a task Weight times in a
				// row; the stack's sequential tasks have weight 1.
				for range pt.weight {
					pc.tasks = append(pc.tasks, planTask{weight: 1, requests: pt.requests})
				}
				continue
			}
			pc.tasks = append(pc.tasks, pt)
		}
		if len(pc.tasks) == 0 {
			return nil, refused(cw, "no tasks")
		}
		p.classes = append(p.classes, pc)
	}
	return p, nil
}

func hasHeader(hs [][2]string, key string) bool {
	return slices.ContainsFunc(hs, func(h [2]string) bool { return strings.EqualFold(h[0], key) })
}

func checkHeader(where string, h httpc.Header) error {
	switch {
	case h.Key == "" || strings.ContainsAny(h.Key, " \t\r\n\x00:"):
		return refused(where, "header name %q", h.Key)
	case strings.ContainsAny(h.Value, "\r\n\x00"):
		return refused(where, "header %q has a CR, LF or NUL in its value", h.Key)
	case strings.EqualFold(h.Key, "Content-Length") || strings.EqualFold(h.Key, "Transfer-Encoding"):
		return refused(where, "header %q is computed, not set", h.Key)
	case strings.EqualFold(h.Key, "Cookie") || strings.EqualFold(h.Key, "Accept-Encoding"):
		return nil // a fixed header is sent as given
	}
	return nil
}

// add compiles one request and returns its index.
func (p *plan) add(where string, r *worker.Request) (int, error) {
	hr := &r.HTTP
	method := hr.Method
	if method == "" {
		method = "GET"
	}
	pr := planRequest{where: where, method: method, name: hr.StatsName(), path: hr.Path, body: hr.Body}
	switch {
	case r.Dynamic != "":
		return 0, refused(where, "%s: the data plane sends fixed requests only (no variables, captures, feeds or checks beyond status)", r.Dynamic)
	case strings.ContainsAny(method, " \t\r\n\x00/"):
		return 0, refused(where+" method", "invalid method %q", method)
	case strings.HasPrefix(hr.Path, "http://") || strings.HasPrefix(hr.Path, "https://"):
		return 0, refused(where+" path", "absolute URL %q: the data plane sends every request to its one server", hr.Path)
	case !validPath(hr.Path):
		return 0, refused(where+" path", "%q is not a path of printable ASCII without spaces (percent-encode it)", hr.Path)
	}
	if !strings.HasPrefix(pr.path, "/") {
		pr.path = "/" + pr.path
	}
	for i, h := range hr.Headers {
		if err := checkHeader(fmt.Sprintf("%s headers[%d]", where, i), h); err != nil {
			return 0, err
		}
		if strings.EqualFold(h.Key, "Host") {
			pr.host = h.Value
			continue
		}
		pr.headers = append(pr.headers, [2]string{h.Key, h.Value})
	}
	if e := r.Expect; e != nil {
		switch {
		case len(e.BodyContains) > 0:
			return 0, refused(where+" checks.body_contains", "the data plane keeps no response bodies")
		case e.MaxResponseTime > 0:
			return 0, refused(where+" checks.max_response_time", "the data plane's stats rows cannot fail single slow responses")
		}
		for _, s := range e.Status {
			if s < 100 || s > 999 {
				return 0, refused(where+" checks.status", "status %d outside 100..999", s)
			}
			pr.accept = append(pr.accept, uint16(s))
		}
	}
	p.requests = append(p.requests, pr)
	return len(p.requests) - 1, nil
}

func validPath(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// server is a host resolved for the data plane.
type server struct {
	addr   netip.AddrPort
	origin string // scheme://host[:port], as the kernel worker's URLs
	prefix string // the base URL's path, no trailing slash
	host   string // the Host header
}

// parseHost resolves a base URL: http:// with an IPv4 literal (no DNS on
// the data plane) and an optional port (80) and path prefix.
func parseHost(where, host string) (server, error) {
	if host == "" {
		return server{}, refused(where, "no host: set the scenario's host or the master's -H")
	}
	u, err := url.Parse(host)
	switch {
	case err != nil:
		return server{}, refused(where, "host %q: %v", host, err)
	case u.Scheme == "https":
		return server{}, refused(where, "host %q: the data plane has no TLS", host)
	case u.Scheme != "http":
		return server{}, refused(where, "host %q is not an http:// URL", host)
	case u.User != nil:
		return server{}, refused(where, "host %q carries credentials; send an Authorization header instead", host)
	case u.RawQuery != "" || u.Fragment != "":
		return server{}, refused(where, "host %q has a query or fragment", host)
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil || !ip.Is4() {
		return server{}, refused(where, "host %q is not an IPv4 address: the data plane resolves no names", host)
	}
	port := uint16(80)
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return server{}, refused(where, "host %q: bad port", host)
		}
		port = uint16(n)
	}
	return server{
		addr:   netip.AddrPortFrom(ip, port),
		origin: "http://" + u.Host,
		prefix: strings.TrimSuffix(u.EscapedPath(), "/"),
		host:   u.Host,
	}, nil
}

// url returns the URL of request r at srv, as the kernel worker's
// failure texts give it.
func (srv *server) url(r *planRequest) string { return srv.origin + srv.prefix + r.path }

// raw builds request r's bytes for srv: request line, Host, the default
// and option headers, the request's headers, Content-Length, body.
func (p *plan) raw(srv *server, r *planRequest) []byte {
	host := srv.host
	if r.host != "" {
		host = r.host
	}
	hs := make([][2]string, 0, len(p.headers)+len(r.headers)+1)
	for _, h := range p.headers {
		if !hasHeader(r.headers, h[0]) {
			hs = append(hs, h)
		}
	}
	hs = append(hs, r.headers...)
	if len(r.body) > 0 || r.method == "POST" || r.method == "PUT" || r.method == "PATCH" {
		hs = append(hs, [2]string{"Content-Length", strconv.Itoa(len(r.body))})
	}
	b := stack.BuildRequest(r.method, srv.prefix+r.path, host, hs)
	return append(b, r.body...)
}
