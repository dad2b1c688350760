package httpc

import (
	"context"
	"crypto/tls"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// nginxTLS starts an https nginx with an access log, serving a
// certificate of spec from ca.
func nginxTLS(t *testing.T, ca *testpeer.TestCA, spec testpeer.CertSpec, cfg testpeer.NginxTLS) *testpeer.Nginx {
	t.Helper()
	dir := t.TempDir()
	cert, key, err := ca.MustIssue(t, spec).WriteFiles(dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	cfg.CertFile, cfg.KeyFile = cert, key
	return testpeer.StartNginx(t, testpeer.NginxConfig{TLS: &cfg, AccessLog: true})
}

func tlsLines(t *testing.T, n *testpeer.Nginx, want int) []testpeer.TLSLine {
	t.Helper()
	var lines []testpeer.TLSLine
	testpeer.Eventually(t, 10*time.Second, "nginx logs the requests", func() bool {
		var err error
		lines, err = n.TLSRequests()
		return err == nil && len(lines) >= want
	})
	return lines
}

// TestNginxTLSResumption counts full handshakes at nginx
// ($ssl_session_reused) with resumption off and on.
func TestNginxTLSResumption(t *testing.T) {
	ca := testpeer.MustTestCA(t)
	for _, tt := range []struct {
		name    string
		resume  bool
		version uint16
		want    string // per user: . full, r resumed
	}{
		{"off TLS 1.3", false, tls.VersionTLS13, "......"},
		{"on TLS 1.3", true, tls.VersionTLS13, ".rrrrr"},
		{"off TLS 1.2", false, tls.VersionTLS12, "......"},
		{"on TLS 1.2", true, tls.VersionTLS12, ".rrrrr"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := nginxTLS(t, ca, testpeer.CertSpec{}, testpeer.NginxTLS{})
			cfg, err := NewConfig(n.URL(), Options{TLSConfig: &tls.Config{RootCAs: ca.Pool},
				TLS: TLSOptions{SessionResumption: tt.resume, MinVersion: tt.version, MaxVersion: tt.version}})
			if err != nil {
				t.Fatal(err)
			}
			var counters Counters
			for range len(tt.want) {
				c := cfg.NewClient() // a new user: a new connection
				c.cfg.extra = &counters
				if _, err := c.Do(context.Background(), &Request{Path: "/"}); err != nil {
					t.Fatal(err)
				}
				c.Close()
			}
			var got strings.Builder
			for _, l := range tlsLines(t, n, len(tt.want)) {
				if l.Reused {
					got.WriteByte('r')
				} else {
					got.WriteByte('.')
				}
				if wantV := map[uint16]string{tls.VersionTLS12: "TLSv1.2", tls.VersionTLS13: "TLSv1.3"}[tt.version]; l.TLSVersion != wantV {
					t.Errorf("nginx logged %s; want %s", l.TLSVersion, wantV)
				}
			}
			if got.String() != tt.want {
				t.Errorf("nginx saw handshakes %q; want %q (. full, r resumed)", got.String(), tt.want)
			}
			s := counters.Snapshot()
			full := int64(strings.Count(tt.want, "."))
			if s.TLSHandshakes != full || s.TLSResumed != int64(len(tt.want))-full {
				t.Errorf("client counted %d full and %d resumed; want %d and %d", s.TLSHandshakes, s.TLSResumed, full, int64(len(tt.want))-full)
			}
		})
	}
}

// TestNginxTLSFailures: an expired certificate, a wrong server name and a
// version mismatch against nginx (OpenSSL) are classified.
func TestNginxTLSFailures(t *testing.T) {
	ca := testpeer.MustTestCA(t)
	tests := []struct {
		name string
		spec testpeer.CertSpec
		srv  testpeer.NginxTLS
		opts TLSOptions
		kind Kind
		msg  string
	}{
		{"expired", testpeer.CertSpec{NotBefore: time.Now().Add(-72 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}, testpeer.NginxTLS{}, TLSOptions{},
			TLSCertificate, "certificate has expired"},
		{"wrong server name", testpeer.CertSpec{Names: []string{"gateway.test"}}, testpeer.NginxTLS{}, TLSOptions{},
			TLSCertificate, "IP address mismatch, certificate is not valid for '127.0.0.1'."},
		{"server name override", testpeer.CertSpec{Names: []string{"gateway.test"}}, testpeer.NginxTLS{}, TLSOptions{ServerName: "other.test"},
			TLSCertificate, "Hostname mismatch, certificate is not valid for 'other.test'."},
		{"server TLS 1.3 only", testpeer.CertSpec{}, testpeer.NginxTLS{Protocols: "TLSv1.3"}, TLSOptions{MaxVersion: tls.VersionTLS12},
			TLSVersion, "SSLError(1, '[SSL: TLSV1_ALERT_PROTOCOL_VERSION] tlsv1 alert protocol version')"},
		{"server TLS 1.2 only", testpeer.CertSpec{}, testpeer.NginxTLS{Protocols: "TLSv1.2"}, TLSOptions{MinVersion: tls.VersionTLS13},
			TLSVersion, "SSLError(1, '[SSL: TLSV1_ALERT_PROTOCOL_VERSION] tlsv1 alert protocol version')"},
		{"no common cipher suite", testpeer.CertSpec{}, testpeer.NginxTLS{Protocols: "TLSv1.2"},
			TLSOptions{CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}},
			TLSAlert, "SSLError(1, '[SSL: SSLV3_ALERT_HANDSHAKE_FAILURE] sslv3 alert handshake failure')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := nginxTLS(t, ca, tt.spec, tt.srv)
			c := mustNew(t, n.URL(), Options{TLSConfig: &tls.Config{RootCAs: ca.Pool}, TLS: tt.opts})
			_, err := c.Do(context.Background(), &Request{Path: "/"})
			if Classify(err) != tt.kind || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Do = %v (%v); want kind %v with %q", err, Classify(err), tt.kind, tt.msg)
			}
			if s := c.Counters(); s.ConnectErrors[tt.kind] != 1 {
				t.Errorf("ConnectErrors = %v; want one %v", s.ConnectErrors, tt.kind)
			}
		})
	}
}

// TestNginxHTTP2 sends concurrent streams of one user to nginx over h2.
func TestNginxHTTP2(t *testing.T) {
	ca := testpeer.MustTestCA(t)
	n := nginxTLS(t, ca, testpeer.CertSpec{}, testpeer.NginxTLS{HTTP2: true})
	c := mustNew(t, n.URL(), Options{TLSConfig: &tls.Config{RootCAs: ca.Pool}, HTTP2: true, HTTP2Streams: 8})
	const total = 40
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range total / 8 {
				resp, err := c.Do(context.Background(), &Request{Path: "/"})
				if err != nil || string(resp.Body) != "hello\n" {
					t.Errorf("Do = %v, %q", err, resp.Body)
					return
				}
			}
		})
	}
	wg.Wait()
	lines := tlsLines(t, n, total)
	for _, l := range lines {
		if l.Protocol != "HTTP/2.0" || l.Status != "200" {
			t.Fatalf("nginx logged %+v; want 200 over HTTP/2.0", l)
		}
	}
	if s := c.Counters(); s.Connects != 1 || s.TLSHandshakes != 1 {
		t.Errorf("counters = %+v; want one connection, one handshake", s)
	}
}
