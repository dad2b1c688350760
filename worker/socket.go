package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cicada-load/cicada/worker/httpc"
	"github.com/cicada-load/cicada/worker/sockc"
)

// SocketKind is the protocol of a Socket task.
type SocketKind uint8

// The socket kinds.
const (
	WebSocket SocketKind = iota + 1 // RFC 6455 over ws:// or wss://
	TCP                             // raw bytes over tcp:// or tls://
)

// Method returns the request type a socket task's steps are recorded
// under in the stats: "WS" or "TCP".
func (k SocketKind) Method() string {
	if k == TCP {
		return "TCP"
	}
	return "WS"
}

// String returns "websocket" or "tcp".
func (k SocketKind) String() string {
	switch k {
	case WebSocket:
		return "websocket"
	case TCP:
		return "tcp"
	}
	return "SocketKind(" + strconv.Itoa(int(k)) + ")"
}

// ErrSocket is wrapped by a socket task that cannot run as written (a
// missing or bad URL, a WebSocket-only field on TCP): reported as an
// exception, like a missing host for HTTP requests.
var ErrSocket = errors.New("worker: socket task")

// Socket is a task that speaks WebSocket or raw TCP as data (Task.Socket):
// a connection held by the user across tasks, and steps run in order on
// it. Package scenario fills it from `kind: websocket` and `kind: tcp`
// user classes; SocketFunc runs it. A runtime that cannot run it (the
// data plane) refuses it by name.
type Socket struct {
	Kind SocketKind
	// URL: for WebSocket, ws:// or wss:// (http:// and https:// work too)
	// or a path ("/ws") on the user's host with its scheme turned into
	// ws or wss; for TCP, tcp://host:port or tls://host:port.
	URL string
	// Headers are sent with the WebSocket handshake, after the user's
	// cookies (a Cookie header, when the user's HTTP session holds cookies
	// for the same host and path).
	Headers []httpc.Header
	// Steps run in order. A failed step ends the task (the connection it
	// broke is opened again by the next task).
	Steps []SocketStep
}

// SocketStep is one step of a Socket task. A step with Send or Expect is
// one exchange and one request in the stats (method "WS" or "TCP", name
// Name): its response time runs from the send to the end of the reply
// (or to the end of the send without Expect), its length is the reply's.
// Hold and Close are not recorded unless they expect a close.
type SocketStep struct {
	// Name is the stats name. If empty: the text sent (at most 40 bytes)
	// or "receive".
	Name string
	// Send is the message (WebSocket) or the bytes (TCP) to send; nil
	// sends nothing.
	Send []byte
	// Binary sends a WebSocket binary message instead of a text one.
	Binary bool
	// Expect reads a reply and checks it; nil reads nothing.
	Expect *SocketExpect
	// Until says where a TCP reply ends (delimiter, length, idle gap).
	Until sockc.Until
	// Hold keeps the connection open this long without I/O, on the task's
	// goroutine (the class's wait time holds a connection without one).
	Hold time.Duration
	// Close, if not zero, closes the connection after the step: with this
	// close code for a WebSocket (waiting up to a second for the server's
	// close frame), at once for TCP.
	Close int
}

// SocketExpect are the checks of a reply.
type SocketExpect struct {
	Contains []string
	Regex    *regexp.Regexp
	// Equals, when HasEquals, is the whole reply.
	Equals    []byte
	HasEquals bool
	// CloseCode expects the server to close the WebSocket with this code
	// instead of replying.
	CloseCode int
	// Timeout bounds the wait for this reply; 0 means the scenario's
	// http timeout (DefaultTimeout, 60 s, without one).
	Timeout time.Duration
}

// SocketFunc returns a task that runs s's steps with User.SocketStep. A
// failed step ends the task (it is in the stats, not an exception); a
// task that cannot run as written returns an error wrapping ErrSocket.
func SocketFunc(s *Socket) TaskFunc {
	return func(ctx context.Context, u *User) error {
		for i := range s.Steps {
			if err := u.SocketStep(ctx, s, &s.Steps[i]); err != nil {
				if errors.Is(err, ErrSocket) {
					return err
				}
				return nil
			}
		}
		return nil
	}
}

// socketEnv is the worker's socket state: counters and per-source options.
type socketEnv struct {
	counters sockc.Counters
	once     sync.Once
	opts     []*sockc.Options
}

func (e *env) socketOptions(src uint32) *sockc.Options {
	se := &e.socks
	se.once.Do(func() {
		n := max(len(e.configs.sources), 1)
		se.opts = make([]*sockc.Options, n)
		for i := range se.opts {
			o := &sockc.Options{
				ConnectTimeout:     e.httpOpts.ConnectTimeout,
				Timeout:            e.httpOpts.Timeout,
				TLSConfig:          e.httpOpts.TLSConfig,
				InsecureSkipVerify: e.httpOpts.InsecureSkipVerify,
				Counters:           &se.counters,
			}
			if len(e.configs.sources) > 0 {
				o.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(e.configs.sources[i], 0))
			}
			se.opts[i] = o
		}
	})
	return se.opts[int(src)%len(se.opts)]
}

