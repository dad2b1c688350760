package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/target"
)

// startTLSTarget runs the built-in target over TLS with a self-signed
// certificate for 127.0.0.1 and returns its address and a client
// configuration that verifies it.
func startTLSTarget(t testing.TB) (string, *tls.Config) {
	t.Helper()
	cert, err := target.SelfSigned("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	s, err := target.New(target.Options{Listen: "127.0.0.1:0", TLS: target.ServerTLS(cert)})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "tls target", 30*time.Second, func(ctx context.Context) {
		if err := s.Run(ctx); err != nil {
			t.Errorf("target Run = %v", err)
		}
	})
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	// X25519 alone: the ML-KEM share costs much more under -race.
	return s.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}, CurvePreferences: []tls.CurveID{tls.X25519}}
}

func TestTrialsOverTLS(t *testing.T) {
	addr, cfg := startTLSTarget(t)
	resume := cfg.Clone()
	resume.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	run := func(p *Prober, name string, load float64) (capacity.Trial, error) {
		f, err := p.TrialFunc(name, 65536)
		if err != nil {
			return capacity.Trial{}, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return f(ctx, load)
	}
	for _, tt := range []struct {
		name, test       string
		cfg              *tls.Config
		path             string
		load             float64
		attempted, bytes int64
		full, resumed    [2]int64 // ranges
	}{
		// Every connection a full handshake: one per CPS arrival.
		{"cps full", "cps", cfg, "", 100, 50, 50 * 128, [2]int64{50, 50}, [2]int64{0, 0}},
		// With a session cache, all but the first few resume (the
		// first connections start before a ticket arrives).
		{"cps resumed", "cps", resume, "", 100, 50, 50 * 128, [2]int64{1, 10}, [2]int64{40, 49}},
		// TPS: one handshake per keep-alive connection used (Conns 8).
		{"tps", "tps", cfg, "", 200, 100, 100 * 128, [2]int64{1, 8}, [2]int64{0, 0}},
		{"throughput", "throughput", cfg, "/bytes/65536", 8, 7, 7 * 65536, [2]int64{1, 8}, [2]int64{0, 0}},
		{"concurrent", "concurrent", cfg, "", 40, 40, 40 * 128, [2]int64{40, 40}, [2]int64{0, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := loose(addr)
			o.TLS, o.Path, o.ConnectTimeout = tt.cfg, tt.path, 10*time.Second // handshakes under -race
			p, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Options().HTTP {
				t.Fatal("TLS does not imply HTTP")
			}
			tr, err := run(p, tt.test, tt.load)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Attempted != tt.attempted || tr.Failed != 0 || tr.Bytes != tt.bytes || tr.GeneratorLimit != "" {
				t.Fatalf("attempted %d failed %d (%v) bytes %d limit %q; want %d attempted, %d bytes", tr.Attempted, tr.Failed, tr.Errors, tr.Bytes, tr.GeneratorLimit, tt.attempted, tt.bytes)
			}
			ti := tr.TLS
			if ti == nil || ti.Version != "1.3" || !strings.HasPrefix(ti.Cipher, "TLS_") || ti.Group == "" || ti.Mixed {
				t.Fatalf("TLS info %+v", ti)
			}
			if ti.Full < tt.full[0] || ti.Full > tt.full[1] || ti.Resumed < tt.resumed[0] || ti.Resumed > tt.resumed[1] {
				t.Fatalf("%d full, %d resumed handshakes; want %v and %v", ti.Full, ti.Resumed, tt.full, tt.resumed)
			}
			if tt.test == "concurrent" && (tr.SecondRound != 40 || tr.SecondRoundFailed != 0) {
				t.Fatalf("second round %d/%d", tr.SecondRound-tr.SecondRoundFailed, tr.SecondRound)
			}
		})
	}
	t.Run("options", func(t *testing.T) {
		o := loose(addr)
		o.TLS = cfg.Clone()
		o.TLS.MaxVersion, o.TLS.CurvePreferences = tls.VersionTLS12, []tls.CurveID{tls.CurveP256}
		p, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := run(p, "cps", 40)
		if err != nil || tr.Failed != 0 || tr.TLS == nil || tr.TLS.Version != "1.2" || tr.TLS.Group != "P-256" || !strings.Contains(tr.TLS.Cipher, "ECDHE_ECDSA") {
			t.Fatalf("TLS 1.2 P-256: %v, %+v %v", err, tr.TLS, tr.Errors)
		}
	})
	t.Run("wrong name", func(t *testing.T) {
		o := loose(addr)
		o.TLS = cfg.Clone()
		o.TLS.ServerName = "other.example"
		p, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := run(p, "cps", 40)
		if err != nil || tr.Failed != tr.Attempted || tr.Errors["tls"] != tr.Attempted || tr.GeneratorLimit != "" || tr.TLS != nil {
			t.Fatalf("a certificate for another name: %v, %d of %d failed, %v, %+v", err, tr.Failed, tr.Attempted, tr.Errors, tr.TLS)
		}
	})
	t.Run("refused", func(t *testing.T) {
		o := loose(addr)
		o.TLS = &tls.Config{}
		if _, err := New(o); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "server name") {
			t.Fatalf("TLS without a server name: %v", err)
		}
		o.TLS = cfg
		p, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.TrialFunc("teardown", 0); !errors.Is(err, ErrOptions) {
			t.Fatalf("teardown over TLS: %v", err)
		}
	})
}

// The generator's handshake cost, full against resumed (one connection
// at a time, the target in the same process).
func BenchmarkTLSConnect(b *testing.B) {
	addr, cfg := startTLSTarget(b)
	for _, resumed := range []bool{false, true} {
		name := "full"
		c := cfg.Clone()
		if resumed {
			name, c.ClientSessionCache = "resumed", tls.NewLRUClientSessionCache(0)
		}
		b.Run(name, func(b *testing.B) {
			o := loose(addr)
			o.TLS = c
			p, err := New(o)
			if err != nil {
				b.Fatal(err)
			}
			var rec recorder
			b.ReportAllocs()
			for b.Loop() {
				h, err := p.connect(context.Background(), &rec)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.do(context.Background(), h, p.req); err != nil { // the ticket arrives with the answer
					b.Fatal(err)
				}
				_ = h.c.SetLinger(0)
				_ = h.c.Close()
			}
			b.ReportMetric(float64(rec.tls.info.Resumed)/float64(b.N), "resumed/op")
		})
	}
}
