package httpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// rawServer is a TCP server on 127.0.0.1 whose connection handler the test
// writes, to produce exactly the failures under test.
type rawServer struct {
	ln      net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
	accepts int
}

func startRaw(t testing.TB, handle func(c net.Conn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.accepts++
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				handle(c)
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *rawServer) URL() string { return "http://" + s.ln.Addr().String() }

func (s *rawServer) Accepts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepts
}

func (s *rawServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// readRequest reads one request head (and a Content-Length body) from br.
func readRequest(br *bufio.Reader) (head string, body []byte, err error) {
	var b strings.Builder
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", nil, err
		}
		b.WriteString(line)
		if strings.HasPrefix(strings.ToLower(line), "content-length:") {
			for _, ch := range strings.TrimSpace(line[len("content-length:"):]) {
				n = n*10 + int(ch-'0')
			}
		}
		if line == "\r\n" {
			break
		}
	}
	body = make([]byte, n)
	_, err = io.ReadFull(br, body)
	return b.String(), body, err
}

// serveFixed answers every request on the connection with resp.
func serveFixed(resp string) func(net.Conn) {
	return func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, _, err := readRequest(br); err != nil {
				return
			}
			if _, err := io.WriteString(c, resp); err != nil {
				return
			}
		}
	}
}

func okResponse(body string) string {
	return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

func mustNew(t testing.TB, base string, opts Options) *Client {
	t.Helper()
	c, err := New(base, opts)
	if err != nil {
		t.Fatalf("New(%q) = %v", base, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func get(t testing.TB, c *Client, path string) *Response {
	t.Helper()
	resp, err := c.Do(context.Background(), &Request{Path: path})
	if err != nil {
		t.Fatalf("Do(GET %s) = %v", path, err)
	}
	return resp
}

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = testpeer.RaceEnabled

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testpeer.Eventually(t, 10*time.Second, what, cond)
}

func asError(t testing.TB, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	return e
}

// fakeConn is an in-memory net.Conn that answers with fixed bytes.
type fakeConn struct {
	r       *bytes.Reader
	written bytes.Buffer
}

func (f *fakeConn) Read(p []byte) (int, error)         { return f.r.Read(p) }
func (f *fakeConn) Write(p []byte) (int, error)        { return f.written.Write(p) }
func (f *fakeConn) Close() error                       { return nil }
func (f *fakeConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (f *fakeConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (f *fakeConn) SetDeadline(t time.Time) error      { return nil }
func (f *fakeConn) SetReadDeadline(t time.Time) error  { return nil }
func (f *fakeConn) SetWriteDeadline(t time.Time) error { return nil }
