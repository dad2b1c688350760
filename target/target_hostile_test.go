package target

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// /bytes/N's edge sizes and forms: each answers the exact size or a 400,
// never a truncated or wrapped size.
func TestBytesHostileSizes(t *testing.T) {
	s := startServer(t, Options{})
	for _, tt := range []struct {
		path   string
		status int
		size   int
	}{
		{"/bytes/016777216", 200, MaxObjectSize}, // 9 digits with a leading 0
		{"/bytes/0000000001", 400, -1},           // 10 digits
		{"/bytes/99999999999999999999", 400, -1}, // would wrap an int
		{"/bytes/4294967297", 400, -1},           // 2^32+1
		{"/bytes/1/", 400, -1},
		{"/bytes/+1", 400, -1},
		{"/bytes/1.0", 400, -1},
		{"/bytes/%31", 200, 1}, // decoded "1"
		{"/bytes/1?x=2", 200, 1},
		{"/bytes/ 1", 400, -1},
	} {
		t.Run(tt.path, func(t *testing.T) {
			status, body := rawGet(t, s.Addr().String(), tt.path)
			if status != tt.status || (tt.size >= 0 && len(body) != tt.size) {
				t.Fatalf("GET %s = %d with %d bytes; want %d with %d", tt.path, status, len(body), tt.status, tt.size)
			}
		})
	}
}

// rawGet sends one GET with the path as given (no client-side cleaning)
// and reads the response.
func rawGet(t *testing.T, addr, path string) (int, []byte) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %q: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// A pipelined flood (2,000 requests in one write, big and small objects)
// gets every answer in order; a slowloris connection (a request never
// finished) and TLS garbage on an HTTPS target do not stop other clients.
func TestTargetHostileClients(t *testing.T) {
	t.Run("pipelined flood", func(t *testing.T) {
		s := startServer(t, Options{})
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(40 * time.Second))
		const n = 2000
		var req strings.Builder
		for i := range n {
			size := i % 7
			if i%500 == 499 {
				size = MaxObjectSize
			}
			fmt.Fprintf(&req, "GET /bytes/%d HTTP/1.1\r\nHost: x\r\n\r\n", size)
		}
		go func() { _, _ = io.WriteString(c, req.String()) }()
		br := bufio.NewReader(c)
		for i := range n {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("response %d: %v", i, err)
			}
			nb, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			want := int64(i % 7)
			if i%500 == 499 {
				want = MaxObjectSize
			}
			if err != nil || resp.StatusCode != 200 || nb != want {
				t.Fatalf("response %d: %d, %d bytes, %v; want %d bytes", i, resp.StatusCode, nb, err, want)
			}
		}
	})
	t.Run("slowloris", func(t *testing.T) {
		s := startServer(t, Options{})
		slow, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer slow.Close()
		if _, err := io.WriteString(slow, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
		for range 20 { // others are served meanwhile
			if status, _ := rawGet(t, s.Addr().String(), "/bytes/10"); status != 200 {
				t.Fatalf("status %d beside a slowloris", status)
			}
			_, _ = io.WriteString(slow, "a")
		}
	})
	t.Run("tls garbage", func(t *testing.T) {
		cert, err := SelfSigned("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		s := startServer(t, Options{TLS: ServerTLS(cert)})
		for _, junk := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "\x16\x03\x01\xff\xff" + strings.Repeat("\x00", 100), "\x16\x03\x03\x00\x05hello"} {
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			_, _ = io.WriteString(c, junk)
			_, err = io.ReadAll(c) // the server ends the connection
			_ = c.Close()
			if err != nil {
				t.Fatalf("after %q: %v (not closed by the server)", junk, err)
			}
		}
		tc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test's self-signed certificate
		resp, err := tc.Get(s.URL() + "/bytes/5")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) != 5 {
			t.Fatalf("after the garbage: %d, %d bytes", resp.StatusCode, len(b))
		}
	})
}
