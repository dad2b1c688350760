package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/csv"
	"encoding/pem"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/target"
)

// `cicada bench` over HTTPS against the built-in target with a
// self-signed certificate (trusted through --tls-ca-file): the report
// states the TLS parameters and the negotiated ones, every connection of
// cps made a full handshake, --tls-resume resumes; a mix search reports
// its bytes per size.
func TestBenchHTTPSAndMix(t *testing.T) {
	cert, err := target.SelfSigned("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, tc := range []*tls.Config{target.ServerTLS(cert), nil} {
		s, err := target.New(target.Options{Listen: "127.0.0.1:0", TLS: tc})
		if err != nil {
			t.Fatal(err)
		}
		testpeer.Go(t, "target", 60*time.Second, func(ctx context.Context) {
			if err := s.Run(ctx); err != nil {
				t.Errorf("target Run = %v", err)
			}
		})
		addrs = append(addrs, s.Addr().String())
	}
	// A busy machine is not these searches' subject.
	// A busy machine (or -race) stretches a short trial's last answers: the
	// achieved rate is not what these tests check.
	loose := []string{"--pause", "0", "--cpu-busy", "1", "--connect-timeout", "5s", "--min-achieved", "0.5"}
	rate := []string{"--start", "50", "--max", "100", "--trial-time", "400ms", "--lag-tolerance", "1s"}
	for _, tt := range []struct {
		name string
		args []string
		want []string
		// the CSV's TLS cells of the first trial: full, resumed (-1: any)
		full, resumed int64
	}{
		{"cps", append([]string{"cps", "-H", "https://" + addrs[0], "--tls-ca-file", ca, "--tls-curves", "X25519"}, rate...), []string{
			"Maximum TCP/HTTPS connection establishment rate (RFC 9411 7.6)",
			"tls resumption         off: a full handshake on every new connection",
			"tls key exchange       X25519",
			"tls verification       " + ca + ", name 127.0.0.1",
			"TLS negotiated: version 1.3, cipher suite TLS_AES_128_GCM_SHA256, key exchange X25519; 60 full and 0 resumed handshakes in the search",
			"Result: the search's maximum 100 connections/s passed",
		}, 20, 0},
		{"cps resumed", append([]string{"cps", "-H", "https://" + addrs[0], "--insecure", "--tls-resume", "--tls-max-version", "1.2", "--tls-curves", "P-256"}, rate...), []string{
			"tls versions           1.2-1.2", "tls verification       off (--insecure)", "tls resumption         on (--tls-resume)",
			"TLS negotiated: version 1.2, cipher suite TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, key exchange P-256",
		}, -1, -1},
		{"concurrent", []string{"concurrent", "-H", "https://" + addrs[0], "--insecure", "--start", "30", "--max", "60"}, []string{
			"Concurrent TCP/HTTPS connection capacity (RFC 9411 7.9)", "http                   true", "TLS at trial 2: 60 full, 0 resumed handshakes",
		}, 30, 0},
		{"throughput mix", []string{"throughput", "-H", "http://" + addrs[1], "--mix", "1KiB:3,16KiB:1", "--start", "1", "--max", "2", "--trial-time", "400ms", "--lag-tolerance", "1s"}, []string{
			"HTTP throughput with a traffic mix (RFC 3511 5.6, RFC 9411 7.3, RFC 9411 7.1)",
			"mix                    1024 B x 3 (75%), 16384 B x 1 (25%); mean 4864 B",
			"Mix at trial 2 (",
			"target                 http://" + addrs[1] + "/bytes/N",
		}, -1, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			prefix := filepath.Join(t.TempDir(), "x")
			args := append(append([]string{"bench"}, tt.args...), "--csv", prefix)
			args = append(args, loose...)
			if code := run(args, &out, &errb); code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Fatalf("table lacks %q:\n%s", w, out.String())
				}
			}
			f, err := os.Open(prefix + "_bench.csv")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil || len(rows) < 3 || len(rows[1]) != len(capacity.CSVHeader) {
				t.Fatalf("csv %v %q", err, rows)
			}
			n := len(capacity.CSVHeader)
			if tt.full >= 0 && (rows[1][n-4] != strconv.FormatInt(tt.full, 10) || rows[1][n-3] != strconv.FormatInt(tt.resumed, 10)) {
				t.Fatalf("trial 1's handshakes %q; want %d full %d resumed", rows[1][n-4:n-2], tt.full, tt.resumed)
			}
			if tt.name == "cps resumed" {
				if rows[2][n-3] == "0" {
					t.Fatalf("trial 2 resumed no session: %q", rows[2])
				}
			}
			if strings.Contains(tt.name, "mix") && strings.Contains(out.String(), "object size") {
				t.Fatalf("a mix reports the single object size:\n%s", out.String())
			}
			if strings.Contains(tt.name, "mix") && !strings.Contains(rows[1][n-1], "1024 B: ") {
				t.Fatalf("trial 1's mix cell %q", rows[1][n-1])
			}
		})
	}
}

// FuzzBenchScheme: -H with either scheme is refused or gives an IPv4
// address and port (443 by default over https) and a clean Host header.
func FuzzBenchScheme(f *testing.F) {
	for _, s := range []string{"https://127.0.0.1:8443", "https://198.18.1.1", "https://[::1]:443", "https://a b", "https://1.2.3.4:443/x", "HTTPS://1.2.3.4", "https://1.2.3.4:443\r\n", "https://:443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		u, https := benchScheme(h)
		addr, host, err := benchTarget(u)
		if err != nil {
			return
		}
		ap, perr := netip.ParseAddrPort(addr)
		if perr != nil || !ap.Addr().Is4() || strings.ContainsAny(host, " \r\n\t") || host == "" {
			t.Fatalf("benchScheme(%q) then benchTarget = %q, %q", h, addr, host)
		}
		if https && !strings.HasPrefix(strings.ToLower(h), "https:") {
			t.Fatalf("benchScheme(%q) says https", h)
		}
	})
}
