package web_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/web/webtest"
)

// serve starts srv on 127.0.0.1:0 and returns its base URL; the server is
// shut down (and checked to return nil) at cleanup.
func serve(t *testing.T, srv *web.Server, scheme string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, srv, ln)
	return scheme + "://" + ln.Addr().String()
}

// runFake drives runner in real time until the test ends.
func runFake(t *testing.T, r *webtest.Runner) {
	testpeer.Go(t, "the fake runner", 0, func(ctx context.Context) { r.Run(ctx, 100*time.Millisecond) })
}

func needTool(t *testing.T, name, install string) string {
	t.Helper()
	p, err := testpeer.LookPeer(name)
	if err != nil {
		testpeer.Missing(t, "%v (%s)", err, install)
	}
	return p
}

func runClientScript(t *testing.T, base, curlOpts string) {
	t.Helper()
	needTool(t, "curl", "apt-get install curl")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", filepath.Join("testdata", "locust_api_client.sh"), base)
	cmd.Env = append(os.Environ(), "CURL_OPTS="+curlOpts)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "locust_api_client: ok") {
		t.Fatalf("locust_api_client.sh %s: %v\n%s", base, err, out)
	}
}

func TestLocustAPIClientScript(t *testing.T) {
	r := webtest.New(webtest.Options{Workers: 2, Host: "http://127.0.0.1:26080"})
	runFake(t, r)
	srv := web.New(web.Options{StatsCacheTTL: 100 * time.Millisecond}, r)
	runClientScript(t, serve(t, srv, "http"), "")
	if n := len(r.Starts()); n != 2 {
		t.Errorf("runner saw %d starts; want 2 (start and edit)", n)
	}
}

// writeSelfSigned writes a certificate for 127.0.0.1 and its key.
func writeSelfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestLocustAPIClientScriptTLSAndAuth(t *testing.T) {
	cert, key := writeSelfSigned(t)
	r := webtest.New(webtest.Options{Host: "http://127.0.0.1:26080"})
	runFake(t, r)
	srv := web.New(web.Options{Auth: "admin:secret", TLSCert: cert, TLSKey: key, StatsCacheTTL: -1}, r)
	base := serve(t, srv, "https")
	runClientScript(t, base, "-k -u admin:secret")

	// Without credentials the same server refuses.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: insecureTLS()}, Timeout: 10 * time.Second}
	res, err := c.Get(base + "/stats/requests")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET without credentials = %d; want 401", res.StatusCode)
	}
}

func TestServeBadTLS(t *testing.T) {
	srv := web.New(web.Options{Addr: "127.0.0.1:0", TLSCert: "/nonexistent.pem", TLSKey: "/nonexistent.key"}, webtest.New(webtest.Options{}))
	if err := srv.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "web: tls") {
		t.Errorf("Run with missing certificate = %v", err)
	}
}

func TestServeLifecycle(t *testing.T) {
	before := runtime.NumGoroutine()
	r := webtest.New(webtest.Options{})
	srv := web.New(web.Options{HistoryInterval: 10 * time.Millisecond}, r)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	// A run_time timer pending at shutdown must not fire or leak.
	res, err := http.PostForm(base+"/swarm", url.Values{"user_count": {"1"}, "spawn_rate": {"1"}, "run_time": {"1h"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// The history sampler runs while serving.
	r.Step(time.Second)
	testpeer.Eventually(t, 20*time.Second, "the history sampled while serving", func() bool { return len(srv.History().Points()) > 0 })
	http.DefaultClient.CloseIdleConnections()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v; want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
	if r.Stops() != 0 {
		t.Errorf("run_time timer fired at shutdown")
	}
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := srv.Serve(context.Background(), ln2); !errors.Is(err, web.ErrClosed) {
		t.Errorf("second Serve = %v; want ErrClosed", err)
	}
	if err := testpeer.Poll(20*time.Second, 10*time.Millisecond, func() bool { return runtime.NumGoroutine() <= before }); err != nil {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
	}
}

func TestRunTimeStopsTest(t *testing.T) {
	r := webtest.New(webtest.Options{})
	srv := web.New(web.Options{}, r)
	base := serve(t, srv, "http")
	res, err := http.PostForm(base+"/swarm", url.Values{"user_count": {"1"}, "spawn_rate": {"1"}, "run_time": {"1s"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// A later /stop does not cancel the timer (Locust), so it stops twice.
	res, err = http.Get(base + "/stop")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if err := testpeer.Poll(30*time.Second, 20*time.Millisecond, func() bool { return r.Stops() >= 2 }); err != nil {
		t.Fatalf("run_time did not stop the test (stops = %d)", r.Stops())
	}
}

func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} } // test server's self-signed certificate
