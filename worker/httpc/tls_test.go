package httpc

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure "+r.Proto)
	}))
	defer srv.Close()

	// Certificate not trusted: a TLS certificate connect error.
	c := mustNew(t, srv.URL, Options{})
	_, err := c.Do(context.Background(), &Request{Path: "/"})
	if Classify(err) != TLSCertificate || !strings.HasPrefix(err.Error(), "SSLCertVerificationError(") {
		t.Errorf("Do with an untrusted certificate = %v; want a TLS certificate failure", err)
	}
	if s := c.Counters(); s.ConnectErrors[TLSCertificate] != 1 || s.Connects != 0 {
		t.Errorf("Counters() = %+v; want one TLS connect error", s)
	}

	// InsecureSkipVerify, and a TLSConfig that would offer h2: the client
	// must still speak HTTP/1.1 over one kept-alive connection.
	c = mustNew(t, srv.URL, Options{InsecureSkipVerify: true, TLSConfig: &tls.Config{NextProtos: []string{"h2", "http/1.1"}}})
	for i := 0; i < 3; i++ {
		resp, err := c.Do(context.Background(), &Request{Path: "/"})
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Body) != "secure HTTP/1.1" {
			t.Errorf("body = %q; want secure HTTP/1.1", resp.Body)
		}
	}
	if s := c.Counters(); s.Connects != 1 {
		t.Errorf("Counters() = %+v; want one connection", s)
	}

	// Trusted through the caller's RootCAs.
	c = mustNew(t, srv.URL, Options{TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	if _, err := c.Do(context.Background(), &Request{Path: "/"}); err != nil {
		t.Errorf("Do with the server's CA = %v", err)
	}
}

func TestLocalAddr(t *testing.T) {
	remotes := make(chan string, 1)
	srv := startRaw(t, func(c net.Conn) {
		remotes <- c.RemoteAddr().(*net.TCPAddr).IP.String()
		serveFixed(okResponse("x"))(c)
	})
	c := mustNew(t, srv.URL(), Options{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}})
	if _, err := c.Do(context.Background(), &Request{Path: "/"}); err != nil {
		t.Fatal(err)
	}
	if got := <-remotes; got != "127.0.0.2" {
		t.Errorf("server saw the client at %s; want 127.0.0.2", got)
	}
}
