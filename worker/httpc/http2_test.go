package httpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// h2Server is a Go HTTP/2 server, over TLS (h2) or plain (h2c prior
// knowledge), counting its connections.
type h2Server struct {
	*httptest.Server
	conns atomic.Int64
}

func startH2(t *testing.T, tlsOn bool, h http.HandlerFunc) *h2Server {
	t.Helper()
	s := &h2Server{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	if tlsOn {
		s.EnableHTTP2 = true
		s.StartTLS()
	} else {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		s.Config.Protocols = &p
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func h2Options(s *h2Server, streams int) Options {
	o := Options{HTTP2: true, HTTP2Streams: streams}
	if s.TLS != nil {
		o.TLSConfig = &tls.Config{RootCAs: s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	}
	return o
}

func TestHTTP2ConcurrentStreamsOneConnection(t *testing.T) {
	for _, tlsOn := range []bool{true, false} {
		name := map[bool]string{true: "h2", false: "h2c"}[tlsOn]
		t.Run(name, func(t *testing.T) {
			const n = 8
			var arrived atomic.Int64
			release := make(chan struct{})
			srv := startH2(t, tlsOn, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/barrier" && arrived.Add(1) == n {
					close(release)
				}
				if r.URL.Path == "/barrier" {
					select {
					case <-release:
					case <-time.After(10 * time.Second):
					}
				}
				http.SetCookie(w, &http.Cookie{Name: "s", Value: "1"})
				io.WriteString(w, r.Proto+" "+r.Header.Get("User-Agent")+" "+r.Header.Get("Cookie"))
			})
			c := mustNew(t, srv.URL, h2Options(srv, n))
			// The first request sets the cookie.
			resp, err := c.Do(context.Background(), &Request{Path: "/"})
			if err != nil || string(resp.Body) != "HTTP/2.0 cicada " {
				t.Fatalf("Do = %v, %q; want HTTP/2.0", err, resp.Body)
			}
			// n concurrent requests of one Client must all be in flight at
			// once (the handler waits for all of them) on one connection.
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for range n {
				wg.Go(func() {
					resp, err := c.Do(context.Background(), &Request{Path: "/barrier"})
					if err == nil && string(resp.Body) != "HTTP/2.0 cicada s=1" {
						err = errors.New("body " + string(resp.Body))
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			if got := srv.conns.Load(); got != 1 {
				t.Errorf("server saw %d connections; want 1", got)
			}
			s := c.Counters()
			if s.Connects != 1 || s.Open != 1 {
				t.Errorf("counters = %+v; want one open connection", s)
			}
			if tlsOn && s.TLSHandshakes != 1 {
				t.Errorf("TLSHandshakes = %d; want 1", s.TLSHandshakes)
			}
			c.Close()
			if s := c.Counters(); s.Open != 0 || s.Closes[CloseClient] != 1 {
				t.Errorf("after Close: counters = %+v; want closed by the client", s)
			}
		})
	}
}

func TestHTTP2StreamsBound(t *testing.T) {
	var inFlight, peak atomic.Int64
	srv := startH2(t, false, func(w http.ResponseWriter, r *http.Request) {
		v := inFlight.Add(1)
		for {
			p := peak.Load()
			if v <= p || peak.CompareAndSwap(p, v) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond) // holds the stream open; not synchronisation
		inFlight.Add(-1)
	})
	c := mustNew(t, srv.URL, h2Options(srv, 2))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.Do(context.Background(), &Request{Path: "/"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 2 || p < 1 {
		t.Errorf("peak concurrent streams = %d; want at most HTTP2Streams = 2", p)
	}
}

func TestHTTP2ResetStreamCounted(t *testing.T) {
	srv := startH2(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/abort" {
			panic(http.ErrAbortHandler) // the server resets the stream
		}
		io.WriteString(w, "ok")
	})
	c := mustNew(t, srv.URL, h2Options(srv, 0))
	_, err := c.Do(context.Background(), &Request{Path: "/abort"})
	if Classify(err) != Reset {
		t.Fatalf("Do(/abort) = %v (%v); want a Reset failure", err, Classify(err))
	}
	resp, err := c.Do(context.Background(), &Request{Path: "/"})
	if err != nil || string(resp.Body) != "ok" || !resp.Reused {
		t.Fatalf("Do after the reset = %v, %q, reused %v; want ok on the same connection", err, resp.Body, resp.Reused)
	}
	if s := c.Counters(); s.H2ResetStreams != 1 || s.Errors[Reset] != 1 || s.Connects != 1 {
		t.Errorf("counters = %+v; want one RST_STREAM, one Reset error, one connection", s)
	}
}

// TestHTTP2GoAway: a server that answers one request and then sends
// GOAWAY; the next request opens a new connection.
func TestHTTP2GoAway(t *testing.T) {
	srv := startRaw(t, func(c net.Conn) {
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		fr := http2.NewFramer(c, c)
		fr.WriteSettings()
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if hf, ok := f.(*http2.HeadersFrame); ok {
				var hb bytes.Buffer
				hb.Write([]byte{0x88}) // :status 200, HPACK static table
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: hf.StreamID, BlockFragment: hb.Bytes(), EndHeaders: true})
				fr.WriteData(hf.StreamID, true, []byte("bye"))
				fr.WriteGoAway(hf.StreamID, http2.ErrCodeNo, nil)
				return // as a server that shuts down: no stream after the last one
			}
		}
	})
	c := mustNew(t, srv.URL(), Options{HTTP2: true})
	for i := range 3 {
		resp, err := c.Do(context.Background(), &Request{Path: "/"})
		if err != nil || string(resp.Body) != "bye" || resp.StatusCode != 200 {
			t.Fatalf("Do #%d = %v, %d %q; want 200 bye", i, err, resp.StatusCode, resp.Body)
		}
	}
	testpeer.Eventually(t, 5*time.Second, "three GOAWAYs counted", func() bool { return c.Counters().H2GoAways == 3 })
	if s := c.Counters(); s.Connects != 3 || s.Reconnects != 2 || s.Closes[CloseServerRequested] != 2 {
		t.Errorf("counters = %+v; want three connections, two closed after GOAWAY", s)
	}
}

func TestHTTP2RequiresALPN(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c := mustNew(t, srv.URL, Options{HTTP2: true, InsecureSkipVerify: true, TLS: TLSOptions{ALPN: []string{"h2", "http/1.1"}}})
	_, err := c.Do(context.Background(), &Request{Path: "/"})
	if !errors.Is(err, ErrNoH2) || Classify(err) != TLS {
		t.Fatalf("Do against an HTTP/1.1-only TLS server = %v; want ErrNoH2, kind TLS", err)
	}
}

func TestHTTP2TimeoutAndBodyLimit(t *testing.T) {
	srv := startH2(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		w.Write(bytes.Repeat([]byte("x"), 2000))
	})
	o := h2Options(srv, 0)
	o.Timeout = 100 * time.Millisecond
	o.MaxResponseBodySize = 1000
	c := mustNew(t, srv.URL, o)
	if _, err := c.Do(context.Background(), &Request{Path: "/slow"}); Classify(err) != ReadTimeout {
		t.Errorf("Do(/slow) = %v; want a ReadTimeout", err)
	}
	if _, err := c.Do(context.Background(), &Request{Path: "/big"}); Classify(err) != BodyTooLarge {
		t.Errorf("Do(/big) = %v; want BodyTooLarge", err)
	}
	if _, err := c.Do(context.Background(), &Request{Path: "http://other.example/"}); Classify(err) != InvalidRequest {
		t.Errorf("Do(other origin) = %v; want InvalidRequest", err)
	}
}

func TestFrameScanner(t *testing.T) {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 10})
	fr.WriteRSTStream(1, http2.ErrCodeCancel)
	fr.WriteData(3, true, bytes.Repeat([]byte{7}, 300))
	fr.WriteGoAway(3, http2.ErrCodeNo, []byte("debug"))
	want := []uint8{0x4, 0x3, 0x0, 0x7}
	for chunk := 1; chunk <= b.Len(); chunk += 7 {
		var fs frameScanner
		var got []uint8
		data := b.Bytes()
		for len(data) > 0 {
			n := min(chunk, len(data))
			fs.scan(data[:n], func(typ uint8) { got = append(got, typ) })
			data = data[n:]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("chunks of %d: frame types %v; want %v", chunk, got, want)
		}
	}
}