// sockState is a user's socket connections (one of each kind at most).
type sockState struct {
	ws     *sockc.WSConn
	wsURL  string
	tcp    *sockc.TCPConn
	tcpURL string
}

func (s *sockState) close() {
	if s == nil {
		return
	}
	if s.ws != nil {
		_ = s.ws.Close(0, "", false)
		s.ws = nil
	}
	if s.tcp != nil {
		_ = s.tcp.Close()
		s.tcp = nil
	}
}

// wsURL resolves a Socket's WebSocket URL against the user's host.
func (u *User) wsURL(raw string) (string, error) {
	if strings.Contains(raw, "://") {
		return raw, nil
	}
	host := u.Host()
	if host == "" {
		return "", fmt.Errorf("%w: %w", ErrSocket, ErrNoHost)
	}
	h, err := url.Parse(host)
	if err != nil || h.Host == "" {
		return "", fmt.Errorf("%w: host %q is not a URL", ErrSocket, host)
	}
	scheme := "ws"
	if h.Scheme == "https" {
		scheme = "wss"
	}
	if !strings.HasPrefix(raw, "/") {
		raw = "/" + raw
	}
	return scheme + "://" + h.Host + strings.TrimSuffix(h.Path, "/") + raw, nil
}

// WebSocket returns the user's WebSocket connection to rawURL (a ws:// or
// wss:// URL, or a path on the user's host), opening it first if it is
// not open: the handshake sends headers and the user's cookies for that
// host and path, and is recorded as a request "WS" "connect <rawURL>".
// A connection to another URL is closed first. A user holds one
// WebSocket connection (and one TCP connection) at a time.
func (u *User) WebSocket(ctx context.Context, rawURL string, headers []httpc.Header) (*sockc.WSConn, error) {
	if u.sock == nil {
		u.sock = new(sockState)
	}
	if c := u.sock.ws; c != nil && !c.Closed() && u.sock.wsURL == rawURL {
		return c, nil
	}
	if u.sock.ws != nil {
		_ = u.sock.ws.Close(0, "", false)
		u.sock.ws = nil
	}
	full, err := u.wsURL(rawURL)
	if err != nil {
		return nil, err
	}
	hs := headers
	if u.http.client != nil {
		pu, perr := url.Parse(full)
		bu, berr := url.Parse(u.http.client.BaseURL())
		if perr == nil && berr == nil && pu.Hostname() == bu.Hostname() {
			if ck, _ := u.http.client.CookieHeader(pu.Path, pu.Scheme == "wss"); ck != "" {
				hs = append([]httpc.Header{{Key: "Cookie", Value: ck}}, headers...)
			}
		}
	}
	start := time.Now()
	c, err := sockc.DialWS(ctx, full, hs, u.p.env.socketOptions(u.src))
	name := "connect " + rawURL
	if err != nil {
		if errors.Is(err, sockc.ErrInvalidURL) {
			return nil, fmt.Errorf("%w: %w", ErrSocket, err)
		}
		if !u.stopping(ctx, err) {
			u.p.env.rec.Record("WS", name, time.Since(start), 0, err.Error())
		}
		return nil, err
	}
	u.p.env.rec.Record("WS", name, time.Since(start), 0, "")
	u.sock.ws, u.sock.wsURL = c, rawURL
	return c, nil
}

// TCPConn returns the user's TCP connection to rawURL (tcp://host:port
// or tls://host:port), opening it first if it is not open; the connect
// is recorded as a request "TCP" "connect <rawURL>".
func (u *User) TCPConn(ctx context.Context, rawURL string) (*sockc.TCPConn, error) {
	if u.sock == nil {
		u.sock = new(sockState)
	}
	if c := u.sock.tcp; c != nil && !c.Closed() && u.sock.tcpURL == rawURL {
		return c, nil
	}
	if u.sock.tcp != nil {
		_ = u.sock.tcp.Close()
		u.sock.tcp = nil
	}
	start := time.Now()
	c, err := sockc.DialTCP(ctx, rawURL, u.p.env.socketOptions(u.src))
	name := "connect " + rawURL
	if err != nil {
		if errors.Is(err, sockc.ErrInvalidURL) {
			return nil, fmt.Errorf("%w: %w", ErrSocket, err)
		}
		if !u.stopping(ctx, err) {
			u.p.env.rec.Record("TCP", name, time.Since(start), 0, err.Error())
		}
		return nil, err
	}
	u.p.env.rec.Record("TCP", name, time.Since(start), 0, "")
	u.sock.tcp, u.sock.tcpURL = c, rawURL
	return c, nil
}

// stopping reports whether err comes from the user being stopped: not a
// measurement, as for HTTP requests.
func (u *User) stopping(ctx context.Context, err error) bool {
	return ctx.Err() != nil || u.ctx.Err() != nil || httpc.Classify(err) == httpc.Canceled
}

