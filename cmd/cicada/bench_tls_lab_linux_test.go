package main

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// HTTPS and traffic-mix searches of `cicada bench` in the lab of
// bench_lab_linux_test.go: `cicada target --tls-self-signed` on
// 198.18.1.1:443 beside the plain target on :80 (no certificate file: the
// bench trusts it with --insecure, the fingerprint is in the target's
// log).

// startTLSTargetInLab starts the HTTPS target in d's server namespace and
// lets the device pass new connections to port 443 (its ruleset passes
// port 80's).
func startTLSTargetInLab(t *testing.T, d *lab.DUT) {
	t.Helper()
	if err := d.Device.Exec("nft", "add", "rule", "inet", lab.DUTTable, "forward", "ct", "state", "new", "tcp", "dport", "443", "counter", "accept"); err != nil {
		t.Fatal(err)
	}
	tg := startCicada(t, d.Server, "tls-target", "target", "--listen", lab.ServerIP+":443", "--tls-self-signed")
	waitLog(t, tg, labTimeout, "cicada target serving https://"+lab.ServerIP+":443")
	if !strings.Contains(tg.Log(), "SHA-256 fingerprint ") {
		t.Fatalf("the target did not print its certificate's fingerprint:\n%s", tg.Log())
	}
}

// benchInLabAt is benchInLab with the target URL and extra environment
// variables of the bench process.
func benchInLabAt(t *testing.T, d *lab.DUT, url string, env []string, args ...string) (result []string, trials [][]string, table string) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "lab")
	a := testpeer.SelfArgs("TestHelperProcess", append([]string{"--", "bench"}, append(args, "-H", url, "--csv", prefix)...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	cmd := d.Client.Command(a[0], a[1:]...)
	cmd.Env = append(append(os.Environ(), "CICADA_TEST_HELPER=1"), env...)
	var buf testpeer.SyncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("bench did not finish within 55 s:\n%s", buf.String())
	}
	out := buf.String()
	f, ferr := os.Open(prefix + "_bench.csv")
	if ferr != nil {
		t.Fatalf("bench (%v): no CSV: %v\n%s", err, ferr, out)
	}
	defer f.Close()
	rows, rerr := csv.NewReader(f).ReadAll()
	if rerr != nil || len(rows) < 3 {
		t.Fatalf("CSV: %v, %d rows\n%s", rerr, len(rows), out)
	}
	t.Logf("cicada bench %s -H %s:\n%s", strings.Join(args, " "), url, out)
	return rows[len(rows)-1], rows[1 : len(rows)-1], out
}

// HTTPS connections per second (RFC 9411 7.6) against a device passing
// 200 new connections a second, the HTTP search of the same device in
// the same run beside it: both find the device's limit, the HTTPS one
// with a full handshake on every connection.
func TestBenchLabHTTPSConnectionRateLimit(t *testing.T) {
	const limit = 200
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{})
	startTLSTargetInLab(t, d)
	nftLimit(t, d, limit, "ct", "state", "new", "tcp", "dport", "{ 80, 443 }")
	common := []string{"cps", "--pause", "500ms", "--start", "50", "--max", "5000", "--trial-time", "1s", "--resolution", "0.05",
		"--connect-timeout", "500ms", "--lag-tolerance", "200ms", "--retry-invalid", "2"}
	result, trials, table := benchInLabAt(t, d, "https://"+lab.ServerIP+":443", nil, append(common, "--insecure")...)
	labFigure(t, "kernel https", result, limit, 0.8, 1.15)
	if !strings.Contains(table, "Maximum TCP/HTTPS connection establishment rate (RFC 9411 7.6)") || !strings.Contains(table, "TLS negotiated: version 1.3") {
		t.Fatalf("table:\n%s", table)
	}
	n := len(trials[0])
	for i, tr := range trials {
		if tr[n-3] != "0" || tr[n-4] == "0" {
			t.Fatalf("trial %d: %s full, %s resumed handshakes; want only full ones", i+1, tr[n-4], tr[n-3])
		}
	}
	result, _, _ = benchInLabAt(t, d, "http://"+lab.ServerIP+":80", nil, append(common, "--http")...)
	labFigure(t, "kernel http", result, limit, 0.8, 1.15)
}

