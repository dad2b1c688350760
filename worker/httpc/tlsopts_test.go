package httpc

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// tlsServer is a Go TLS server that counts full and resumed handshakes
// and answers every request with 200, closing the connection after each
// response when closeEach is set.
type tlsServer struct {
	*rawServer
	full, resumed atomic.Int64
}

func startTLS(t *testing.T, cfg *tls.Config, closeEach bool) *tlsServer {
	t.Helper()
	s := &tlsServer{}
	resp := okResponse("tls")
	if closeEach {
		resp = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\ntls"
	}
	s.rawServer = startRaw(t, func(c net.Conn) {
		tc := tls.Server(c, cfg)
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			return
		}
		if tc.ConnectionState().DidResume {
			s.resumed.Add(1)
		} else {
			s.full.Add(1)
		}
		serveFixed(resp)(tc)
	})
	return s
}

func (s *tlsServer) httpsURL() string { return strings.Replace(s.URL(), "http://", "https://", 1) }

func TestTLSFailuresClassified(t *testing.T) {
	ca := testpeer.MustTestCA(t)
	good := ca.MustIssue(t, testpeer.CertSpec{})
	expired := ca.MustIssue(t, testpeer.CertSpec{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	other := testpeer.MustTestCA(t)
	silent := startRaw(t, func(c net.Conn) { _, _ = c.Read(make([]byte, 1)) })

	tests := []struct {
		name   string
		server *tls.Config // nil: the silent server
		opts   Options
		kind   Kind
		msg    string
	}{
		{"expired certificate", &tls.Config{Certificates: []tls.Certificate{expired.TLS}}, Options{TLSConfig: &tls.Config{RootCAs: ca.Pool}},
			TLSCertificate, "SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired')"},
		{"wrong server name", &tls.Config{Certificates: []tls.Certificate{good.TLS}}, Options{TLSConfig: &tls.Config{RootCAs: ca.Pool}, TLS: TLSOptions{ServerName: "wrong.example"}},
			TLSCertificate, `SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch, certificate is not valid for 'wrong.example'.")`},
		{"unknown authority", &tls.Config{Certificates: []tls.Certificate{good.TLS}}, Options{TLSConfig: &tls.Config{RootCAs: other.Pool}},
			TLSCertificate, "SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate')"},
		{"server only 1.3, client at most 1.2", &tls.Config{Certificates: []tls.Certificate{good.TLS}, MinVersion: tls.VersionTLS13},
			Options{TLSConfig: &tls.Config{RootCAs: ca.Pool}, TLS: TLSOptions{MaxVersion: tls.VersionTLS12}},
			TLSVersion, "SSLError(1, '[SSL: TLSV1_ALERT_PROTOCOL_VERSION] tlsv1 alert protocol version')"},
		{"server at most 1.2, client only 1.3", &tls.Config{Certificates: []tls.Certificate{good.TLS}, MaxVersion: tls.VersionTLS12},
			Options{TLSConfig: &tls.Config{RootCAs: ca.Pool}, TLS: TLSOptions{MinVersion: tls.VersionTLS13}},
			TLSVersion, "SSLError(1, '[SSL: TLSV1_ALERT_PROTOCOL_VERSION] tlsv1 alert protocol version')"},
		{"client certificate required", &tls.Config{Certificates: []tls.Certificate{good.TLS}, ClientAuth: tls.RequireAnyClientCert, MaxVersion: tls.VersionTLS12},
			Options{TLSConfig: &tls.Config{RootCAs: ca.Pool}},
			TLSAlert, "SSLError(1, '[SSL: SSLV3_ALERT_HANDSHAKE_FAILURE] sslv3 alert handshake failure')"},
		{"handshake timeout", nil, Options{ConnectTimeout: 200 * time.Millisecond},
			TLSTimeout, "TimeoutError('The handshake operation timed out')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := strings.Replace(silent.URL(), "http://", "https://", 1)
			if tt.server != nil {
				url = startTLS(t, tt.server, false).httpsURL()
			}
			var counters Counters
			tt.opts.Counters = &counters
			c := mustNew(t, url, tt.opts)
			_, err := c.Do(context.Background(), &Request{Path: "/"})
			if Classify(err) != tt.kind || err.Error() != tt.msg {
				t.Errorf("Do = %v (kind %v); want kind %v, %s", err, Classify(err), tt.kind, tt.msg)
			}
			if s := counters.Snapshot(); s.ConnectErrors[tt.kind] != 1 || s.TLSHandshakes != 0 {
				t.Errorf("counters = %+v; want one %v connect error, no handshake", s, tt.kind)
			}
			if tt.kind.GeneratorSide() {
				t.Errorf("%v is generator-side; want the server's side", tt.kind)
			}
		})
	}
}

func TestTLSResumption(t *testing.T) {
	ca := testpeer.MustTestCA(t)
	cert := ca.MustIssue(t, testpeer.CertSpec{})
	for _, tt := range []struct {
		name                string
		resume              bool
		version             uint16
		wantFull, wantResum int64
	}{
		{"off", false, 0, 5, 0},
		{"on", true, 0, 1, 4},
		{"on, TLS 1.2", true, tls.VersionTLS12, 1, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startTLS(t, &tls.Config{Certificates: []tls.Certificate{cert.TLS}}, true)
			cfg, err := NewConfig(srv.httpsURL(), Options{TLSConfig: &tls.Config{RootCAs: ca.Pool},
				TLS: TLSOptions{SessionResumption: tt.resume, MaxVersion: tt.version}})
			if err != nil {
				t.Fatal(err)
			}
			// Two users of one Config: the session cache is shared.
			users := []*Client{cfg.NewClient(), cfg.NewClient()}
			var counters CountersSnapshot
			for i := range 5 {
				c := users[i%2]
				if _, err := c.Do(context.Background(), &Request{Path: "/"}); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range users {
				s := c.Counters()
				counters.TLSHandshakes += s.TLSHandshakes
				counters.TLSResumed += s.TLSResumed
				counters.TLSHandshakeTime += s.TLSHandshakeTime
				c.Close()
			}
			testpeer.Eventually(t, 5*time.Second, "the server counts 5 handshakes", func() bool {
				return srv.full.Load()+srv.resumed.Load() == 5
			})
			if srv.full.Load() != tt.wantFull || srv.resumed.Load() != tt.wantResum {
				t.Errorf("server saw %d full and %d resumed handshakes; want %d and %d", srv.full.Load(), srv.resumed.Load(), tt.wantFull, tt.wantResum)
			}
			if counters.TLSHandshakes != tt.wantFull || counters.TLSResumed != tt.wantResum || counters.TLSHandshakeTime <= 0 {
				t.Errorf("client counted %+v; want %d full, %d resumed, a handshake time", counters.TLSCounts, tt.wantFull, tt.wantResum)
			}
		})
	}
}

func TestTLSFilesAndClientCertificate(t *testing.T) {
	ca := testpeer.MustTestCA(t)
	dir := t.TempDir()
	caFile, err := ca.WriteCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	srvCert := ca.MustIssue(t, testpeer.CertSpec{Names: []string{"gateway.test"}})
	certFile, keyFile, err := ca.MustIssue(t, testpeer.CertSpec{Names: []string{"user"}, Client: true}).WriteFiles(dir, "client")
	if err != nil {
		t.Fatal(err)
	}
	srv := startTLS(t, &tls.Config{Certificates: []tls.Certificate{srvCert.TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool}, false)
	c := mustNew(t, srv.httpsURL(), Options{TLS: TLSOptions{CAFile: caFile, CertFile: certFile, KeyFile: keyFile, ServerName: "gateway.test",
		MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}})
	resp, err := c.Do(context.Background(), &Request{Path: "/"})
	if err != nil || string(resp.Body) != "tls" {
		t.Fatalf("Do with CA file, client certificate and server name = %v, %q", err, resp.Body)
	}
	if s := c.Counters(); s.TLSHandshakes != 1 || s.MeanTLSHandshake() <= 0 {
		t.Errorf("counters = %+v; want one full handshake with its time", s.TLSCounts)
	}
}

func TestTLSOptionErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"missing CA file", Options{TLS: TLSOptions{CAFile: filepath.Join(dir, "none.pem")}}, "TLS.CAFile"},
		{"CA file without PEM", Options{TLS: TLSOptions{CAFile: junk}}, "TLS.CAFile " + junk + ": no PEM certificate"},
		{"CA file a directory", Options{TLS: TLSOptions{CAFile: dir}}, "not a regular file"},
		{"certificate without key", Options{TLS: TLSOptions{CertFile: junk}}, "TLS.KeyFile: missing"},
		{"key without certificate", Options{TLS: TLSOptions{KeyFile: junk}}, "TLS.CertFile: missing"},
		{"bad key pair", Options{TLS: TLSOptions{CertFile: junk, KeyFile: junk}}, "TLS.CertFile " + junk},
		{"min above max", Options{TLS: TLSOptions{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS12}}, "TLS.MinVersion 1.3 is above TLS.MaxVersion 1.2"},
		{"unknown version", Options{TLS: TLSOptions{MinVersion: 0x0999}}, "TLS.MinVersion: unknown version"},
		{"TLS 1.3 suite", Options{TLS: TLSOptions{CipherSuites: []uint16{tls.TLS_AES_128_GCM_SHA256}}}, "TLS.CipherSuites"},
		{"h2 in ALPN without HTTP2", Options{TLS: TLSOptions{ALPN: []string{"h2", "http/1.1"}}}, "TLS.ALPN offers h2 without HTTP2"},
		{"HTTP2 ALPN without h2", Options{HTTP2: true, TLS: TLSOptions{ALPN: []string{"http/1.1"}}}, "TLS.ALPN must offer h2"},
		{"empty ALPN name", Options{TLS: TLSOptions{ALPN: []string{""}}}, "TLS.ALPN"},
		{"streams without HTTP2", Options{HTTP2Streams: 4}, "HTTP2Streams needs"},
		{"negative streams", Options{HTTP2: true, HTTP2Streams: -1}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewConfig("https://127.0.0.1:1", tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewConfig = %v; want an error containing %q", err, tt.want)
			}
			if strings.HasPrefix(tt.want, "TLS.") && !errors.Is(err, ErrInvalidTLS) {
				t.Errorf("NewConfig = %v; want it to wrap ErrInvalidTLS", err)
			}
		})
	}
}

