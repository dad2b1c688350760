package httpc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewInvalidURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "missing scheme"},
		{"localhost:8080", "unsupported scheme"},
		{"127.0.0.1:8080", "first path segment in URL cannot contain colon"},
		{"ftp://host/", "unsupported scheme"},
		{"http://", "missing host"},
		{"http://host:0", "bad port"},
		{"http://host:99999", "bad port"},
		{"http://host/?q=1", "query or fragment"},
		{"http://ho st/", "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := New(tt.in, Options{})
			if err == nil || !errors.Is(err, ErrInvalidURL) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New(%q) = %v; want an ErrInvalidURL mentioning %q", tt.in, err, tt.want)
			}
		})
	}
	for _, ok := range []string{"http://h", "HTTP://h:80/", "https://h/api/", "http://[::1]:8080", "http://u:p@h"} {
		if _, err := New(ok, Options{}); err != nil {
			t.Errorf("New(%q) = %v; want nil", ok, err)
		}
	}
}

func TestGetKeepAlive(t *testing.T) {
	var mu sync.Mutex
	var heads []string
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			head, _, err := readRequest(br)
			if err != nil {
				return
			}
			mu.Lock()
			heads = append(heads, head)
			mu.Unlock()
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Test: yes\r\nContent-Length: 5\r\n\r\nhello")
		}
	})
	c := mustNew(t, srv.URL()+"/api/", Options{Headers: []Header{{"X-Opt", "1"}}})
	for i := 0; i < 3; i++ {
		resp, err := c.Do(context.Background(), &Request{Path: "/x?q=1", Headers: []Header{{"X-Req", "2"}}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || string(resp.Body) != "hello" || resp.ContentLength() != 5 {
			t.Fatalf("resp = %d %q; want 200 hello", resp.StatusCode, resp.Body)
		}
		if got := resp.Header("x-test"); got != "yes" {
			t.Errorf("Header(x-test) = %q; want yes", got)
		}
		if got := resp.Reason(); got != "OK" {
			t.Errorf("Reason() = %q; want OK", got)
		}
		if resp.Duration <= 0 {
			t.Errorf("Duration = %v; want > 0", resp.Duration)
		}
		if got, want := resp.URL(), srv.URL()+"/api/x?q=1"; got != want {
			t.Errorf("URL() = %q; want %q", got, want)
		}
	}
	if got := srv.Accepts(); got != 1 {
		t.Errorf("server accepted %d connections; want 1 (keep-alive)", got)
	}
	s := c.Counters()
	if s.Connects != 1 || s.Reconnects != 0 || s.Open != 1 || s.TotalCloses() != 0 {
		t.Errorf("Counters() = %+v; want 1 connect, 1 open", s)
	}
	mu.Lock()
	head := heads[0]
	mu.Unlock()
	for _, want := range []string{
		"GET /api/x?q=1 HTTP/1.1\r\n", "Host: " + srv.ln.Addr().String() + "\r\n", "User-Agent: cicada\r\n",
		"Accept-Encoding: gzip, deflate\r\n", "X-Opt: 1\r\n", "X-Req: 2\r\n",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("request head %q lacks %q", head, want)
		}
	}
	c.Close()
	s = c.Counters()
	if s.Open != 0 || s.Closes[CloseClient] != 1 {
		t.Errorf("after Close: Counters() = %+v; want 0 open, 1 client close", s)
	}
	if _, err := c.Do(context.Background(), &Request{Path: "/"}); !errors.Is(err, ErrClosed) || Classify(err) != ClientClosed {
		t.Errorf("Do after Close = %v; want ErrClosed", err)
	}
}

