package scenario

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker"
)

func TestTLSAndHTTP2Options(t *testing.T) {
	dir := t.TempDir()
	ca := testpeer.MustTestCA(t)
	if _, err := ca.WriteCA(dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.MustIssue(t, testpeer.CertSpec{Client: true}).WriteFiles(dir, "client"); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(filepath.Join(dir, "s.yaml"), []byte(`
host: https://gw.test
http:
  http2: true
  streams: 16
  tls:
    ca_file: ca.crt
    cert_file: client.crt
    key_file: client.key
    server_name: gateway.test
    min_version: "1.2"
    max_version: TLSv1.3
    cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
    session_resumption: true
    curves: [X25519, P-256]
    alpn: [h2, http/1.1]
users:
  - name: U
    tasks:
      - name: page
        parallel: true
        requests: [{path: /a}, {path: /b}]
      - path: /c
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := f.Scenario.HTTP
	o := h.TLS
	if !h.HTTP2 || h.HTTP2Streams != 16 || o.CAFile != filepath.Join(dir, "ca.crt") || o.CertFile != filepath.Join(dir, "client.crt") ||
		o.KeyFile != filepath.Join(dir, "client.key") || o.ServerName != "gateway.test" || o.MinVersion != tls.VersionTLS12 ||
		o.MaxVersion != tls.VersionTLS13 || !o.SessionResumption || !slices.Equal(o.ALPN, []string{"h2", "http/1.1"}) ||
		!slices.Equal(o.Curves, []tls.CurveID{tls.X25519, tls.CurveP256}) ||
		!slices.Equal(o.CipherSuites, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}) {
		t.Errorf("http options = %+v", h)
	}
	tasks := f.Scenario.Classes[0].Tasks
	if !tasks[0].Parallel || len(tasks[0].Requests) != 2 || tasks[1].Parallel {
		t.Errorf("tasks = %+v; want the first parallel with two requests", tasks)
	}
}

func TestLoadHTTP2Example(t *testing.T) {
	t.Setenv("TARGET", "")
	f, err := Load("../examples/http2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := f.Scenario.HTTP
	if tk := f.Scenario.Classes[0].Tasks[0]; !h.HTTP2 || h.HTTP2Streams != 8 || !tk.Parallel || len(tk.Requests) != 3 {
		t.Errorf("http = %+v, task = %+v", h, tk)
	}
	if _, err := worker.New(worker.Options{}, f.Scenario); err != nil {
		t.Fatalf("worker.New = %v", err)
	}
}

func TestTLSAndHTTP2OptionErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("junk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users := "users: [{name: U, tasks: [{path: /}]}]\n"
	tests := []struct {
		name, src, want string
	}{
		{"missing CA file", "http:\n  tls:\n    ca_file: none.pem\n" + users, "s.yaml:3:14: http.tls.ca_file: TLS.CAFile: stat " + filepath.Join(dir, "none.pem")},
		{"CA file without PEM", "http:\n  tls:\n    ca_file: junk.pem\n" + users, "s.yaml:3:14: http.tls.ca_file: TLS.CAFile " + junk + ": no PEM certificate in the file"},
		{"certificate without key", "http:\n  tls: {cert_file: junk.pem}\n" + users, "s.yaml:2:8: http.tls.key_file: TLS.KeyFile: missing"},
		{"bad version", "http:\n  tls: {min_version: '1.4'}\n" + users, `s.yaml:2:22: http.tls.min_version: unknown TLS version "1.4"`},
		{"min above max", "http:\n  tls: {min_version: '1.3', max_version: '1.2'}\n" + users, "http.tls.min_version: TLS.MinVersion 1.3 is above TLS.MaxVersion 1.2"},
		{"TLS 1.3 suite", "http:\n  tls: {cipher_suites: [TLS_AES_128_GCM_SHA256]}\n" + users, "http.tls.cipher_suites: cipher suite TLS_AES_128_GCM_SHA256 is TLS 1.3 only"},
		{"unknown suite", "http:\n  tls: {cipher_suites: NOPE}\n" + users, `http.tls.cipher_suites: unknown cipher suite "NOPE"`},
		{"unknown curve", "http:\n  tls: {curves: [X25519, brainpool]}\n" + users, `http.tls.curves: unknown key exchange group "brainpool"`},
		{"h2 ALPN without http2", "http:\n  tls: {alpn: [h2]}\n" + users, "http.tls.alpn: TLS.ALPN offers h2 without HTTP2"},
		{"unknown tls field", "http:\n  tls: {ocsp: true}\n" + users, `http.tls.ocsp: unknown field "ocsp"`},
		{"streams without http2", "http: {streams: 4}\n" + users, "s.yaml:1:7: http.streams: needs http2: true"},
		{"zero streams", "http: {http2: true, streams: 0}\n" + users, "http.streams: must be at least 1"},
		{"parallel without http2", "users: [{name: U, tasks: [{name: t, parallel: true, requests: [{path: /}]}]}]\n",
			"s.yaml:1:47: users[0].tasks[0].parallel: parallel: true needs http2: true"},
		{"parallel single request", "http: {http2: true}\nusers: [{name: U, tasks: [{path: /, parallel: true}]}]\n", "users[0].tasks[0].parallel: needs a list of requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(filepath.Join(dir, "s.yaml"), []byte(tt.src), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v; want an ErrInvalid containing %q", err, tt.want)
			}
		})
	}
}

// TestParallelOverH2C runs a scenario whose task sends its requests as
// parallel streams against the built-in target's h2c: one connection, all
// requests recorded.
func TestParallelOverH2C(t *testing.T) {
	srv, err := target.New(target.Options{Listen: "127.0.0.1:0", H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "target", 30*time.Second, func(ctx context.Context) {
		if err := srv.Run(ctx); err != nil {
			t.Errorf("target: %v", err)
		}
	})
	f, err := Parse("h2.yaml", []byte(`
host: `+srv.URL()+`
http: {http2: true, streams: 4}
users:
  - name: U
    wait: constant(0.01)
    tasks:
      - name: burst
        parallel: true
        requests:
          - {path: /delay/20, name: a}
          - {path: /delay/20, name: b}
          - {path: /status/201, name: c, checks: {status: 201}}
          - {method: POST, path: /items, body: "1234", name: d, checks: {body_contains: "4"}}
          - {path: /status/503, name: e}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := runUntil(t, f.Scenario, "U", func(reqs map[string]int64) bool { return reqs["e"] >= 3 })
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if byName[n] < 3 {
			t.Errorf("requests named %s: %d; want at least 3", n, byName[n])
		}
	}
	if byName["fail:e"] != byName["e"] || byName["fail:a"]+byName["fail:b"]+byName["fail:c"]+byName["fail:d"] != 0 {
		t.Errorf("failures %v; want only e's 503s", byName)
	}
	if c := srv.Counters(); c.ConnectionsAccepted != 1 {
		t.Errorf("target counters %+v; want one connection for the one user", c)
	}
}

// runUntil runs one user of class in a worker driven by a minimal master
// until done holds for the requests counted by name ("fail:"+name counts
// failures), and returns those counts.
func runUntil(t *testing.T, sc worker.Scenario, class string, done func(map[string]int64) bool) map[string]int64 {
	t.Helper()
	r, err := zmtp.Listen("tcp://127.0.0.1:0", zmtp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := worker.New(worker.Options{MasterPort: r.Addr().(*net.TCPAddr).Port, HeartbeatInterval: 50 * time.Millisecond}, sc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()
	send := func(typ string, data any) {
		b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: w.NodeID()})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Send(w.NodeID(), b); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[string]int64{}
	recv := func(typ string) protocol.Message {
		for {
			_, frames, err := r.Recv(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v (counts %v)", typ, err, counts)
			}
			m, err := protocol.Decode(frames[0])
			if err != nil {
				t.Fatal(err)
			}
			if m.Type == typ {
				return m
			}
		}
	}
	recv(protocol.TypeClientReady)
	send(protocol.TypeAck, &protocol.Ack{Index: 0})
	send(protocol.TypeSpawn, &protocol.Spawn{Timestamp: 1, UserClassesCount: map[string]int64{class: 1}, ParsedOptions: map[string]any{}})
	for !done(counts) {
		rep := recv(protocol.TypeStats).Data.(*protocol.StatsReport)
		for _, e := range rep.Stats {
			counts[e.Name] += e.NumRequests
			counts["fail:"+e.Name] += e.NumFailures
		}
	}
	send(protocol.TypeQuit, nil)
	if err := <-res; err != nil {
		t.Fatalf("Run = %v", err)
	}
	return counts
}

// FuzzParseTLS: the http block's TLS and HTTP/2 options and parallel
// tasks either parse or fail with ErrInvalid, never panic.
func FuzzParseTLS(f *testing.F) {
	f.Add([]byte("http: {http2: true, streams: 3, tls: {min_version: '1.2', max_version: TLSv1.3, alpn: [h2], session_resumption: true}}\n" +
		"users: [{name: A, tasks: [{name: t, parallel: true, requests: [{path: /a}, {path: /b}]}]}]"))
	f.Add([]byte("http: {tls: {cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256], server_name: x, ca_file: /nonexistent}}\nusers: [{name: A, tasks: [{path: /}]}]"))
	f.Add([]byte("http: {tls: {curves: [X25519, p-256, secp384r1]}}\nusers: [{name: A, tasks: [{path: /}]}]"))
	f.Add([]byte("http: {tls: {cert_file: a, key_file: b, alpn: ''}}\nusers: [{name: A, tasks: [{path: /, parallel: false}]}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data, nil)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		h := file.Scenario.HTTP
		if h.HTTP2Streams > 0 && !h.HTTP2 {
			t.Fatal("streams without http2 accepted")
		}
		for _, c := range file.Scenario.Classes {
			for _, tk := range c.Tasks {
				if tk.Parallel && !h.HTTP2 {
					t.Fatal("a parallel task without http2 accepted")
				}
			}
		}
	})
}

// TestTLSScenarioAgainstNginx runs a scenario with TLS files, a minimum
// version and HTTP/2 against an https nginx: every request arrives over
// h2 and TLS 1.3, none fails.
func TestTLSScenarioAgainstNginx(t *testing.T) {
	dir := t.TempDir()
	ca := testpeer.MustTestCA(t)
	if _, err := ca.WriteCA(dir); err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.MustIssue(t, testpeer.CertSpec{Names: []string{"gateway.test"}}).WriteFiles(dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	n := testpeer.StartNginx(t, testpeer.NginxConfig{AccessLog: true, TLS: &testpeer.NginxTLS{CertFile: cert, KeyFile: key, HTTP2: true}})
	f, err := Parse(filepath.Join(dir, "tls.yaml"), []byte(`
host: `+n.URL()+`
http:
  http2: true
  tls: {ca_file: ca.crt, server_name: gateway.test, min_version: "1.3", curves: [X25519]}
users:
  - name: U
    wait: constant(0.01)
    tasks:
      - {name: pair, parallel: true, requests: [{path: /a, name: a}, {path: /b, name: b}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	counts := runUntil(t, f.Scenario, "U", func(c map[string]int64) bool { return c["a"] >= 3 && c["b"] >= 3 })
	if counts["fail:a"]+counts["fail:b"] != 0 {
		t.Errorf("failures %v; want none", counts)
	}
	var lines []testpeer.TLSLine
	testpeer.Eventually(t, 10*time.Second, "nginx logs the requests", func() bool {
		lines, err = n.TLSRequests()
		return err == nil && len(lines) >= 6
	})
	for _, l := range lines {
		if l.Protocol != "HTTP/2.0" || l.TLSVersion != "TLSv1.3" || l.Status != "200" {
			t.Fatalf("nginx logged %+v; want 200 over HTTP/2.0 and TLSv1.3", l)
		}
	}
}