func FuzzFrameScanner(f *testing.F) {
	f.Add([]byte{0, 0, 0, 7, 0, 0, 0, 0, 0}, 3)
	f.Add(bytes.Repeat([]byte{0, 0, 1, 3, 0, 0, 0, 0, 1, 9}, 3), 5)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		var whole, parts []uint8
		var a, b frameScanner
		a.scan(data, func(typ uint8) { whole = append(whole, typ) })
		if split < 0 {
			split = -split
		}
		if len(data) > 0 {
			split %= len(data) + 1
		} else {
			split = 0
		}
		b.scan(data[:split], func(typ uint8) { parts = append(parts, typ) })
		b.scan(data[split:], func(typ uint8) { parts = append(parts, typ) })
		if !slices.Equal(whole, parts) || a != b {
			t.Fatalf("split at %d: %v vs %v", split, whole, parts)
		}
		if len(whole) > len(data)/9 {
			t.Fatalf("%d frames in %d bytes", len(whole), len(data))
		}
	})
}

// BenchmarkHTTP2Do: one user's requests over h2c to a Go server in the
// same process, 8 streams in flight (go test -bench HTTP2 -benchtime 2000x).
func BenchmarkHTTP2Do(b *testing.B) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello\n") }))
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	defer srv.Close()
	c, err := New(srv.URL, Options{HTTP2: true, HTTP2Streams: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := &Request{Path: "/"}
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		var resp Response
		for pb.Next() {
			if err := c.DoInto(context.Background(), req, &resp); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestHTTP2ConcurrentFirstRequests: streams that start together on a new
// Client share the one connection the first of them dials.
func TestHTTP2ConcurrentFirstRequests(t *testing.T) {
	srv := startH2(t, true, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	c := mustNew(t, srv.URL, h2Options(srv, 0))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := c.Do(context.Background(), &Request{Path: "/"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, s := srv.conns.Load(), c.Counters(); got != 1 || s.Connects != 1 || s.TLSHandshakes != 1 {
		t.Errorf("server saw %d connections, counters %+v; want one connection and handshake", got, s)
	}
	c.Close()
	if _, err := c.Do(context.Background(), &Request{Path: "/"}); Classify(err) != ClientClosed {
		t.Errorf("Do after Close = %v; want ClientClosed", err)
	}
}

// TestHTTP2RefusedStreamRetried: a stream the server refuses
// (RST_STREAM REFUSED_STREAM: not processed) is sent once more, as x/net's
// Transport does; a second refusal is the request's failure.
func TestHTTP2RefusedStreamRetried(t *testing.T) {
	for _, tt := range []struct {
		refuse int // streams refused before the server answers
		ok     bool
	}{{1, true}, {2, false}} {
		srv := startRaw(t, func(c net.Conn) {
			preface := make([]byte, len(http2.ClientPreface))
			if _, err := io.ReadFull(c, preface); err != nil {
				return
			}
			fr := http2.NewFramer(c, c)
			fr.WriteSettings()
			refused := 0
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				hf, ok := f.(*http2.HeadersFrame)
				if !ok {
					continue
				}
				if refused < tt.refuse {
					refused++
					fr.WriteRSTStream(hf.StreamID, http2.ErrCodeRefusedStream)
					continue
				}
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: hf.StreamID, BlockFragment: []byte{0x88}, EndHeaders: true})
				fr.WriteData(hf.StreamID, true, []byte("ok"))
			}
		})
		c := mustNew(t, srv.URL(), Options{HTTP2: true})
		resp, err := c.Do(context.Background(), &Request{Path: "/"})
		if tt.ok && (err != nil || string(resp.Body) != "ok") {
			t.Errorf("refused %d: Do = %v, %q; want ok after one retry", tt.refuse, err, resp.Body)
		}
		if !tt.ok && Classify(err) != Reset {
			t.Errorf("refused %d: Do = %v; want a Reset failure", tt.refuse, err)
		}
		testpeer.Eventually(t, 5*time.Second, "the refusals counted", func() bool { return c.Counters().H2ResetStreams == int64(tt.refuse) })
	}
}
