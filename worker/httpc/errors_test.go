//go:build linux

package httpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/pyrepr"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
)

// failure is what one failing request produced.
type failure struct {
	kind Kind
	msg  string
	err  error
	c    *Client
}

func doFail(t *testing.T, base string, opts Options, path string) failure {
	t.Helper()
	c := mustNew(t, base, opts)
	resp, err := c.Do(context.Background(), &Request{Path: path})
	if err == nil {
		t.Fatalf("Do(%s%s) succeeded with %d; want a failure", base, path, resp.StatusCode)
	}
	if resp == nil || resp.Duration <= 0 || resp.StatusCode != 0 || len(resp.Body) != 0 {
		t.Errorf("failed Do returned Response %+v; want only Duration set", resp)
	}
	e := asError(t, err)
	return failure{kind: e.Kind, msg: err.Error(), err: err, c: c}
}

// closedPort returns a 127.0.0.1 port nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestFailureClasses(t *testing.T) {
	readThen := func(f func(c net.Conn)) func(net.Conn) {
		return func(c net.Conn) {
			if _, _, err := readRequest(bufio.NewReader(c)); err != nil {
				return
			}
			f(c)
		}
	}
	tests := []struct {
		name    string
		handler func(net.Conn) // nil: no server
		base    string         // overrides the server's URL
		opts    Options
		kind    Kind
		msg     string // exact message, or prefix if it ends in "*"
		connErr bool   // counted as a connect error
	}{
		{name: "refused", base: "http://" + closedPort(t), kind: Refused,
			msg: "ConnectionRefusedError(111, 'Connection refused')", connErr: true},
		{name: "reset", handler: readThen(func(c net.Conn) {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}), kind: Reset, msg: "ConnectionResetError(104, 'Connection reset by peer')"},
		{name: "eof before response", handler: readThen(func(c net.Conn) { c.Close() }), kind: EOFBeforeResponse,
			msg: "RemoteDisconnected('Remote end closed connection without response')"},
		{name: "incomplete", handler: readThen(func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\nabc")
			c.Close()
		}), kind: Incomplete, msg: "IncompleteRead(42 bytes read)"},
		{name: "read timeout", handler: readThen(func(c net.Conn) { io.Copy(io.Discard, c) }),
			opts: Options{Timeout: 200 * time.Millisecond}, kind: ReadTimeout, msg: "TimeoutError('timed out')"},
		{name: "dns", base: "http://cicada-test.invalid:8080", kind: DNS, msg: "gaierror(-2, 'Name or service not known')", connErr: true},
		{name: "tls to plain server", handler: func(c net.Conn) {
			c.Read(make([]byte, 512)) // the ClientHello, as far as it goes
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			c.Close()
		}, base: "https://", opts: Options{ConnectTimeout: 10 * time.Second}, kind: TLS, msg: "SSLError('tls: first record does not look like a TLS handshake')", connErr: true},
		{name: "garbage", handler: readThen(func(c net.Conn) {
			io.WriteString(c, "garbage\r\n\r\n")
			c.Close()
		}), kind: Protocol, msg: "HTTPParseError('cannot find whitespace in the first line of response')"},
		{name: "body too large", handler: readThen(func(c net.Conn) {
			io.WriteString(c, okResponse(strings.Repeat("x", 100)))
		}), opts: Options{MaxResponseBodySize: 10}, kind: BodyTooLarge, msg: "cicada: response body larger than MaxResponseBodySize (10 bytes)"},
		{name: "local address unavailable", handler: readThen(func(c net.Conn) {}),
			opts: Options{LocalAddr: &net.TCPAddr{IP: net.ParseIP("192.0.2.1")}}, kind: PortsExhausted,
			msg: "cicada: local ports exhausted (EADDRNOTAVAIL): *", connErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.kind == PortsExhausted {
				if b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_nonlocal_bind"); strings.TrimSpace(string(b)) != "0" {
					t.Skip("ip_nonlocal_bind is not 0: binding a foreign address would succeed")
				}
			}
			base := tt.base
			if tt.handler != nil {
				srv := startRaw(t, tt.handler)
				switch base {
				case "":
					base = srv.URL()
				case "https://":
					base = "https://" + srv.ln.Addr().String()
				}
			}
			f := doFail(t, base, tt.opts, "/missing")
			if f.kind != tt.kind {
				t.Errorf("Kind = %v; want %v (err %v)", f.kind, tt.kind, f.err)
			}
			if got := Classify(f.err); got != tt.kind {
				t.Errorf("Classify(err) = %v; want %v", got, tt.kind)
			}
			t.Logf("%v: %s", f.kind, f.msg)
			if p, ok := strings.CutSuffix(tt.msg, "*"); ok {
				if !strings.HasPrefix(f.msg, p) {
					t.Errorf("message = %q; want prefix %q", f.msg, p)
				}
			} else if f.msg != tt.msg {
				t.Errorf("message = %q; want %q", f.msg, tt.msg)
			}
			s := f.c.Counters()
			if got := s.ConnectErrors[tt.kind] == 1; got != tt.connErr {
				t.Errorf("ConnectErrors[%v] = %d; want counted=%v", tt.kind, s.ConnectErrors[tt.kind], tt.connErr)
			}
			if !tt.connErr && (s.Connects != 1 || s.Open != 0 || s.Closes[CloseError] != 1) {
				t.Errorf("Counters() = %+v; want 1 connect closed by error", s)
			}
		})
	}
}