// Throughput searches with a traffic mix (RFC 9411 7.1) against the
// 40 Mbit/s token bucket of TestBenchLabThroughputLimit, over HTTP and
// HTTPS (RFC 9411 7.7) in the same run.
func TestBenchLabMixThroughputLimit(t *testing.T) {
	const mbit = 40
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{})
	startTLSTargetInLab(t, d)
	tbf40(t, d)
	common := []string{"throughput", "--mix", "1KiB:50,16KiB:30,512KiB:20", "--pause", "500ms",
		"--start", "5", "--max", "1000", "--trial-time", "1s", "--resolution", "0.05", "--conns", "16", "--lag-tolerance", "200ms", "--retry-invalid", "2"}
	for _, url := range []string{"http://" + lab.ServerIP + ":80", "https://" + lab.ServerIP + ":443"} {
		args, gen := common, "kernel mix"
		if strings.HasPrefix(url, "https") {
			args, gen = append(args, "--insecure"), "kernel mix https"
		}
		result, trials, table := benchInLabAt(t, d, url, nil, args...)
		labFigure(t, gen, result, mbit, 0.8, 1.05)
		if !strings.Contains(table, "with a traffic mix") || !strings.Contains(table, "Mix at trial ") {
			t.Fatalf("table:\n%s", table)
		}
		if mix := trials[0][len(trials[0])-1]; !strings.Contains(mix, "524288 B: ") {
			t.Fatalf("trial 1's mix %q", mix)
		}
	}
}

// The generator's own HTTPS handshake ceiling: no limit in the device, the
// bench on one core (GOMAXPROCS=1). The search must not report the
// generator's ceiling as the device's maximum: it ends INVALID by CPU,
// its highest pass a lower bound. With --tls-resume the ceiling is higher
// (an abbreviated handshake costs less).
func TestBenchLabHTTPSGeneratorCeiling(t *testing.T) {
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{})
	startTLSTargetInLab(t, d)
	var full float64
	for _, resume := range []bool{false, true} {
		args := []string{"cps", "--insecure", "--pause", "300ms", "--start", "100", "--max", "100000", "--trial-time", "1s", "--retry-invalid", "0"}
		name := "https full handshakes"
		if resume {
			args, name = append(args, "--tls-resume"), "https resumed"
		}
		result, _, table := benchInLabAt(t, d, "https://"+lab.ServerIP+":443", []string{"GOMAXPROCS=1"}, args...)
		if result[15] != "invalid" || !strings.Contains(result[16], "CPU") {
			if result[15] == "invalid" && !testpeer.CI() && !strings.Contains(result[16], "open-files") {
				t.Skipf("the generator was limited by something else than its CPU on this busy host: %s", result[16])
			}
			t.Fatalf("%s: result %q; want INVALID by the generator's CPU\n%s", name, result, table)
		}
		lower, err := strconv.ParseFloat(result[3], 64)
		if err != nil {
			t.Fatalf("%s: result %q", name, result)
		}
		if lower <= 0 && !testpeer.CI() {
			t.Skipf("%s: the host was too busy for the first trial (100/s); rightly INVALID, but no ceiling to show", name)
		}
		t.Logf("FIGURE\tcps\t%s, 1-core generator\tnone\tINVALID (CPU), passed %v connections/s\t%s s", name, lower, result[10])
		if !resume {
			full = lower
		} else if lower < full {
			t.Logf("resumed handshakes passed %v/s, full ones %v/s: the busy host's noise is above the difference", lower, full)
		}
	}
}

// The transaction rate over HTTPS and HTTP on the same device, same run:
// it passes 300 request segments a second (burst 20) to ports 80 and 443,
// the segments whose payload starts with an HTTP GET ("G") or a TLS
// application data record (0x17). The TLS handshakes' segments (records
// 0x16, and 0x14 before the client's Finished) pass, as a plain
// connection's SYN does: the device limits transactions, not handshakes.
// A dropped request comes back after the retransmission timeout, which
// the p99 bound of 190 ms fails.
func TestBenchLabHTTPSTransactionRateLimit(t *testing.T) {
	const limit = 300
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{})
	startTLSTargetInLab(t, d)
	nftLimit(t, d, limit, "tcp", "dport", "{ 80, 443 }", "ip", "length", ">", "60", "@ih,0,8", "{ 0x17, 0x47 }")
	common := []string{"tps", "--pause", "500ms", "--start", "50", "--max", "5000", "--trial-time", "1s", "--resolution", "0.05",
		"--latency-bound", "190ms", "--latency-percentile", "99", "--conns", "32", "--lag-tolerance", "200ms", "--retry-invalid", "2"}
	result, _, table := benchInLabAt(t, d, "https://"+lab.ServerIP+":443", nil, append(common, "--insecure")...)
	labFigure(t, "kernel https", result, limit, 0.8, 1.15)
	if !strings.Contains(table, "Maximum HTTPS transaction rate (RFC 3511 5.7 over TLS)") {
		t.Fatalf("table:\n%s", table)
	}
	result, _, _ = benchInLabAt(t, d, "http://"+lab.ServerIP+":80", nil, common...)
	labFigure(t, "kernel http", result, limit, 0.8, 1.15)
}