func TestRequestHead(t *testing.T) {
	heads := make(chan string, 10)
	bodies := make(chan string, 10)
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			head, body, err := readRequest(br)
			if err != nil {
				return
			}
			heads <- head
			bodies <- string(body)
			io.WriteString(c, okResponse(""))
		}
	})
	c := mustNew(t, "http://user:pa%20ss@"+srv.ln.Addr().String(), Options{UserAgent: "ua/1", DisableCompression: true})
	tests := []struct {
		name      string
		req       Request
		want      []string
		notWant   []string
		wantBody  string
		wantValid bool
	}{
		{"post body", Request{Method: "POST", Path: "/p", Body: []byte("abc")},
			[]string{"POST /p HTTP/1.1\r\n", "Content-Length: 3\r\n", "Authorization: Basic dXNlcjpwYSBzcw==\r\n", "User-Agent: ua/1\r\n"},
			[]string{"Accept-Encoding"}, "abc", true},
		{"empty post", Request{Method: "POST", Path: "/p"}, []string{"Content-Length: 0\r\n"}, nil, "", true},
		{"get no length", Request{Path: "/"}, nil, []string{"Content-Length"}, "", true},
		{"override ua", Request{Path: "/", Headers: []Header{{"user-agent", "mine"}, {"Content-Length", "99"}}},
			[]string{"user-agent: mine\r\n"}, []string{"User-Agent: ua/1", "Content-Length"}, "", true},
		{"escape path", Request{Path: "/a b\x01é"}, []string{"GET /a%20b%01%C3%A9 HTTP/1.1\r\n"}, nil, "", true},
		{"relative path", Request{Path: "rel"}, []string{"GET /rel HTTP/1.1\r\n"}, nil, "", true},
		{"empty path", Request{Path: ""}, []string{"GET / HTTP/1.1\r\n"}, nil, "", true},
		{"header injection", Request{Path: "/", Headers: []Header{{"X", "a\r\nEvil: 1"}}}, nil, nil, "", false},
		{"bad header name", Request{Path: "/", Headers: []Header{{"X Y", "a"}}}, nil, nil, "", false},
		{"bad method", Request{Method: "GE T", Path: "/"}, nil, nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Do(context.Background(), &tt.req)
			if !tt.wantValid {
				if Classify(err) != InvalidRequest || !errors.Is(err, ErrInvalidRequest) {
					t.Fatalf("Do(%+v) = %v; want InvalidRequest", tt.req, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			head, body := <-heads, <-bodies
			for _, w := range tt.want {
				if !strings.Contains(head, w) {
					t.Errorf("head %q lacks %q", head, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(head, w) {
					t.Errorf("head %q has %q", head, w)
				}
			}
			if body != tt.wantBody {
				t.Errorf("body = %q; want %q", body, tt.wantBody)
			}
		})
	}
}

func TestReconnectAfterServerClosedIdle(t *testing.T) {
	// The server answers one request per connection, then closes it
	// without saying so (no Connection: close): the client must notice and
	// reconnect, counting it.
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, _, err := readRequest(br); err != nil {
			return
		}
		io.WriteString(c, okResponse("one"))
		c.Close()
	})
	c := mustNew(t, srv.URL(), Options{})
	get(t, c, "/")
	// Let the FIN arrive, so the idle check (not the retry) sees it.
	time.Sleep(20 * time.Millisecond)
	get(t, c, "/")
	get(t, c, "/") // this one may meet the FIN in flight: the retry covers it
	s := c.Counters()
	if s.Connects != 3 || s.Reconnects != 2 || s.Closes[CloseServerIdle] != 2 || s.Open != 1 {
		t.Errorf("Counters() = %+v; want 3 connects, 2 reconnects, 2 server-idle closes, 1 open", s)
	}
}

func TestRetryOnStaleConnection(t *testing.T) {
	// Disable the idle check's chance by closing right when the next
	// request arrives: the server reads it and closes. The first request
	// on the reused connection gets EOF before any byte and is retried on a
	// new connection.
	var mu sync.Mutex
	n := 0
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, _, err := readRequest(br); err != nil {
				return
			}
			mu.Lock()
			n++
			drop := n == 2
			mu.Unlock()
			if drop {
				c.Close()
				return
			}
			io.WriteString(c, okResponse("x"))
		}
	})
	c := mustNew(t, srv.URL(), Options{})
	get(t, c, "/")
	get(t, c, "/") // retried transparently
	s := c.Counters()
	if s.Connects != 2 || s.Reconnects != 1 || s.Closes[CloseServerIdle] != 1 {
		t.Errorf("Counters() = %+v; want 2 connects, 1 reconnect, 1 server-idle close", s)
	}
	// POST is not retried after the request was sent.
	mu.Lock()
	n = 1
	mu.Unlock()
	_, err := c.Do(context.Background(), &Request{Method: "POST", Path: "/"})
	if Classify(err) != EOFBeforeResponse {
		t.Errorf("POST on a connection closed after reading = %v; want EOFBeforeResponse", err)
	}
}

