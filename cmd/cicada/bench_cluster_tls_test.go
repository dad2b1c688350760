package main

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/target"
)

// startTLSTargetChild runs `cicada target --tls-self-signed` as a child
// on a free port of 127.0.0.1 and returns its address once it accepts.
func startTLSTargetChild(t *testing.T) string {
	addr := "127.0.0.1:" + strconv.Itoa(testpeer.FreePort(t))
	p := startCicadaChild(t, "tls-target", nil, "target", "--listen", addr, "--tls-self-signed")
	if err := testpeer.Poll(30*time.Second, 20*time.Millisecond, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}); err != nil {
		t.Fatalf("the TLS target does not accept: %v\n%s", err, p.Log())
	}
	return addr
}

// runBenchController runs a `cicada bench --master` process for two
// workers on port in dir and returns its exit status and output; args
// come last (a flag given again overrides the defaults here).
func runBenchController(t *testing.T, dir string, port int, args ...string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append([]string{"--", "bench", "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(port),
		"--expect-workers", "2", "--expect-workers-max-wait", "40s", "--pause", "0", "--cpu-busy", "1", "--lag-tolerance", "2s", "--min-achieved", "0.5"}, args...)
	cmd := testpeer.SelfCommand(ctx, "TestHelperProcess", []string{"CICADA_TEST_HELPER=1", "HOME=" + t.TempDir()}, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("controller: %v\n%s", err, out)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// A bench controller and two worker processes on 127.0.0.1 carry HTTPS
// and a traffic mix: against `cicada target --tls-self-signed` with
// --insecure, the merged cps trial made one full handshake per attempted
// connection (40, 20 on each worker), and with --tls-resume the second
// trial resumes the first one's sessions (each worker keeps its
// configuration); a tps trial of a mix counts every
// transaction under its size, the sizes' counts sum to the attempted and
// their bytes to the trial's, each count twice one worker's (both draw
// the same sizes); a worker's CPU strain makes a passed trial's reason and
// a failed one INVALID (exit 3); a relative --tls-ca-file is read in the workers'
// directory only: there, they verify the target with it; missing there
// (the controller has one), the workers' errors name it and the
// controller exits 2 at once.
func TestBenchClusterHTTPSAndMix(t *testing.T) {
	tlsAddr := startTLSTargetChild(t)
	plainAddr := startBenchTarget(t)
	n := len(capacity.CSVHeader)
	t.Run("https cps", func(t *testing.T) {
		port := testpeer.FreePort(t)
		w1, _ := benchWorker(t, "hw1", port), benchWorker(t, "hw2", port)
		dir := t.TempDir()
		code, out := runBenchController(t, dir, port, "cps", "-H", "https://"+tlsAddr, "--insecure", "--start", "100", "--max", "100",
			"--trial-time", "400ms", "--connect-timeout", "5s", "--csv", filepath.Join(dir, "x"))
		if code != 0 {
			t.Fatalf("exit %d\n%s\nworker 1:\n%s", code, out, w1.Log())
		}
		for _, want := range []string{"Maximum TCP/HTTPS connection establishment rate (RFC 9411 7.6)", "tls verification       off (--insecure)",
			"cicada dev, kernel sockets, 2 workers", "TLS negotiated: version 1.3, cipher suite "} {
			if !strings.Contains(out, want) {
				t.Fatalf("output lacks %q:\n%s", want, out)
			}
		}
		rows := readCSV(t, filepath.Join(dir, "x_bench.csv"))
		if len(rows) != 3 || len(rows[1]) != n || rows[1][5] != "40" || rows[1][6] != "0" || rows[1][n-4] != rows[1][5] || rows[1][n-3] != "0" ||
			!strings.HasPrefix(rows[1][n-2], "1.3 TLS_") {
			t.Fatalf("csv: want 40 attempted, 40 full handshakes over TLS 1.3: %q", rows)
		}
	})
	t.Run("https resumed across trials", func(t *testing.T) {
		port := testpeer.FreePort(t)
		w1, _ := benchWorker(t, "rw1", port), benchWorker(t, "rw2", port)
		dir := t.TempDir()
		code, out := runBenchController(t, dir, port, "cps", "-H", "https://"+tlsAddr, "--insecure", "--tls-resume", "--tls-max-version", "1.2",
			"--start", "50", "--max", "100", "--trial-time", "400ms", "--connect-timeout", "5s", "--csv", filepath.Join(dir, "x"))
		if code != 0 {
			t.Fatalf("exit %d\n%s\nworker 1:\n%s", code, out, w1.Log())
		}
		rows := readCSV(t, filepath.Join(dir, "x_bench.csv"))
		if len(rows) != 4 || rows[2][n-3] == "0" || rows[2][n-4] != "0" || !strings.HasPrefix(rows[2][n-2], "1.2 ") {
			t.Fatalf("csv: want trial 2 to resume trial 1's TLS 1.2 sessions, no full handshake: %q", rows)
		}
	})
	t.Run("mix tps", func(t *testing.T) {
		port := testpeer.FreePort(t)
		w1, _ := benchWorker(t, "mw1", port), benchWorker(t, "mw2", port)
		dir := t.TempDir()
		code, out := runBenchController(t, dir, port, "tps", "-H", "http://"+plainAddr, "--mix", "1KiB:3,16KiB:1,100B:2", "--conns", "4",
			"--start", "100", "--max", "100", "--trial-time", "400ms", "--csv", filepath.Join(dir, "x"))
		if code != 0 {
			t.Fatalf("exit %d\n%s\nworker 1:\n%s", code, out, w1.Log())
		}
		if !strings.Contains(out, "with a traffic mix") || !strings.Contains(out, "mix                    1024 B x 3 (50%), 16384 B x 1 (16.7%), 100 B x 2 (33.3%)") {
			t.Fatalf("output:\n%s", out)
		}
		rows := readCSV(t, filepath.Join(dir, "x_bench.csv"))
		if len(rows) != 3 || len(rows[1]) != n || rows[1][5] != "40" || rows[1][6] != "0" {
			t.Fatalf("csv: want 40 attempted: %q", rows)
		}
		var count, bytes int64
		sizes := map[int64]bool{}
		for _, cell := range strings.Split(rows[1][n-1], "; ") {
			var size, ok, failed, b int64
			f := strings.Fields(cell) // "1024 B: 12 ok 0 failed 12288 bytes"
			if len(f) != 8 {
				t.Fatalf("mix cell %q", rows[1][n-1])
			}
			for i, p := range []*int64{&size, &ok, &failed, &b} {
				*p, _ = strconv.ParseInt(f[[]int{0, 2, 4, 6}[i]], 10, 64)
			}
			if ok%2 != 0 || failed != 0 || b != ok*size || sizes[size] {
				t.Fatalf("mix cell %q: %d ok of %d B (want even, both workers drawing the same sizes), %d bytes", rows[1][n-1], ok, size, b)
			}
			sizes[size] = true
			count += ok
			bytes += b
		}
		if strconv.FormatInt(count, 10) != rows[1][5] || strconv.FormatInt(bytes, 10) != rows[1][9] || len(sizes) != 3 {
			t.Fatalf("mix %q sums to %d transactions and %d bytes; trial %s and %s", rows[1][n-1], count, bytes, rows[1][5], rows[1][9])
		}
	})
	// A worker's generator strain crosses the wire: with --cpu-busy near 0
	// every trial is strained; one that passes stands, naming the worker,
	// one that fails (a closed port) is INVALID, exit 3, never the device's
	// limit.
	closed := "127.0.0.1:" + strconv.Itoa(testpeer.FreePort(t))
	for _, c := range []struct {
		name, target, verdict, reason string
		code                          int
	}{
		{"strained pass", plainAddr, "pass", "passed with the generator strained: worker ", 0},
		{"strained failure", closed, "invalid", "generator limit: worker ", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			port := testpeer.FreePort(t)
			benchWorker(t, "sw1", port)
			benchWorker(t, "sw2", port)
			dir := t.TempDir()
			code, out := runBenchController(t, dir, port, "cps", "-H", "http://"+c.target, "--start", "40", "--max", "40", "--trial-time", "400ms",
				"--connect-timeout", "1s", "--cpu-busy", "0.000001", "--retry-invalid", "0", "--csv", filepath.Join(dir, "x"))
			rows := readCSV(t, filepath.Join(dir, "x_bench.csv"))
			if code != c.code || len(rows) != 3 || rows[1][15] != c.verdict || !strings.Contains(rows[1][16], c.reason) || !strings.Contains(rows[1][16], "CPU") {
				t.Fatalf("exit %d, csv %q; want %d, %s %q\n%s", code, rows, c.code, c.verdict, c.reason, out)
			}
		})
	}
	// The CA file is the workers': it is read in their directory, not the
	// controller's.
	cert, err := target.SelfSigned("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	verified := startTLSTarget(t, target.ServerTLS(cert))
	for _, c := range []struct {
		name              string
		onWorkers, onCtrl bool
		code              int
		want              string
	}{
		{"ca file on the workers", true, false, 0, "tls verification       ca.pem (on each worker), name 127.0.0.1"},
		{"ca file missing on the workers", false, true, 2,
			"cicada bench: error: capacity: trial at 10: cluster: worker error: options a worker cannot honour: worker "},
	} {
		t.Run(c.name, func(t *testing.T) {
			port := testpeer.FreePort(t)
			ctrlDir, wDir := t.TempDir(), t.TempDir()
			for dir, put := range map[string]bool{ctrlDir: c.onCtrl, wDir: c.onWorkers} {
				if put {
					if err := os.WriteFile(filepath.Join(dir, "ca.pem"), caPEM, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			benchWorkerIn(t, "cw1", port, wDir)
			benchWorkerIn(t, "cw2", port, wDir)
			start := time.Now()
			code, out := runBenchController(t, ctrlDir, port, "cps", "-H", "https://"+verified, "--tls-ca-file", "ca.pem", "--start", "10", "--max", "10",
				"--trial-time", "500ms", "--csv", filepath.Join(ctrlDir, "x"))
			if code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d; want %d and %q:\n%s", code, c.code, c.want, out)
			}
			if code == 0 {
				rows := readCSV(t, filepath.Join(ctrlDir, "x_bench.csv"))
				if len(rows) != 3 || rows[1][5] == "0" || rows[1][6] != "0" || rows[1][n-4] != rows[1][5] {
					t.Fatalf("csv: want verified connections, as many full handshakes: %q", rows)
				}
				return
			}
			if strings.Count(out, "httpc: invalid TLS option (--tls-ca-file: stat ca.pem: no such file or directory)") != 2 {
				t.Fatalf("the workers' errors do not name the file:\n%s", out)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Fatalf("the refusal took %v", d)
			}
		})
	}
}

// startTLSTarget runs the built-in target over TLS in the test process.
func startTLSTarget(t *testing.T, c *tls.Config) string {
	s, err := target.New(target.Options{Listen: "127.0.0.1:0", TLS: c})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "tls target", 90*time.Second, func(ctx context.Context) {
		if err := s.Run(ctx); err != nil {
			t.Errorf("target Run = %v", err)
		}
	})
	return s.Addr().String()
}

// benchWorkerIn is benchWorker run in dir (where relative TLS files are
// read).
func benchWorkerIn(t *testing.T, name string, port int, dir string) *testpeer.Process {
	cmd := testpeer.SelfCommand(context.Background(), "TestHelperProcess", []string{"CICADA_TEST_HELPER=1", "HOME=" + t.TempDir()},
		"--", "--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(port), "--node-id", name)
	cmd.Dir = dir
	p, err := testpeer.StartProcess(cmd, filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(syscall.SIGTERM, 10*time.Second) })
	return p
}

// With --master the controller checks the TLS flags but not the files
// (the workers read them): bad names are refused at once (exit 2, before
// any wait), files are stated in the report as the workers'.
func TestBenchClusterTLSOptions(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-min-version", "0.9"}, "--tls-min-version"},
		{[]string{"--tls-curves", "P-999"}, "--tls-curves"},
		{[]string{"--mix", "1KiB:0"}, `mix entry 1 "1KiB:0": weight`},
		{[]string{"--mix", "1KiB:1", "--test", "cps"}, "--mix is for tps and throughput, not cps"},
		{[]string{"--test", "teardown"}, "-H https:// is for concurrent, cps, tps, throughput and latency"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			test, args := "tps", c.args
			if i := slices.Index(args, "--test"); i >= 0 {
				test, args = args[i+1], args[:i]
			}
			var out, errb strings.Builder
			code := run(append([]string{"bench", test, "-H", "https://127.0.0.1:9", "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", "1",
				"--expect-workers-max-wait", "1ms"}, args...), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), c.want) {
				t.Fatalf("exit %d; want 2 and %q:\n%s", code, c.want, errb.String())
			}
		})
	}
	o := benchTLSOptions{caFile: "/etc/ca.pem", cert: "c.pem", key: "k.pem", curves: []string{"X25519"}}
	if got := o.controller(false); got != &o {
		t.Fatal("standalone: the controller's options are not the flags")
	}
	if got := o.controller(true); got.caFile != "" || got.cert != "" || got.key != "" || len(got.curves) != 1 || o.caFile == "" {
		t.Fatalf("master: %+v (flags %+v)", got, o)
	}
	ps := o.clusterParams([]capacity.Param{{Name: "tls verification", Value: "system CAs, name 1.2.3.4"}}, true)
	want := []capacity.Param{{Name: "tls verification", Value: "/etc/ca.pem (on each worker), name 1.2.3.4"},
		{Name: "tls client certificate", Value: "c.pem, key k.pem (on each worker)"}}
	if !reflect.DeepEqual(ps, want) {
		t.Fatalf("params %q", ps)
	}
	if ps := o.clusterParams([]capacity.Param{{Name: "tls verification", Value: "x"}}, false); len(ps) != 1 || ps[0].Value != "x" {
		t.Fatalf("standalone params %q", ps)
	}
}