func TestParseTLSNames(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want uint16
		ok   bool
	}{
		{"1.2", tls.VersionTLS12, true}, {"TLSv1.3", tls.VersionTLS13, true}, {"tls1.0", tls.VersionTLS10, true},
		{"1.4", 0, false}, {"", 0, false}, {"SSLv3", 0, false},
	} {
		got, err := ParseTLSVersion(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseTLSVersion(%q) = %#x, %v; want %#x, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	for _, tt := range []struct {
		in   string
		want uint16
		ok   bool
	}{
		{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, true},
		{"tls_rsa_with_aes_128_cbc_sha", tls.TLS_RSA_WITH_AES_128_CBC_SHA, true},
		{"TLS_AES_128_GCM_SHA256", 0, false},
		{"NOPE", 0, false},
	} {
		got, err := ParseCipherSuite(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseCipherSuite(%q) = %#x, %v; want %#x, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestTLSCurves(t *testing.T) {
	ca := testpeer.MustTestCA(t)
	cert := ca.MustIssue(t, testpeer.CertSpec{})
	for _, tt := range []struct {
		name   string
		curves []tls.CurveID
		want   tls.CurveID
	}{
		{"default", nil, tls.X25519MLKEM768}, // a Go server takes the post-quantum share
		{"X25519", []tls.CurveID{tls.X25519}, tls.X25519},
		{"P-256 only", []tls.CurveID{tls.CurveP256}, tls.CurveP256}, // (a Go server picks by its own order)
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan tls.CurveID, 1)
			srv := startRaw(t, func(c net.Conn) {
				tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert.TLS}})
				tc.SetDeadline(time.Now().Add(10 * time.Second))
				if tc.Handshake() == nil {
					got <- tc.ConnectionState().CurveID
					serveFixed(okResponse("x"))(tc)
				}
			})
			c := mustNew(t, strings.Replace(srv.URL(), "http://", "https://", 1), Options{TLSConfig: &tls.Config{RootCAs: ca.Pool}, TLS: TLSOptions{Curves: tt.curves}})
			if _, err := c.Do(context.Background(), &Request{Path: "/"}); err != nil {
				t.Fatal(err)
			}
			if g := <-got; g != tt.want {
				t.Errorf("server negotiated %v; want %v", g, tt.want)
			}
		})
	}
	if _, err := NewConfig("https://127.0.0.1:1", Options{TLS: TLSOptions{Curves: []tls.CurveID{7}}}); !errors.Is(err, ErrInvalidTLS) || !strings.Contains(err.Error(), "TLS.Curves") {
		t.Errorf("NewConfig with an unknown group = %v; want ErrInvalidTLS naming TLS.Curves", err)
	}
	for _, tt := range []struct {
		in   string
		want tls.CurveID
	}{{"x25519", tls.X25519}, {"prime256v1", tls.CurveP256}, {"P-384", tls.CurveP384}, {"X25519MLKEM768", tls.X25519MLKEM768}, {"brainpool", 0}} {
		got, err := ParseCurve(tt.in)
		if got != tt.want || (err == nil) != (tt.want != 0) {
			t.Errorf("ParseCurve(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if err == nil && CurveName(got) == "" {
			t.Errorf("CurveName(%v) is empty", got)
		}
	}
}
