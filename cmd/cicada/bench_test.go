package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/target"
)

func TestBenchRefusesBadOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no test", []string{"bench", "-H", "http://127.0.0.1:1"}, "want one TEST"},
		{"unknown test", []string{"bench", "rps", "-H", "http://127.0.0.1:1"}, `unknown test "rps"`},
		{"no host", []string{"bench", "cps"}, "-H http://IP:PORT is required"},
		{"host name", []string{"bench", "cps", "-H", "http://localhost:80"}, "IPv4 address"},
		{"ftp", []string{"bench", "cps", "-H", "ftp://127.0.0.1:443"}, "must be http://IP:PORT or https://IP:PORT"},
		{"https teardown", []string{"bench", "teardown", "-H", "https://127.0.0.1:443"}, "teardown's FIN-then-wait close is a TCP measurement"},
		{"https dataplane", []string{"bench", "cps", "-H", "https://127.0.0.1:443", "--dataplane", "afpacket"}, "the data plane speaks plain HTTP"},
		{"https host name", []string{"bench", "cps", "-H", "https://localhost"}, "IPv4 address"},
		{"tls option over http", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--tls-resume"}, "--tls-resume needs -H https://IP:PORT"},
		{"insecure over http", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--insecure"}, "--insecure needs -H https://IP:PORT"},
		{"tls version", []string{"bench", "cps", "-H", "https://127.0.0.1:443", "--tls-min-version", "1.4"}, `--tls-min-version: httpc: invalid TLS option: unknown TLS version "1.4"`},
		{"tls min above max", []string{"bench", "cps", "-H", "https://127.0.0.1:443", "--tls-min-version", "1.3", "--tls-max-version", "1.2"}, "--tls-min-version 1.3 is above --tls-max-version 1.2"},
		{"tls 1.3 cipher", []string{"bench", "cps", "-H", "https://127.0.0.1:443", "--tls-cipher-suites", "TLS_AES_128_GCM_SHA256"}, "TLS 1.3 only"},
		{"tls ciphers with 1.3 only", []string{"bench", "cps", "-H", "https://127.0.0.1:443", "--tls-min-version", "1.3", "--tls-cipher-suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, "never negotiates"},
		{"tls curve", []string{"bench", "cps", "-H", "https://127.0.0.1:443", "--tls-curves", "P-255"}, `unknown key exchange group "P-255"`},
		{"tls ca file missing", []string{"bench", "cps", "-H", "https://127.0.0.1:443", "--tls-ca-file", "/nonexistent/ca.pem"}, "--tls-ca-file: stat /nonexistent/ca.pem"},
		{"tls key without cert", []string{"bench", "cps", "-H", "https://127.0.0.1:443", "--tls-key-file", "/tmp/k.pem"}, "--tls-cert-file: missing"},
		{"mix for cps", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--mix", "1KiB:1"}, "--mix is for tps and throughput, not cps"},
		{"mix with path", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--mix", "1KiB:1", "--path", "/x"}, "not with --path or --object-size"},
		{"mix with object size", []string{"bench", "throughput", "-H", "http://127.0.0.1:80", "--mix", "1KiB:1", "--object-size", "10"}, "not with --path or --object-size"},
		{"mix bad weight", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--mix", "1KiB:50,16KiB:0"}, `--mix: probe: invalid options: mix entry 2 "16KiB:0": weight "0" must be a whole number from 1 to 1000000`},
		{"mix bad unit", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--mix", "1KB:50"}, `mix entry 1 "1KB:50": size "1KB": want a whole number`},
		{"mix too big", []string{"bench", "throughput", "-H", "http://127.0.0.1:80", "--mix", "17MiB:1"}, "must be 1 to 16777216"},
		{"mix twice", []string{"bench", "throughput", "-H", "http://127.0.0.1:80", "--mix", "1024:1,1KiB:2"}, "size 1024 bytes is listed twice"},
		{"mix empty", []string{"bench", "throughput", "-H", "http://127.0.0.1:80", "--mix", ""}, "mix: empty"},
		{"path in host", []string{"bench", "cps", "-H", "http://127.0.0.1:80/x"}, "--path sets the path"},
		{"dataplane no interface", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--dataplane", "afpacket"}, "needs --interface and --client-ips"},
		{"dataplane kind", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--dataplane", "netmap"}, `--dataplane "netmap": one of afpacket, afxdp, dpdk`},
		{"dataplane afxdp no interface", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--dataplane", "afxdp", "--client-ips", "198.18.0.1"}, "--dataplane afxdp needs --interface"},
		{"dataplane latency", []string{"bench", "latency", "-H", "http://127.0.0.1:80", "--dataplane", "afpacket"}, "needs --interface"},
		{"dataplane dpdk options on afxdp", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--dataplane", "afxdp", "--interface", "lo", "--client-ips", "198.18.0.1", "--dpdk-port", "0"}, "are for --dataplane dpdk"},
		{"dataplane dpdk no port", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--dataplane", "dpdk", "--client-ips", "198.18.0.1"}, "--dataplane dpdk needs --dpdk-port"},
		{"dataplane window", []string{"bench", "concurrent", "-H", "http://127.0.0.1:80", "--dataplane", "afpacket", "--window", "8"}, "--window: the data plane"},
		{"dataplane https", []string{"bench", "tps", "-H", "https://127.0.0.1:443", "--dataplane", "afpacket"}, "the data plane speaks plain HTTP"},
		{"dataplane mix", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--dataplane", "afpacket", "--mix", "100:1,1000:1"}, "--mix runs on kernel sockets, not with --dataplane"},
		{"dataplane hold", []string{"bench", "concurrent", "-H", "http://127.0.0.1:80", "--dataplane", "afpacket", "--hold", "1s"}, "--hold: the data plane"},
		{"dataplane bad ports", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--dataplane", "afpacket", "--interface", "lo", "--client-ips", "198.18.0.1", "--client-ports", "9-3"}, "--client-ports"},
		{"dataplane gateway in range", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--dataplane", "afpacket", "--interface", "lo", "--client-ips", "198.18.0.1", "--gateway", "198.18.0.1"}, "inside the client range"},
		{"dpdk-eal without dataplane", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--dpdk-eal", "-l 1"}, "--dpdk-eal needs --dataplane"},
		{"dataplane http", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--dataplane", "afpacket", "--http"}, "always sends one HTTP GET"},
		{"dataplane client range", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--dataplane", "afpacket", "--interface", "lo", "--client-ips", "198.18.0.1-3"}, "one client address"},
		{"dataplane loopback", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--dataplane", "afpacket", "--interface", "lo", "--client-ips", "198.18.0.1"}, "ifcheck"},
		{"interface without dataplane", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--interface", "x"}, "--interface needs --dataplane"},
		{"of outside latency", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--of", "tps"}, "--of is for the latency test only"},
		{"latency of concurrent", []string{"bench", "latency", "-H", "http://127.0.0.1:80", "--of", "concurrent"}, "cps or tps"},
		{"fraction", []string{"bench", "latency", "-H", "http://127.0.0.1:80", "--fraction", "1.5"}, "--fraction 1.5"},
		{"object size", []string{"bench", "throughput", "-H", "http://127.0.0.1:80", "--object-size", "0"}, "--object-size 0"},
		{"object size for cps", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--object-size", "10"}, "for the throughput test"},
		{"resolution", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--resolution", "0"}, "--resolution"},
		{"negative conns", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--conns", "-1"}, "must not be negative"},
		{"conns for cps", []string{"bench", "cps", "-H", "http://127.0.0.1:80", "--conns", "8"}, "--conns is for tps throughput, not cps"},
		{"hold for tps via latency", []string{"bench", "latency", "-H", "http://127.0.0.1:80", "--hold", "1s"}, "--hold is for concurrent, not tps"},
		{"trial time for concurrent", []string{"bench", "concurrent", "-H", "http://127.0.0.1:80", "--trial-time", "1s"}, "--trial-time is for"},
		{"min achieved", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--min-achieved", "-1"}, "min achieved -1"},
		{"start above max", []string{"bench", "tps", "-H", "http://127.0.0.1:80", "--start", "10", "--max", "5"}, "max 5"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code != 2 {
				t.Fatalf("exit %d; want 2\n%s", code, errb.String())
			}
			if !strings.Contains(errb.String()+out.String(), tt.want) {
				t.Fatalf("output lacks %q:\n%s%s", tt.want, errb.String(), out.String())
			}
		})
	}
}

// A short search against the built-in target on loopback: the range's top
// passes (the target is far faster than 400 transactions per second), the
// table, the CSV and the HTML page are written, the exit status is 0; a
// closed port finds no maximum (exit 1).
func TestBenchAgainstTarget(t *testing.T) {
	s, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "target", 30*time.Second, func(ctx context.Context) {
		if err := s.Run(ctx); err != nil {
			t.Errorf("target Run = %v", err)
		}
	})
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"bench", "latency", "-H", "http://" + s.Addr().String(), "--of", "tps", "--start", "100", "--max", "400",
		// A busy machine stretches a 300 ms trial's last answers: the
		// achieved rate is not this test's subject.
		"--trial-time", "300ms", "--pause", "0", "--cpu-busy", "1", "--lag-tolerance", "1s", "--min-achieved", "0.5", "--csv", filepath.Join(dir, "x"), "--html", filepath.Join(dir, "x.html")}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"HTTP transaction latency at a fraction of the maximum HTTP transaction rate", "Result: the search's maximum 400 transactions/s passed", "Latency at 50% of the maximum (200 transactions/s)"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("table lacks %q:\n%s", want, out.String())
		}
	}
	f, err := os.Open(filepath.Join(dir, "x_bench.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 1+3+1+1 || rows[4][0] != "latency" || rows[4][3] != "200" || rows[5][15] != "ceiling" {
		t.Fatalf("csv %v, %q", err, rows)
	}
	html, err := os.ReadFile(filepath.Join(dir, "x.html"))
	if err != nil || !bytes.Contains(html, []byte("<svg")) || !bytes.Contains(html, []byte("max 400")) {
		t.Fatalf("html %v:\n%.500s", err, html)
	}

	port := testpeer.FreePort(t)
	out.Reset()
	if code := run([]string{"bench", "cps", "-H", "http://127.0.0.1:" + strconv.Itoa(port), "--start", "20", "--max", "40", "--trial-time", "200ms", "--pause", "0",
		// As above: a busy CI machine is not this search's subject.
		"--cpu-busy", "1", "--lag-tolerance", "1s"}, &out, &errb); code != 1 {
		t.Fatalf("closed port: exit %d; want 1\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "no load passed") || !strings.Contains(out.String(), "refused") {
		t.Fatalf("closed port:\n%s", out.String())
	}
}

// FuzzBenchTarget: -H is refused or gives an IPv4 address and port, and a
// Host header without a space or line break.
func FuzzBenchTarget(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8080", "http://198.18.1.1", "http://[::1]:80", "https://1.2.3.4", "http://1.2.3.4:80/x", "http://a b", "http://1.2.3.4:80\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		addr, host, err := benchTarget(h)
		if err != nil {
			return
		}
		ap, perr := netip.ParseAddrPort(addr)
		if perr != nil || !ap.Addr().Is4() || strings.ContainsAny(host, " \r\n\t") || host == "" {
			t.Fatalf("benchTarget(%q) = %q, %q", h, addr, host)
		}
	})
}

// A generator whose open-files limit (64, set with prlimit(1) on the child)
// is far below what the target holds: the concurrent search ends INVALID,
// exit status 3, naming the limit, with the highest pass as a lower bound.
func TestBenchGeneratorLimitExit(t *testing.T) {
	prlimit := testpeer.RequirePeer(t, "prlimit")
	s, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "target", 30*time.Second, func(ctx context.Context) {
		if err := s.Run(ctx); err != nil {
			t.Errorf("target Run = %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := testpeer.SelfArgs("TestHelperProcess", "--", "bench", "concurrent", "-H", "http://"+s.Addr().String(), "--start", "10", "--max", "2000", "--http", "--pause", "0")
	cmd := exec.CommandContext(ctx, prlimit, append([]string{"--nofile=64:64", "--"}, a...)...)
	cmd.Env = append(os.Environ(), "CICADA_TEST_HELPER=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit %v; want 3\n%s", err, out)
	}
	for _, want := range []string{"Result: INVALID: the generator was the limit (open-files: ", "connections, its maximum is at least that, not found", "invalid"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

// --dataplane dpdk in a binary without DPDK is refused before anything
// runs, saying how to build one.
func TestBenchRefusesDPDKWithoutIt(t *testing.T) {
	if dpdk.Available {
		t.Skip("this binary has DPDK (the dpdk tag)")
	}
	var out, errb bytes.Buffer
	code := run([]string{"bench", "tps", "-H", "http://127.0.0.1:80", "--dataplane", "dpdk", "--client-ips", "198.18.0.1", "--dpdk-port", "0"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "argument --dataplane: ") || !strings.Contains(errb.String(), "make build-dpdk") {
		t.Fatalf("exit %d; want 2 and the build's refusal:\n%s", code, errb.String())
	}
}
