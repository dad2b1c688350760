package httpc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestPhases checks each request's phases against servers on loopback: a
// new connection has a connect time, a reused one none; https adds a TLS
// handshake; a host name adds DNS; and DNS + Connect + TLS ≤ TTFB ≤
// TTFB + Body ≤ Duration every time.
func TestPhases(t *testing.T) {
	slowBody := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "8")
		w.WriteHeader(200)
		_, _ = w.Write([]byte("abcd"))
		w.(http.Flusher).Flush()
		time.Sleep(60 * time.Millisecond) // the body's second half comes later
		_, _ = w.Write([]byte("efgh"))
	}
	plain := httptest.NewServer(http.HandlerFunc(slowBody))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(slowBody))
	defer secure.Close()
	for _, tc := range []struct {
		name          string
		base          string
		dns, tls      bool
		wantMinBodyMs int
	}{
		{"ip", plain.URL, false, false, 30},
		{"host name", strings.Replace(plain.URL, "127.0.0.1", "localhost", 1), true, false, 30},
		{"tls", secure.URL, false, true, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustNew(t, tc.base, Options{InsecureSkipVerify: true})
			defer c.Close()
			for i, newConn := range []bool{true, false} {
				var resp Response
				if err := c.DoInto(context.Background(), &Request{Path: "/"}, &resp); err != nil {
					if tc.dns && strings.Contains(err.Error(), "no such host") {
						t.Skip("localhost does not resolve here")
					}
					t.Fatal(err)
				}
				p := resp.Phases
				if string(resp.Body) != "abcdefgh" {
					t.Fatalf("request %d: body %q", i, resp.Body)
				}
				if p.HasConnect != newConn || p.HasDNS != (newConn && tc.dns) || p.HasTLS != (newConn && tc.tls) {
					t.Errorf("request %d (new connection %v): phases %+v", i, newConn, p)
				}
				if newConn && p.Connect <= 0 || !newConn && (p.Connect != 0 || p.DNS != 0 || p.TLS != 0) {
					t.Errorf("request %d (new connection %v): connect %v, dns %v, tls %v", i, newConn, p.Connect, p.DNS, p.TLS)
				}
				if tc.tls && newConn && p.TLS <= 0 || tc.dns && newConn && p.DNS <= 0 {
					t.Errorf("request %d: tls %v, dns %v; want > 0", i, p.TLS, p.DNS)
				}
				if p.DNS+p.Connect+p.TLS > p.TTFB || p.TTFB <= 0 || p.TTFB+p.Body > resp.Duration {
					t.Errorf("request %d: dns %v + connect %v + tls %v ≤ ttfb %v, ttfb + body %v ≤ duration %v does not hold",
						i, p.DNS, p.Connect, p.TLS, p.TTFB, p.Body, resp.Duration)
				}
				// The client may see the first byte late on a busy machine
				// (not before the server sent it): half the server's pause
				// is the bound.
				if p.Body < time.Duration(tc.wantMinBodyMs)*time.Millisecond {
					t.Errorf("request %d: body time %v; the server sent the second half 60 ms after the first", i, p.Body)
				}
			}
		})
	}
}

// TestPhasesRefused: a failed connect keeps its connect time and no TTFB.
func TestPhasesRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := mustNew(t, url, Options{})
	defer c.Close()
	var resp Response
	if err := c.DoInto(context.Background(), &Request{Path: "/"}, &resp); err == nil {
		t.Fatal("request to a closed port succeeded")
	}
	if p := resp.Phases; !p.HasConnect || p.TTFB != 0 || p.Body != 0 {
		t.Errorf("phases %+v; want a connect attempt and no TTFB", p)
	}
}
