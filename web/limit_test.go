package web_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/web/webtest"
)

// countingListener counts the connections open through it (accepted and
// not yet closed by the server) and the most ever open at once.
type countingListener struct {
	net.Listener
	open, max, accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	n := l.open.Add(1)
	for m := l.max.Load(); n > m && !l.max.CompareAndSwap(m, n); m = l.max.Load() {
	}
	return &countingConn{Conn: c, l: l}, nil
}

type countingConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countingConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// serveOn serves srv on ln until the test ends, then checks that Serve
// returns nil.
func serveOn(t *testing.T, srv *web.Server, ln net.Listener) {
	t.Helper()
	testpeer.Go(t, "Serve", 30*time.Second, func(ctx context.Context) {
		if err := srv.Serve(ctx, ln); err != nil {
			t.Errorf("Serve = %v; want nil after cancel", err)
		}
	})
}

// TestSlowBodiesAreCutAndConnectionsCapped checks the defences against
// clients that hold connections (issue 20 item 5: slow request bodies were
// never timed out and exhausted the master's file descriptors): a body
// sent slower than ReadTimeout is cut, no more than MaxConns connections
// are ever open, and a normal request succeeds afterwards.
func TestSlowBodiesAreCutAndConnectionsCapped(t *testing.T) {
	const maxConns, clients = 8, 40
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: base}
	srv := web.New(web.Options{ReadTimeout: 300 * time.Millisecond, MaxConns: maxConns}, webtest.New(webtest.Options{}))
	serveOn(t, srv, ln)
	addr := base.Addr().String()

	// Each client sends its headers and the start of a 100 kB body, then
	// nothing more.
	conns := make([]net.Conn, clients)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "POST /swarm HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\nuser_count=1"); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	// Every slow client is cut: its connection ends (EOF or a reset) well
	// before its own deadline, the cap letting the next ones in as the
	// first are cut.
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err := io.Copy(io.Discard, c)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("slow client %d was not cut within 20 s (ReadTimeout 300ms)", i)
		}
	}
	if got := ln.accepted.Load(); got != clients {
		t.Errorf("connections accepted = %d; want %d", got, clients)
	}
	if got := ln.max.Load(); got > maxConns || got < maxConns {
		t.Errorf("most connections open at once = %d; want the cap, %d", got, maxConns)
	}
	res, err := http.Get("http://" + addr + "/stats/requests")
	if err != nil {
		t.Fatalf("GET /stats/requests after the slow clients: %v", err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /stats/requests after the slow clients = %d; want 200", res.StatusCode)
	}
}

// TestCapWaitsInsteadOfRefusing checks that a connection over the cap is
// not refused but served once another closes.
func TestCapWaitsInsteadOfRefusing(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: base}
	srv := web.New(web.Options{MaxConns: 1}, webtest.New(webtest.Options{}))
	serveOn(t, srv, ln)
	idle, err := net.Dial("tcp", base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	testpeer.Eventually(t, 10*time.Second, "the first connection accepted", func() bool { return ln.accepted.Load() == 1 })
	type result struct {
		code int
		err  error
	}
	got := make(chan result, 1)
	go func() {
		res, err := http.Get("http://" + base.Addr().String() + "/worker-count")
		if err != nil {
			got <- result{err: err}
			return
		}
		res.Body.Close()
		got <- result{code: res.StatusCode}
	}()
	select {
	case r := <-got:
		t.Fatalf("request over the cap answered (%d, %v) while the cap was held; want it to wait", r.code, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	if n := ln.accepted.Load(); n != 1 {
		t.Fatalf("accepted %d connections at cap 1", n)
	}
	idle.Close()
	select {
	case r := <-got:
		if r.err != nil || r.code != http.StatusOK {
			t.Fatalf("request after the cap freed = %d, %v; want 200", r.code, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("request over the cap not served within 10 s of a slot freeing")
	}
}

// slowStopRunner is a runner whose Stop takes a while, as a master's does
// while its workers stop their users.
type slowStopRunner struct {
	*webtest.Runner
	d time.Duration
}

func (r slowStopRunner) Stop(ctx context.Context) error {
	t := time.NewTimer(r.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return r.Runner.Stop(ctx)
}

// TestStopOutlastsWriteTimeout checks that GET /stop, synchronous as in
// Locust, still gets its reply when stopping takes longer than
// WriteTimeout.
func TestStopOutlastsWriteTimeout(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := slowStopRunner{Runner: webtest.New(webtest.Options{}), d: 600 * time.Millisecond}
	srv := web.New(web.Options{WriteTimeout: 200 * time.Millisecond}, r)
	serveOn(t, srv, base)
	res, err := http.Get("http://" + base.Addr().String() + "/stop")
	if err != nil {
		t.Fatalf("GET /stop with a stop slower than WriteTimeout: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("GET /stop = %d %q, %v; want 200 and the reply", res.StatusCode, body, err)
	}
}