func TestConnectionClose(t *testing.T) {
	srv := startRaw(t, serveFixed("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"))
	c := mustNew(t, srv.URL(), Options{})
	get(t, c, "/")
	get(t, c, "/")
	s := c.Counters()
	if s.Connects != 2 || s.Closes[CloseServerRequested] != 2 || s.Open != 0 {
		t.Errorf("Counters() = %+v; want 2 connects and 2 server-requested closes", s)
	}
}

func TestBodyFraming(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Repeat("gzipped ", 100)))
	zw.Close()
	tests := []struct {
		name, resp, method string
		want               string
		wantClose          bool
	}{
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", "GET", "abcde", false},
		{"until close", "HTTP/1.1 200 OK\r\n\r\nuntil-eof", "GET", "until-eof", true},
		{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "GET", "ok", true},
		{"head", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", "HEAD", "", false},
		{"204", "HTTP/1.1 204 No Content\r\n\r\n", "GET", "", false},
		{"100 continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz", "GET", "z", false},
		{"gzip", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " + itoa(gz.Len()) + "\r\n\r\n" + gz.String(), "GET",
			strings.Repeat("gzipped ", 100), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startRaw(t, func(c net.Conn) {
				br := bufio.NewReader(c)
				if _, _, err := readRequest(br); err != nil {
					return
				}
				io.WriteString(c, tt.resp)
				if tt.wantClose {
					c.Close()
				} else {
					io.Copy(io.Discard, c)
				}
			})
			c := mustNew(t, srv.URL(), Options{})
			resp, err := c.Do(context.Background(), &Request{Method: tt.method, Path: "/"})
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Body) != tt.want {
				t.Errorf("Body = %q; want %q", resp.Body, tt.want)
			}
			s := c.Counters()
			if got := s.Closes[CloseServerRequested] == 1; got != tt.wantClose {
				t.Errorf("closed after response = %v; want %v (%+v)", got, tt.wantClose, s)
			}
		})
	}
}

func TestUnexpectedDataClosesConnection(t *testing.T) {
	// Two responses for one request: the second one must not be taken as
	// the answer to the next request.
	srv := startRaw(t, serveFixed(okResponse("first")+okResponse("extra")))
	c := mustNew(t, srv.URL(), Options{})
	get(t, c, "/")
	resp := get(t, c, "/")
	if string(resp.Body) != "first" {
		t.Errorf("second response body = %q; want first", resp.Body)
	}
	if s := c.Counters(); s.Connects < 2 {
		t.Errorf("Counters() = %+v; want a reconnect after unexpected data", s)
	}
}

