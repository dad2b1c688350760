package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity/cluster"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// `cicada bench` options cicada cannot honour, found by trying each
// option's edge values and -H's forms: each is refused (exit 2) with a
// message naming it, before any trial; none is accepted and ignored.
func TestBenchHostileOptions(t *testing.T) {
	port := testpeer.FreePort(t) // closed: a search that ran would fail, not exit 2
	h := "http://127.0.0.1:" + strconv.Itoa(port)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"userinfo", []string{"cps", "-H", "http://user:pw@127.0.0.1:80"}, "no user, query or fragment"},
		{"https userinfo", []string{"cps", "-H", "https://user@127.0.0.1:443"}, "no user, query or fragment"},
		{"fragment", []string{"cps", "-H", "http://127.0.0.1:80#x"}, "no user, query or fragment"},
		{"empty query", []string{"cps", "-H", "http://127.0.0.1:80?"}, "no user, query or fragment"},
		{"port 0", []string{"cps", "-H", "http://127.0.0.1:0"}, "port 0 is not a port"},
		{"port 65536", []string{"cps", "-H", "http://127.0.0.1:65536"}, "IPv4 address and port"},
		{"ipv6", []string{"cps", "-H", "http://[::1]:80"}, "IPv4 address and port"},
		{"trailing space", []string{"cps", "-H", "http://127.0.0.1:80 "}, "must be http://IP:PORT"},
		{"trailing junk", []string{"cps", "-H", "http://127.0.0.1:80x"}, "must be http://IP:PORT"},
		{"trial time 0", []string{"cps", "-H", h, "--trial-time", "0"}, "--trial-time 0: must be positive"},
		{"timeout 0", []string{"cps", "-H", h, "--timeout", "0s"}, "--timeout 0: must be positive"},
		{"connect timeout 0", []string{"cps", "-H", h, "--connect-timeout", "0"}, "--connect-timeout 0"},
		{"conns 0", []string{"tps", "-H", h, "--conns", "0"}, "--conns 0"},
		{"window 0", []string{"concurrent", "-H", h, "--window", "0"}, "--window 0"},
		{"max trials 0", []string{"cps", "-H", h, "--max-trials", "0"}, "--max-trials 0"},
		{"step factor 0", []string{"cps", "-H", h, "--step-factor", "0"}, "--step-factor 0"},
		{"cpu busy 0", []string{"cps", "-H", h, "--cpu-busy", "0"}, "--cpu-busy 0"},
		{"lag tolerance 0", []string{"cps", "-H", h, "--lag-tolerance", "0"}, "--lag-tolerance 0"},
		{"cpu busy NaN", []string{"cps", "-H", h, "--cpu-busy", "NaN"}, "CPU busy NaN"},
		{"load NaN", []string{"latency", "-H", h, "--load", "NaN"}, "--load NaN must be a finite number"},
		{"load Inf", []string{"latency", "-H", h, "--load", "Inf"}, "--load +Inf must be a finite number"},
		{"start NaN", []string{"cps", "-H", h, "--start", "NaN"}, "start NaN"},
		{"start Inf", []string{"cps", "-H", h, "--start", "Inf"}, "start +Inf"},
		{"step factor NaN", []string{"cps", "-H", h, "--step-factor", "NaN"}, "step factor NaN"},
		{"resolution NaN", []string{"cps", "-H", h, "--resolution", "NaN"}, "resolution NaN"},
		{"failure ratio Inf", []string{"cps", "-H", h, "--failure-ratio", "Inf"}, "failure ratio +Inf"},
		{"latency percentile NaN", []string{"cps", "-H", h, "--latency-percentile", "NaN"}, "latency percentile NaN"},
		{"negative pause", []string{"cps", "-H", h, "--pause", "-1s"}, "pause -1s"},
		{"negative hold", []string{"concurrent", "-H", h, "--hold", "-1s"}, "hold -1s is negative"},
		{"path CRLF", []string{"cps", "-H", h, "--http", "--path", "/\r\nX-Injected: 1"}, "path"},
		{"path tab", []string{"cps", "-H", h, "--http", "--path", "/a\tb"}, "control character"},
		{"csv into a missing directory", []string{"cps", "-H", h, "--csv", filepath.Join(dir, "missing", "x")}, "--csv: directory " + filepath.Join(dir, "missing") + " does not exist"},
		{"html into a missing directory", []string{"cps", "-H", h, "--html", filepath.Join(dir, "missing", "x.html")}, "--html: directory"},
		{"html is a directory", []string{"cps", "-H", h, "--html", dir}, "is a directory"},
		{"csv under a file", []string{"cps", "-H", h, "--csv", filepath.Join(file, "x")}, "is not a directory"},
		{"expect workers 0", []string{"cps", "-H", h, "--master", "--expect-workers", "0"}, "--expect-workers 0"},
		{"bind port 65536", []string{"cps", "-H", h, "--master", "--master-bind-port", "65536"}, "not a port"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"bench"}, tt.args...), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tt.want) {
				t.Fatalf("exit %d; want 2 naming %q\n%s%s", code, tt.want, errb.String(), out.String())
			}
			if strings.Contains(out.String(), "Result:") {
				t.Fatalf("a search ran:\n%s", out.String())
			}
		})
	}
}

