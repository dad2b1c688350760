package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTargetTLSOptions(t *testing.T) {
	for _, tt := range []struct {
		listen string
		want   []string
	}{
		{"198.18.1.1:443", []string{"198.18.1.1", "127.0.0.1", "::1", "localhost"}},
		{"127.0.0.1:8443", []string{"127.0.0.1", "::1", "localhost"}},
		{"0.0.0.0:443", []string{"127.0.0.1", "::1", "localhost"}},
		{":443", []string{"127.0.0.1", "::1", "localhost"}},
		{"gw.example:443", []string{"gw.example", "127.0.0.1", "::1", "localhost"}},
	} {
		if got := selfSignedHosts(tt.listen); !slices.Equal(got, tt.want) {
			t.Errorf("selfSignedHosts(%q) = %q; want %q", tt.listen, got, tt.want)
		}
	}
	var log bytes.Buffer
	c, err := (&targetTLS{selfSigned: true}).config("198.18.1.1:443", &log)
	if err != nil || c == nil || len(c.Certificates) != 1 || c.Certificates[0].Leaf.IPAddresses[0].String() != "198.18.1.1" {
		t.Fatalf("self-signed: %v %+v", err, c)
	}
	if !strings.Contains(log.String(), "cicada target TLS: self-signed certificate for 198.18.1.1, 127.0.0.1, ::1, localhost, SHA-256 fingerprint ") {
		t.Fatalf("log %q", log.String())
	}
	if c, err := (&targetTLS{}).config("x", &log); c != nil || err != nil {
		t.Fatalf("no TLS options: %v %v", c, err)
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"both", []string{"target", "--tls-self-signed", "--tls-cert", bad, "--tls-key", bad}, "--tls-self-signed or --tls-cert/--tls-key, not both"},
		{"cert alone", []string{"target", "--tls-cert", bad}, "go together"},
		{"bad files", []string{"target", "--tls-cert", bad, "--tls-key", bad}, "certificate " + bad + ", key " + bad},
		{"h2c", []string{"target", "--listen", "127.0.0.1:0", "--tls-self-signed", "--h2c"}, "h2c is HTTP/2 in cleartext"},
		{"dataplane", []string{"target", "--dataplane", "afpacket", "--interface", "lo", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1", "--tls-self-signed"}, "the data plane serves plain HTTP"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			if code == 0 || !strings.Contains(errb.String(), tt.want) {
				t.Fatalf("exit %d; want an error containing %q:\n%s", code, tt.want, errb.String())
			}
		})
	}
}