func TestCookies(t *testing.T) {
	cookies := make(chan string, 10)
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			head, _, err := readRequest(br)
			if err != nil {
				return
			}
			ck := ""
			for _, line := range strings.Split(head, "\r\n") {
				if strings.HasPrefix(line, "Cookie: ") {
					ck = line[len("Cookie: "):]
				}
			}
			cookies <- ck
			var set string
			switch {
			case strings.HasPrefix(head, "GET /login "):
				set = "Set-Cookie: session=abc; Path=/\r\nSet-Cookie: sub=1; Path=/app\r\nSet-Cookie: sec=1; Secure\r\n"
			case strings.HasPrefix(head, "GET /logout "):
				set = "Set-Cookie: session=; Max-Age=0; Path=/\r\n"
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\n"+set+"Content-Length: 0\r\n\r\n")
		}
	})
	c := mustNew(t, srv.URL(), Options{})
	steps := []struct{ path, want string }{
		{"/login", ""},
		{"/", "session=abc"},
		{"/app/x", "session=abc; sub=1"},
		{"/application", "session=abc"},
		{"/logout", "session=abc"},
		{"/app", "sub=1"},
	}
	for _, s := range steps {
		get(t, c, s.path)
		if got := <-cookies; got != s.want {
			t.Errorf("GET %s sent Cookie %q; want %q", s.path, got, s.want)
		}
	}
	c2 := mustNew(t, srv.URL(), Options{DisableCookies: true})
	get(t, c2, "/login")
	<-cookies
	get(t, c2, "/")
	if got := <-cookies; got != "" {
		t.Errorf("DisableCookies: sent Cookie %q; want none", got)
	}
}

func TestRedirects(t *testing.T) {
	other := startRaw(t, serveFixed(okResponse("other origin")))
	lines := make(chan string, 20)
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			head, _, err := readRequest(br)
			if err != nil {
				return
			}
			line := head[:strings.Index(head, "\r\n")]
			lines <- line
			var resp string
			switch {
			case strings.Contains(line, " /final "):
				resp = okResponse("final")
			case strings.Contains(line, " /r302 "):
				resp = "HTTP/1.1 302 Found\r\nLocation: /final\r\nContent-Length: 0\r\n\r\n"
			case strings.Contains(line, " /r307 "):
				resp = "HTTP/1.1 307 Temporary Redirect\r\nLocation: final\r\nContent-Length: 0\r\n\r\n"
			case strings.Contains(line, " /loop "):
				resp = "HTTP/1.1 301 Moved\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n"
			case strings.Contains(line, " /away "):
				resp = "HTTP/1.1 302 Found\r\nLocation: " + other.URL() + "/there\r\nContent-Length: 0\r\n\r\n"
			default:
				resp = okResponse(line)
			}
			io.WriteString(c, resp)
		}
	})
	c := mustNew(t, srv.URL(), Options{MaxRedirects: 3})
	drain := func() []string {
		var got []string
		for {
			select {
			case l := <-lines:
				got = append(got, l)
			default:
				return got
			}
		}
	}
	resp, err := c.Do(context.Background(), &Request{Method: "POST", Path: "/r302", Body: []byte("x")})
	if err != nil || string(resp.Body) != "final" || resp.Redirects != 1 {
		t.Fatalf("POST /r302 = %v %q redirects=%d; want final after 1 redirect", err, resp.Body, resp.Redirects)
	}
	if got := drain(); strings.Join(got, "|") != "POST /r302 HTTP/1.1|GET /final HTTP/1.1" {
		t.Errorf("requests = %q; want POST then GET", got)
	}
	resp, err = c.Do(context.Background(), &Request{Method: "POST", Path: "/r307"})
	if err != nil || string(resp.Body) != "final" {
		t.Fatalf("POST /r307 = %v %q", err, resp.Body)
	}
	if got := drain(); strings.Join(got, "|") != "POST /r307 HTTP/1.1|POST /final HTTP/1.1" {
		t.Errorf("requests = %q; want POST kept on 307", got)
	}
	_, err = c.Do(context.Background(), &Request{Path: "/loop"})
	if !errors.Is(err, ErrTooManyRedirects) {
		t.Errorf("GET /loop = %v; want ErrTooManyRedirects", err)
	}
	drain()
	resp, err = c.Do(context.Background(), &Request{Path: "/away"})
	if err != nil || string(resp.Body) != "other origin" || resp.URL() != other.URL()+"/there" {
		t.Fatalf("GET /away = %v %q %s", err, resp.Body, resp.URL())
	}
	s := c.Counters()
	if s.Closes[CloseOneShot] != 1 || s.Open != 1 {
		t.Errorf("Counters() = %+v; want one one-shot connection closed and the keep-alive one open", s)
	}
	nc := mustNew(t, srv.URL(), Options{MaxRedirects: -1})
	resp, err = nc.Do(context.Background(), &Request{Path: "/r302"})
	if err != nil || resp.StatusCode != 302 {
		t.Errorf("MaxRedirects -1: GET /r302 = %v %d; want the 302", err, resp.StatusCode)
	}
}