// SIGINT during a trial: cicada bench stops at once (not at the trial's
// end), prints the table of what ran with a STOPPED summary (never "no
// load passed" as a verdict), writes the CSV, and exits 1.
func TestBenchSIGINTMidSearch(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	dir := t.TempDir()
	p := startCicadaChild(t, "bench", nil, "bench", "cps", "-H", "http://"+ln.Addr().String(), "--start", "50", "--max", "100",
		"--trial-time", "30s", "--pause", "0", "--cpu-busy", "1", "--lag-tolerance", "2s", "--csv", filepath.Join(dir, "x"))
	if err := testpeer.Poll(30*time.Second, 10*time.Millisecond, func() bool { return accepted.Load() >= 5 }); err != nil {
		t.Fatalf("no load reached the target:\n%s", p.Log())
	}
	if err := p.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if exited, _ := p.Wait(20 * time.Second); !exited {
		t.Fatalf("still running 20 s after SIGINT:\n%s", p.Log())
	}
	if code := p.Cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d; want 1\n%s", code, p.Log())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("stopped %v after SIGINT", d)
	}
	if log := p.Log(); !strings.Contains(log, "Result: STOPPED before any load passed (capacity: trial at 50: ") || strings.Contains(log, "no load passed: no maximum found") {
		t.Fatalf("output:\n%s", log)
	}
	if rows := testpeer.ReadCSV(t, filepath.Join(dir, "x_bench.csv")); rows[len(rows)-1][15] != "stopped" {
		t.Fatalf("csv %q", rows)
	}
}

// FuzzBenchTargetHostile: an -H that benchTarget accepts names no user, no
// query or fragment and a port other than 0.
func FuzzBenchTargetHostile(f *testing.F) {
	for _, s := range []string{"http://u:p@127.0.0.1:80", "http://127.0.0.1:0", "http://127.0.0.1:80#f", "http://127.0.0.1:80?", "http://127.0.0.1:65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		addr, _, err := benchTarget(h)
		if err != nil {
			return
		}
		if strings.ContainsAny(h, "@#?") || strings.HasSuffix(addr, ":0") {
			t.Fatalf("benchTarget(%q) accepted: %q", h, addr)
		}
	})
}

// The TLS options a (hostile) controller sends a worker: files that are not
// regular files of a bounded size (/dev/zero, a directory, a FIFO), names
// that are not TLS names: each refused at once with the flag named, never
// read without end.
func TestBenchClusterTLSHostileOptions(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	junk := make([]string, 64)
	for i := range junk {
		junk[i] = "NOT_A_SUITE"
	}
	for _, tt := range []struct {
		name string
		o    cluster.TLSOptions
		want string
	}{
		{"ca /dev/zero", cluster.TLSOptions{CAFile: "/dev/zero"}, "--tls-ca-file /dev/zero: not a regular file"},
		{"ca directory", cluster.TLSOptions{CAFile: dir}, "--tls-ca-file " + dir + ": not a regular file"},
		{"ca fifo", cluster.TLSOptions{CAFile: fifo}, "not a regular file"},
		{"cert /dev/zero", cluster.TLSOptions{CertFile: "/dev/zero", KeyFile: "/dev/zero"}, "not a regular file"},
		{"key missing", cluster.TLSOptions{CertFile: fifo}, "--tls-key-file"},
		{"version", cluster.TLSOptions{MinVersion: "1.4"}, "--tls-min-version"},
		{"suites", cluster.TLSOptions{CipherSuites: junk}, "--tls-cipher-suites"},
		{"curves", cluster.TLSOptions{Curves: []string{"P-255"}}, "--tls-curves"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := benchClusterTLSConfig(tt.o, "127.0.0.1:443")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want %q", err, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}