// SocketStep runs one step of s on the user's connection (opened first if
// needed) and records it in the stats. It returns the recorded failure
// (nil on success), the connect's failure, or an error wrapping ErrSocket
// when the step cannot run as written.
func (u *User) SocketStep(ctx context.Context, s *Socket, st *SocketStep) error {
	if st.Hold > 0 {
		t := time.NewTimer(st.Hold)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if st.Send == nil && st.Expect == nil {
		if st.Close != 0 {
			u.sock.closeKind(s.Kind, st.Close)
		}
		return nil
	}
	method := s.Kind.Method()
	name := st.Name
	if name == "" {
		name = defaultStepName(st.Send)
	}
	var (
		ws   *sockc.WSConn
		tcp  *sockc.TCPConn
		err  error
		recv []byte
	)
	switch s.Kind {
	case WebSocket:
		ws, err = u.WebSocket(ctx, s.URL, s.Headers)
	case TCP:
		tcp, err = u.TCPConn(ctx, s.URL)
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrSocket, s.Kind)
	}
	if err != nil {
		return err
	}
	ectx := ctx
	if st.Expect != nil && st.Expect.Timeout > 0 {
		var cancel context.CancelFunc
		ectx, cancel = context.WithTimeout(ctx, st.Expect.Timeout)
		defer cancel()
	}
	bp := sockBufs.Get().(*[]byte)
	defer func() {
		if cap(recv) <= 64<<10 {
			*bp = recv[:0]
		}
		sockBufs.Put(bp)
	}()
	start := time.Now()
	var fail error
	if st.Send != nil {
		if ws != nil {
			op := byte(sockc.Text)
			if st.Binary {
				op = sockc.Binary
			}
			fail = ws.Send(ctx, op, st.Send)
		} else {
			fail = tcp.Send(ctx, st.Send)
		}
	}
	var closeErr *sockc.CloseError
	if fail == nil && st.Expect != nil {
		if ws != nil {
			_, recv, fail = ws.Recv(ectx, *bp)
		} else {
			recv, fail = tcp.Read(ectx, st.Until, *bp)
		}
		switch {
		case st.Expect.CloseCode != 0 && errors.As(fail, &closeErr) && closeErr.Code == st.Expect.CloseCode:
			fail = nil
		case st.Expect.CloseCode != 0 && errors.As(fail, &closeErr):
			fail = catchResponseError(fmt.Sprintf("%s %q: closed with %d, expected %d", method, name, closeErr.Code, st.Expect.CloseCode))
		case st.Expect.CloseCode != 0 && fail == nil:
			fail = catchResponseError(fmt.Sprintf("%s %q: reply %s, expected a close with %d", method, name, snippet(recv), st.Expect.CloseCode))
		case fail == nil:
			fail = st.Expect.check(recv, method, name)
		}
	}
	rt := time.Since(start)
	if fail != nil && !errors.As(fail, new(*CheckError)) && u.stopping(ctx, fail) {
		return fail
	}
	failure := ""
	if fail != nil {
		failure = fail.Error()
	}
	u.p.env.rec.Record(method, name, rt, int64(len(recv)), failure)
	if st.Close != 0 {
		u.sock.closeKind(s.Kind, st.Close)
	}
	return fail
}

func (s *sockState) closeKind(k SocketKind, code int) {
	if s == nil {
		return
	}
	switch {
	case k == WebSocket && s.ws != nil:
		if code < 0 {
			code = 0
		}
		_ = s.ws.Close(code, "", true)
		s.ws = nil
	case k == TCP && s.tcp != nil:
		_ = s.tcp.Close()
		s.tcp = nil
	}
}

var sockBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// check returns the failure of reply under e, or nil. Its message names
// the step.
func (e *SocketExpect) check(reply []byte, method, name string) error {
	for _, s := range e.Contains {
		if !bytes.Contains(reply, []byte(s)) {
			return catchResponseError(fmt.Sprintf("%s %q: reply %s does not contain %q", method, name, snippet(reply), s))
		}
	}
	if e.Regex != nil && !e.Regex.Match(reply) {
		return catchResponseError(fmt.Sprintf("%s %q: reply %s does not match /%s/", method, name, snippet(reply), e.Regex))
	}
	if e.HasEquals && !bytes.Equal(reply, e.Equals) {
		return catchResponseError(fmt.Sprintf("%s %q: reply %s is not %s", method, name, snippet(reply), snippet(e.Equals)))
	}
	return nil
}

// snippet quotes the start of b for a failure message.
func snippet(b []byte) string {
	const n = 40
	if len(b) > n {
		return fmt.Sprintf("%q...", b[:n])
	}
	return fmt.Sprintf("%q", b)
}

// defaultStepName is the stats name of a step without one: the text sent
// (at most 40 bytes) or "receive".
func defaultStepName(send []byte) string {
	if send == nil {
		return "receive"
	}
	if len(send) > 40 {
		send = send[:40]
	}
	if !utf8.Valid(send) {
		return "send"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, string(send))
}