func TestConcurrentDoFails(t *testing.T) {
	release := make(chan struct{})
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, _, err := readRequest(br); err != nil {
				return
			}
			<-release
			io.WriteString(c, okResponse("x"))
		}
	})
	c := mustNew(t, srv.URL(), Options{})
	done := make(chan error)
	go func() {
		_, err := c.Do(context.Background(), &Request{Path: "/"})
		done <- err
	}()
	waitFor(t, "first Do to be running", func() bool { return c.busy.Load() })
	_, err := c.Do(context.Background(), &Request{Path: "/"})
	if !errors.Is(err, ErrConcurrentUse) {
		t.Errorf("concurrent Do = %v; want ErrConcurrentUse", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("first Do = %v", err)
	}
}

func TestCancelInterruptsRequest(t *testing.T) {
	srv := startRaw(t, func(c net.Conn) { io.Copy(io.Discard, c) }) // never answers
	c := mustNew(t, srv.URL(), Options{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := c.Do(ctx, &Request{Path: "/"})
		done <- err
	}()
	waitFor(t, "the request to be in flight", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.mu.active != nil
	})
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if Classify(err) != Canceled || !Canceled.GeneratorSide() {
			t.Errorf("Do after cancel = %v; want Canceled", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("cancel took %v", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Do did not return after cancel")
	}
	if s := c.Counters(); s.Closes[CloseCanceled] != 1 {
		t.Errorf("Counters() = %+v; want one canceled close", s)
	}
	// A canceled context fails at once.
	if _, err := c.Do(ctx, &Request{Path: "/"}); Classify(err) != Canceled {
		t.Errorf("Do(canceled ctx) = %v; want Canceled", err)
	}
}

func TestCloseInterruptsRequest(t *testing.T) {
	srv := startRaw(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	c := mustNew(t, srv.URL(), Options{Timeout: time.Minute})
	done := make(chan error)
	go func() {
		_, err := c.Do(context.Background(), &Request{Path: "/"})
		done <- err
	}()
	waitFor(t, "the request to be in flight", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.mu.active != nil
	})
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Do during Close = %v; want ErrClosed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Do did not return after Close")
	}
	if s := c.Counters(); s.Open != 0 || s.Closes[CloseClient] != 1 {
		t.Errorf("Counters() = %+v; want 0 open, 1 client close", s)
	}
}

func TestCountersAggregate(t *testing.T) {
	srv := startRaw(t, serveFixed(okResponse("x")))
	var agg Counters
	before := Totals()
	for i := 0; i < 3; i++ {
		c := mustNew(t, srv.URL(), Options{Counters: &agg})
		get(t, c, "/")
		c.Close()
	}
	s := agg.Snapshot()
	if s.Connects != 3 || s.Open != 0 || s.Closes[CloseClient] != 3 {
		t.Errorf("aggregate = %+v; want 3 connects, 3 client closes", s)
	}
	if after := Totals(); after.Connects-before.Connects < 3 {
		t.Errorf("Totals().Connects grew by %d; want >= 3", after.Connects-before.Connects)
	}
}

func TestStatsName(t *testing.T) {
	if got := (&Request{Path: "/a?id=1"}).StatsName(); got != "/a?id=1" {
		t.Errorf("StatsName() = %q", got)
	}
	if got := (&Request{Path: "/a?id=1", Name: "/a?id=[id]"}).StatsName(); got != "/a?id=[id]" {
		t.Errorf("StatsName() = %q", got)
	}
}

func TestResponseOwnsBytes(t *testing.T) {
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			if _, _, err := readRequest(br); err != nil {
				return
			}
			io.WriteString(c, okResponse(strings.Repeat(string(rune('a'+i%26)), 100)))
		}
	})
	c := mustNew(t, srv.URL(), Options{})
	first := get(t, c, "/")
	keep := first.Body
	for i := 0; i < 20; i++ {
		get(t, c, "/")
	}
	if string(keep) != strings.Repeat("a", 100) {
		t.Errorf("first Body changed to %q after more requests", keep)
	}
}