// TestConnectTimeout fills the accept queue of a listener with backlog 0:
// Linux then drops further SYNs, so connecting times out.
func TestConnectTimeout(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	var fill []net.Conn
	defer func() {
		for _, c := range fill {
			c.Close()
		}
	}()
	full := false
	for i := 0; i < 20 && !full; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			full = true
			break
		}
		fill = append(fill, c)
	}
	if !full {
		t.Skip("could not fill the accept queue")
	}
	f := doFail(t, "http://"+addr, Options{ConnectTimeout: 300 * time.Millisecond}, "/")
	if f.kind != ConnectTimeout || !f.kind.IsTimeout() || f.kind.GeneratorSide() {
		t.Errorf("Kind = %v; want ConnectTimeout (err %v)", f.kind, f.err)
	}
	if f.msg != "ConnectTimeoutError('connect timed out')" {
		t.Errorf("message = %q", f.msg)
	}
	if s := f.c.Counters(); s.ConnectErrors[ConnectTimeout] != 1 {
		t.Errorf("Counters() = %+v; want 1 connect timeout", s)
	}
}

func TestHTTPStatusError(t *testing.T) {
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			head, _, err := readRequest(br)
			if err != nil {
				return
			}
			switch {
			case strings.HasPrefix(head, "GET /missing "):
				io.WriteString(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabc")
			case strings.HasPrefix(head, "GET /boom "):
				io.WriteString(c, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
			case strings.HasPrefix(head, "GET /teapot "):
				io.WriteString(c, "HTTP/1.1 418 It's a teapot\r\nContent-Length: 0\r\n\r\n")
			default:
				io.WriteString(c, okResponse("ok"))
			}
		}
	})
	c := mustNew(t, srv.URL(), Options{})
	tests := []struct{ path, want string }{
		{"/missing", "HTTPError('404 Client Error: Not Found for url: " + srv.URL() + "/missing')"},
		{"/boom", "HTTPError('500 Server Error: Internal Server Error for url: " + srv.URL() + "/boom')"},
		{"/teapot", `HTTPError("418 Client Error: It's a teapot for url: ` + srv.URL() + `/teapot")`},
		{"/", ""},
	}
	for _, tt := range tests {
		resp := get(t, c, tt.path)
		err := resp.StatusError()
		if tt.want == "" {
			if err != nil {
				t.Errorf("GET %s: StatusError() = %v; want nil", tt.path, err)
			}
			continue
		}
		if err == nil || err.Error() != tt.want || Classify(err) != HTTPStatus || !errors.Is(err, ErrHTTPStatus) {
			t.Errorf("GET %s: StatusError() = %v; want %s", tt.path, err, tt.want)
		}
		if HTTPStatus.GeneratorSide() {
			t.Error("HTTPStatus.GeneratorSide() = true")
		}
	}
}

