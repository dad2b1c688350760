package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cicada-load/cicada/internal/pyrepr"
	"github.com/cicada-load/cicada/worker/httpc"
)

// HTTPOptions configure every user's HTTP client (timeouts, TLS, headers,
// cookies, source address). The zero value works.
type HTTPOptions = httpc.Options

// httpOptions is the compiled form of HTTPOptions.
type httpOptions = httpc.Options

// httpState is a user's lazily created HTTP client.
type httpState struct {
	client *httpc.Client
	base   string
}

func (h *httpState) close() {
	if h.client != nil {
		_ = h.client.Close()
		h.client = nil
	}
}

// ErrNoHost is returned by User.HTTP when no host is known: neither the
// master (-H), nor the user class, nor the scenario gave one.
var ErrNoHost = errors.New("worker: no host for HTTP requests (set the scenario host or the master's -H)")

// HTTP returns the user's HTTP client: one keep-alive connection, its own
// cookies. It is created on first use for Host(); if the host changes (a
// new -H from the master), a new client replaces it.
func (u *User) HTTP() (*httpc.Client, error) {
	host := u.Host()
	if u.http.client != nil && u.http.base == host {
		return u.http.client, nil
	}
	if host == "" {
		return nil, ErrNoHost
	}
	c, err := u.p.env.newClient(host, u.src)
	if err != nil {
		return nil, err
	}
	u.http.close()
	u.http.client, u.http.base = c, host
	return c, nil
}

// Expect are the checks that decide whether an HTTP response is a success,
// like the checks of a Locust catch_response block. The zero value accepts
// what Locust's HttpUser accepts: any status below 400.
type Expect struct {
	// Status lists the accepted status codes. If empty, any code below 400
	// is accepted and 4xx/5xx fail with requests' HTTPError message.
	Status []int
	// BodyContains lists strings the body must contain.
	BodyContains []string
	// MaxResponseTime, if positive, fails slower responses.
	MaxResponseTime time.Duration
}

// check returns the failure of resp under e, or nil. name is the request's
// Name: a 4xx/5xx failure names it instead of the URL, as Locust's
// HttpSession does for a request with name= ("for url: /item/[id]"), so
// failures of dynamic URLs group under their name. Locust keeps the URL
// inside a catch_response block; cicada uses the name there too (checks
// are how a scenario writes a plain request with expectations).
func (e *Expect) check(resp *httpc.Response, name string) error {
	if e == nil || len(e.Status) == 0 {
		if err := resp.StatusError(); err != nil {
			var he *httpc.Error
			if name != "" && errors.As(err, &he) {
				he.URL = name
			}
			return err
		}
	} else if !slices.Contains(e.Status, resp.StatusCode) {
		want := make([]string, len(e.Status))
		for i, s := range e.Status {
			want[i] = strconv.Itoa(s)
		}
		return catchResponseError(fmt.Sprintf("status %d, expected %s", resp.StatusCode, strings.Join(want, " or ")))
	}
	if e == nil {
		return nil
	}
	for _, s := range e.BodyContains {
		if !bytes.Contains(resp.Body, []byte(s)) {
			return catchResponseError(fmt.Sprintf("response body does not contain %q", s))
		}
	}
	if e.MaxResponseTime > 0 && resp.Duration > e.MaxResponseTime {
		return catchResponseError(fmt.Sprintf("response time %d ms exceeds %d ms",
			resp.Duration.Milliseconds(), e.MaxResponseTime.Milliseconds()))
	}
	return nil
}

// Check is check for the Checker interface: the response's failure under
// e (nil e: the default, status below 400), or nil.
func (e *Expect) Check(resp *httpc.Response, req *httpc.Request) error {
	return e.check(resp, req.Name)
}

// CheckError is a failed response check. Its message is what Locust records
// for response.failure(msg) in a catch_response block:
// CatchResponseError('msg').
type CheckError struct{ Msg string }

func (e *CheckError) Error() string { return "CatchResponseError(" + pyrepr.String(e.Msg) + ")" }

