package target

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

func TestTLSServesHTTPS(t *testing.T) {
	cert, err := SelfSigned("127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Listen: "127.0.0.1:0", TLS: ServerTLS(cert)})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "target", 30*time.Second, func(ctx context.Context) {
		if err := s.Run(ctx); err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	if !strings.HasPrefix(s.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL %q", s.URL())
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	for _, name := range []string{"127.0.0.1", "localhost"} {
		cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: name, NextProtos: []string{"http/1.1"}}}}
		resp, err := cl.Get(s.URL() + "/bytes/1000")
		if err != nil {
			t.Fatalf("GET as %s: %v", name, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(body) != 1000 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "http/1.1" {
			t.Fatalf("GET as %s: %v %d, %d bytes, %+v", name, err, resp.StatusCode, len(body), resp.TLS)
		}
		cl.CloseIdleConnections()
	}
	// Plain HTTP on the TLS port fails; the server goes on.
	resp, err := http.Get("http://" + s.Addr().String() + "/")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered on the TLS port")
		}
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "other.example"}}}
	if _, err := cl.Get(s.URL() + "/"); err == nil {
		t.Fatal("a certificate for other names was accepted as other.example")
	}
	if c := s.Counters(); c.Requests != 2 {
		t.Fatalf("requests %d; want the 2 over TLS", c.Requests)
	}
}

func TestTLSOptions(t *testing.T) {
	cert, err := SelfSigned("198.18.1.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.Leaf.IPAddresses) != 1 || cert.Leaf.IPAddresses[0].String() != "198.18.1.1" || len(cert.Leaf.DNSNames) != 0 {
		t.Fatalf("SANs %v %v", cert.Leaf.IPAddresses, cert.Leaf.DNSNames)
	}
	fp := Fingerprint(cert)
	if !regexp.MustCompile(`^([0-9A-F]{2}:){31}[0-9A-F]{2}$`).MatchString(fp) {
		t.Fatalf("fingerprint %q", fp)
	}
	sum := sha256.Sum256(cert.Certificate[0])
	if got := strings.ToLower(strings.ReplaceAll(fp, ":", "")); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("fingerprint %q is not the certificate's SHA-256 %x", fp, sum)
	}
	if Fingerprint(tls.Certificate{}) != "" {
		t.Fatal("fingerprint of nothing")
	}
	for _, tt := range []struct {
		name string
		err  func() error
		want string
	}{
		{"no host", func() error { _, err := SelfSigned(); return err }, "at least one host"},
		{"bad host", func() error { _, err := SelfSigned("a b"); return err }, `host "a b"`},
		{"h2c", func() error {
			_, err := New(Options{Listen: "127.0.0.1:0", H2C: true, TLS: ServerTLS(cert)})
			return err
		}, "h2c is HTTP/2 in cleartext"},
		{"no key", func() error { _, err := LoadTLS("cert.pem", ""); return err }, "go together"},
		{"missing files", func() error { _, err := LoadTLS("/nonexistent/c.pem", "/nonexistent/k.pem"); return err }, "certificate /nonexistent/c.pem, key /nonexistent/k.pem"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v; want ErrTLS containing %q", err, tt.want)
			}
		})
	}
}