// TestFileLimit provokes EMFILE in a child process (a re-exec of this test
// binary) whose RLIMIT_NOFILE is lowered and whose descriptors are used up.
func TestFileLimit(t *testing.T) {
	if os.Getenv("HTTPC_EMFILE_CHILD") == "1" {
		fileLimitChild()
		return
	}
	srv := startRaw(t, serveFixed(okResponse("x")))
	cmd := testpeer.SelfCommand(context.Background(), "TestFileLimit", []string{"HTTPC_EMFILE_CHILD=1", "HTTPC_EMFILE_URL=" + srv.URL()})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var kind, msg string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "KIND="); ok {
			kind = v
		}
		if v, ok := strings.CutPrefix(line, "MSG="); ok {
			msg = v
		}
	}
	if kind != FileLimit.String() {
		t.Fatalf("child classified %q; want %q\n%s", kind, FileLimit, out)
	}
	if !strings.HasPrefix(msg, "cicada: open-file limit reached (EMFILE)") || !strings.Contains(msg, "OSError(24, 'Too many open files')") {
		t.Errorf("message = %q", msg)
	}
}

//nolint:forbidigo // a child process: stdout is its channel to the parent test
func fileLimitChild() {
	lim := syscall.Rlimit{Cur: 64, Max: 64}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &cur); err == nil && cur.Max < lim.Max {
		lim.Max = cur.Max
		lim.Cur = cur.Max
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Println("SETRLIMIT", err)
		return
	}
	c, err := New(os.Getenv("HTTPC_EMFILE_URL"), Options{})
	if err != nil {
		fmt.Println("NEW", err)
		return
	}
	var files []*os.File
	for i := 0; i < 200; i++ {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		files = append(files, f)
	}
	_, err = c.Do(context.Background(), &Request{Path: "/"})
	fmt.Printf("\nKIND=%s\nMSG=%s\n", Classify(err), err)
	for _, f := range files {
		f.Close()
	}
}

func TestClassifyWrapped(t *testing.T) {
	op := func(e syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", e)}
	}
	tests := []struct {
		err       error
		kind      Kind
		generator bool
	}{
		{nil, Other, false},
		{errors.New("weird"), Other, false},
		{op(syscall.ECONNREFUSED), Refused, false},
		{op(syscall.ECONNRESET), Reset, false},
		{op(syscall.EPIPE), Reset, false},
		{op(syscall.ENETUNREACH), Unreachable, false},
		{op(syscall.EHOSTUNREACH), Unreachable, false},
		{op(syscall.EADDRNOTAVAIL), PortsExhausted, true},
		{op(syscall.EADDRINUSE), PortsExhausted, true},
		{op(syscall.EMFILE), FileLimit, true},
		{op(syscall.ENFILE), FileLimit, true},
		{op(syscall.ENOBUFS), NoBuffers, true},
		{op(syscall.ETIMEDOUT), ConnectTimeout, false},
		{&net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, DNS, false},
		{context.Canceled, Canceled, true},
		{context.DeadlineExceeded, ReadTimeout, false},
		{os.ErrDeadlineExceeded, ReadTimeout, false},
		{fmt.Errorf("wrapped: %w", ErrClosed), ClientClosed, true},
		{fmt.Errorf("wrapped: %w", ErrEOFBeforeResponse), EOFBeforeResponse, false},
		{&Error{Kind: TLS}, TLS, false},
		{fmt.Errorf("outer: %w", &Error{Kind: FileLimit}), FileLimit, true},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.kind || got.GeneratorSide() != tt.generator {
			t.Errorf("Classify(%v) = %v (generator %v); want %v (generator %v)", tt.err, got, got.GeneratorSide(), tt.kind, tt.generator)
		}
	}
}