func TestContextDeadline(t *testing.T) {
	srv := startRaw(t, func(c net.Conn) { io.Copy(io.Discard, c) }) // never answers
	c := mustNew(t, srv.URL(), Options{Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Do(ctx, &Request{Path: "/"})
	if Classify(err) != ReadTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do past the context deadline = %v; want ReadTimeout wrapping context.DeadlineExceeded", err)
	}
	connects := c.Counters().Connects
	for i := 0; i < 3; i++ {
		if _, err := c.Do(ctx, &Request{Path: "/"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do with an expired context = %v; want context.DeadlineExceeded", err)
		}
	}
	if got := c.Counters().Connects; got != connects {
		t.Errorf("Do with an expired context connected (%d -> %d connects)", connects, got)
	}
}

// TestResponseReused: the first request of a Client connects (Reused
// false), the next ones reuse the connection, and a request that had to
// reconnect (the server closed the idle connection, or it was retried) is
// not reused.
func TestResponseReused(t *testing.T) {
	var mu sync.Mutex
	closeNext := false
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, _, err := readRequest(br); err != nil {
				return
			}
			// The flag is read before the response goes out: read after,
			// it could be the client's next setting, meant for the next
			// request.
			mu.Lock()
			cl := closeNext
			closeNext = false
			mu.Unlock()
			io.WriteString(c, okResponse("x"))
			if cl {
				c.Close()
				return
			}
		}
	})
	c := mustNew(t, srv.URL(), Options{})
	want := []bool{false, true, true}
	for i, w := range want {
		resp, err := c.Do(context.Background(), &Request{Path: "/"})
		if err != nil || resp.Reused != w {
			t.Fatalf("request %d: Reused = %v, err %v; want %v", i, resp.Reused, err, w)
		}
	}
	mu.Lock()
	closeNext = true
	mu.Unlock()
	get(t, c, "/") // the server closes after this one
	resp, err := c.Do(context.Background(), &Request{Path: "/"})
	if err != nil || resp.Reused {
		t.Errorf("after the server closed: Reused = %v, err %v; want false (reconnected)", resp.Reused, err)
	}
	if s := c.Counters(); s.Reconnects != 1 || s.Connecting != 0 {
		t.Errorf("Counters() = %+v; want 1 reconnect, 0 connecting", s)
	}
}

// TestCountersExchangeErrors: a failure on an open connection is counted in
// Errors by kind, a failed connect in ConnectErrors only.
func TestCountersExchangeErrors(t *testing.T) {
	srv := startRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, _, err := readRequest(br); err != nil {
			return
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close() // RST, no response
	})
	c := mustNew(t, srv.URL(), Options{})
	_, err := c.Do(context.Background(), &Request{Path: "/"})
	k := Classify(err)
	if k != Reset && k != EOFBeforeResponse {
		t.Fatalf("Do = %v (%v); want a reset or EOF", err, k)
	}
	s := c.Counters()
	if s.Errors[k] != 1 || s.TotalErrors() != 1 || s.TotalConnectErrors() != 0 {
		t.Errorf("Counters() = %+v; want Errors[%v] = 1 and no connect errors", s, k)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c2 := mustNew(t, "http://"+addr, Options{})
	if _, err := c2.Do(context.Background(), &Request{Path: "/"}); Classify(err) != Refused {
		t.Fatalf("Do to a closed port = %v; want Refused", err)
	}
	s = c2.Counters()
	if s.ConnectErrors[Refused] != 1 || s.TotalErrors() != 0 {
		t.Errorf("Counters() = %+v; want ConnectErrors[refused] = 1, no exchange errors", s)
	}
}