func catchResponseError(msg string) error { return &CheckError{Msg: msg} }

// Do sends req with the user's HTTP client and records it in the stats as
// Locust's HttpUser does: the response time (connecting included), the body
// length, and a failure when the request failed or a check of expect (nil
// means the default: status below 400) did not hold. It returns the
// response (nil if the client could not be created) and the recorded
// failure. A request interrupted because the user is being stopped is not
// recorded, as in Locust where the user's greenlet is killed.
func (u *User) Do(ctx context.Context, req *httpc.Request, expect *Expect) (*httpc.Response, error) {
	resp := new(httpc.Response)
	err := u.do(ctx, req, expect, resp)
	return resp, err
}

var respPool = sync.Pool{New: func() any { return new(httpc.Response) }}

// DoDiscard is Do without returning the response: its buffers are pooled,
// so a steady stream of requests does not allocate response memory.
func (u *User) DoDiscard(ctx context.Context, req *httpc.Request, expect *Expect) error {
	return u.doDiscard(ctx, req, expect, true)
}

// doDiscard is DoDiscard; track says whether req becomes the user's last
// request (a parallel task's goroutines do not touch it).
func (u *User) doDiscard(ctx context.Context, req *httpc.Request, expect *Expect, track bool) error {
	resp := respPool.Get().(*httpc.Response)
	err := u.send(ctx, req, expect, resp, track)
	if cap(resp.Body) <= 64<<10 {
		respPool.Put(resp)
	}
	return err
}

func (u *User) do(ctx context.Context, req *httpc.Request, chk Checker, resp *httpc.Response) error {
	return u.send(ctx, req, chk, resp, true)
}

func (u *User) send(ctx context.Context, req *httpc.Request, chk Checker, resp *httpc.Response, track bool) error {
	method := req.Method
	if method == "" {
		method = "GET"
	}
	c, err := u.HTTP()
	if err != nil {
		u.record(method, req.StatsName(), 0, 0, err.Error())
		return err
	}
	if track {
		u.lastReq = req
	}
	err = c.DoInto(ctx, req, resp)
	if err != nil {
		if ctx.Err() != nil || u.ctx.Err() != nil || httpc.Classify(err) == httpc.Canceled {
			return err // interrupted by a stop: not a measurement
		}
		u.recordHTTP(method, req.StatsName(), resp.Duration, 0, err.Error(), &resp.Phases) // phases.go
		return err
	}
	fail := chk.Check(resp, req)
	failure := ""
	if fail != nil {
		failure = fail.Error()
	}
	u.recordHTTP(method, req.StatsName(), resp.Duration, resp.ContentLength(), failure, &resp.Phases)
	return fail
}

// clientConfigs caches the httpc.Configs of the users' clients: one per
// base URL and source address, shared by every user of them (an idle
// client then costs a few hundred bytes of its own).
type clientConfigs struct {
	mu      sync.Mutex
	byHost  map[string][]*httpc.Config
	sources []netip.Addr
}

// newClient returns a new client for host, bound to the source address
// src (modulo the number of addresses) when Options.SourceIPs are set.
func (e *env) newClient(host string, src uint32) (*httpc.Client, error) {
	cc := &e.configs
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cfgs := cc.byHost[host]
	if cfgs == nil {
		n := max(len(cc.sources), 1)
		cfgs = make([]*httpc.Config, n)
		for i := range cfgs {
			opts := e.httpOpts
			if len(cc.sources) > 0 {
				opts.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(cc.sources[i], 0))
			}
			cfg, err := httpc.NewConfig(host, opts)
			if err != nil {
				return nil, err
			}
			cfgs[i] = cfg
		}
		if cc.byHost == nil {
			cc.byHost = make(map[string][]*httpc.Config)
		}
		if len(cc.byHost) >= 64 {
			clear(cc.byHost) // hosts changed many times: do not grow forever
		}
		cc.byHost[host] = cfgs
	}
	return cfgs[int(src)%len(cfgs)].NewClient(), nil
}