func TestMessages(t *testing.T) {
	tests := []struct {
		e    *Error
		want string
	}{
		{&Error{Kind: Unreachable, Op: "dial", Err: syscall.ENETUNREACH}, "OSError(101, 'Network is unreachable')"},
		{&Error{Kind: Reset, Op: "write", Err: syscall.EPIPE}, "BrokenPipeError(32, 'Broken pipe')"},
		{&Error{Kind: FileLimit, Op: "dial", Err: syscall.ENFILE},
			"cicada: open-file limit reached (ENFILE): the load generator cannot open more sockets; raise ulimit -n (RLIMIT_NOFILE) or fs.file-max: OSError(23, 'Too many open files in system')"},
		{&Error{Kind: PortsExhausted, Op: "dial", Err: syscall.EADDRINUSE},
			"cicada: local address unavailable (EADDRINUSE); the load generator ran out of local ports: OSError(98, 'Address already in use')"},
		{&Error{Kind: DNS, Err: &net.DNSError{Err: "timeout", IsTimeout: true}}, "gaierror(-3, 'Temporary failure in name resolution')"},
		{&Error{Kind: Other, Err: syscall.Errno(200)}, "OSError(200, 'Errno 200')"},
		{&Error{Kind: Canceled, Err: context.Canceled}, "cicada: request canceled (user stopped)"},
		{&Error{Kind: HTTPStatus, Status: 503, URL: "http://h/x"}, "HTTPError('503 Server Error: Service Unavailable for url: http://h/x')"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("(%v).Error() = %q; want %q", tt.e.Kind, got, tt.want)
		}
	}
}

func TestKindString(t *testing.T) {
	for k := Kind(0); k < numKinds; k++ {
		if k.String() == "" || strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("Kind(%d).String() = %q", k, k.String())
		}
	}
	if got := Kind(200).String(); got != "Kind(200)" {
		t.Errorf("Kind(200).String() = %q", got)
	}
	for c := CloseCause(0); c < numCloseCauses; c++ {
		if strings.HasPrefix(c.String(), "CloseCause(") {
			t.Errorf("CloseCause(%d).String() = %q", c, c.String())
		}
	}
}

func TestPyRepr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"abc", "'abc'"},
		{"it's", `"it's"`},
		{`it's "x"`, `'it\'s "x"'`},
		{"a\\b", `'a\\b'`},
		{"l1\r\nl2\t\x00\x7f", `'l1\r\nl2\t\x00\x7f'`},
		{"é", "'é'"},
	}
	for _, tt := range tests {
		if got := pyrepr.String(tt.in); got != tt.want {
			t.Errorf("pyrepr.String(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

// TestKindTable checks each Kind's wire label and side, both derived from
// protocol's table of failure kinds.
func TestKindTable(t *testing.T) {
	tests := []struct {
		k             Kind
		label         string
		generatorSide bool
	}{
		{Other, "other", false},
		{Refused, "connection refused", false},
		{Reset, "connection reset", false},
		{EOFBeforeResponse, "EOF before response", false},
		{Incomplete, "incomplete response", false},
		{ConnectTimeout, "connect timeout", false},
		{ReadTimeout, "read timeout", false},
		{DNS, "DNS", false},
		{TLS, "TLS", false},
		{HTTPStatus, "HTTP status", false},
		{Protocol, "protocol error", false},
		{Unreachable, "network unreachable", false},
		{PortsExhausted, "local ports exhausted", true},
		{FileLimit, "open-file limit", true},
		{NoBuffers, "no buffer space", true},
		{BodyTooLarge, "body too large", true},
		{Canceled, "canceled", true},
		{InvalidRequest, "invalid request", true},
		{ClientClosed, "client closed", true},
		{TLSCertificate, "TLS certificate", false},
		{TLSVersion, "TLS version", false},
		{TLSAlert, "TLS alert", false},
		{TLSTimeout, "TLS handshake timeout", false},
		{numKinds, "Kind(23)", false},
	}
	if len(tests) != NumKinds+1 {
		t.Fatalf("table has %d kinds; want NumKinds = %d", len(tests)-1, NumKinds)
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.label {
			t.Errorf("Kind(%d).String() = %q; want %q", tt.k, got, tt.label)
		}
		if got := tt.k.GeneratorSide(); got != tt.generatorSide {
			t.Errorf("%v.GeneratorSide() = %v; want %v", tt.k, got, tt.generatorSide)
		}
		if tt.k < numKinds && !protocol.KnownFailureKind(tt.label) {
			t.Errorf("protocol.KnownFailureKind(%q) = false; want true", tt.label)
		}
	}
}
