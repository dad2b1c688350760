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

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/dpprobe"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// The searches of `cicada bench` against devices with a known limit (root;
// skipped otherwise, failed under CI=true): the lab's device-under-test
// chain with kernel sockets at both ends,
//
//	client ns 198.18.0.1 -- [198.18.0.254 device 198.18.1.254] -- 198.18.1.1 server ns
//
// `cicada target` in the server namespace, `cicada bench` in the client
// namespace, and one limit in the device: nftables "ct count over" (the
// concurrent connections), "limit rate over" on new connections (the
// connection rate), a tc token bucket towards the client (the throughput).
// nf_conntrack_max is global on this kernel (read-only in a namespace), so
// the connection limit is the ruleset's, not the table's size.

// skipShort skips a search of several trials under -short.
func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a capacity search of 5-15 s (-short)")
	}
}

// kernelDUT builds the lab's DUT chain and gives its client and server
// ends kernel addresses and routes through the device, then starts
// `cicada target` on the server's.
func kernelDUT(t *testing.T, cfg lab.DUTConfig) *lab.DUT {
	t.Helper()
	l := labtest.New(t)
	d, err := l.DUTChain(cfg)
	if err != nil {
		t.Fatalf("DUTChain = %v", err)
	}
	for _, c := range []struct {
		ns   *lab.Netns
		args []string
	}{
		{d.Client, []string{"addr", "add", lab.ClientIP + "/24", "dev", d.Cicada.Name}},
		{d.Client, []string{"route", "add", "198.18.1.0/24", "via", lab.Gateway}},
		{d.Server, []string{"addr", "add", lab.ServerNet, "dev", d.Peer.Name}},
		{d.Server, []string{"route", "add", lab.ClientRange, "via", lab.DUTServerGateway}},
	} {
		if err := c.ns.Exec("ip", c.args...); err != nil {
			t.Fatal(err)
		}
	}
	tg := startCicada(t, d.Server, "target", "target", "--listen", lab.ServerIP+":80")
	waitLog(t, tg, labTimeout, "cicada target serving")
	return d
}

// benchInLab runs `cicada bench` in the client namespace and returns its
// CSV's result row, the trials and the table.
func benchInLab(t *testing.T, d *lab.DUT, args ...string) (result []string, trials [][]string, table string) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "lab")
	a := testpeer.SelfArgs("TestHelperProcess", append([]string{"--", "bench"}, append(args,
		"-H", "http://"+lab.ServerIP+":80", "--csv", prefix, "--html", prefix+".html")...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	cmd := d.Client.Command(a[0], a[1:]...)
	cmd.Env = append(os.Environ(), "CICADA_TEST_HELPER=1")
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
	t.Logf("cicada bench %s:\n%s", strings.Join(args, " "), out)
	return rows[len(rows)-1], rows[1 : len(rows)-1], out
}

// labFigure checks a search's found maximum against the device's known
// limit within tol (relative) and logs the figure.
func labFigure(t *testing.T, gen string, result []string, known, lo, hi float64) {
	t.Helper()
	if result[15] == "invalid" && !strings.Contains(result[16], "open-files") {
		// The right answer on an overloaded host (the pacer descheduled
		// past its tolerance twice): no maximum claimed. What this test
		// checks, a found limit, cannot be measured here now.
		t.Skipf("the generator was the limit on this busy host, so no maximum was claimed: %s", result[16])
	}
	found, err := strconv.ParseFloat(result[3], 64)
	if err != nil || result[15] != "found" {
		t.Fatalf("result %q; want a found maximum", result)
	}
	if found < known*lo || found > known*hi {
		t.Fatalf("found %v %s; the device's limit is %v (want %v..%v)", found, result[2], known, known*lo, known*hi)
	}
	t.Logf("FIGURE\t%s\t%s\t%v\t%v %s\t%s s", result[1], gen, known, found, result[2], result[10])
}

func TestBenchLabConcurrentLimit(t *testing.T) {
	const limit = 300
	d := kernelDUT(t, lab.DUTConfig{MaxNew: limit, Conns: 2 * limit})
	result, _, _ := benchInLab(t, d, "concurrent", "--http", "--pause", "0", "--start", "50", "--max", "5000", "--resolution", "0.01",
		"--connect-timeout", "500ms", "--cpu-busy", "1")
	labFigure(t, "kernel", result, limit, 0.98, 1.02)
}

func TestBenchLabConnectionRateLimit(t *testing.T) {
	const limit = 200
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{})
	nftLimit(t, d, limit, "ct", "state", "new", "tcp", "dport", "80")
	result, _, _ := benchInLab(t, d, "cps", "--http", "--pause", "500ms", "--start", "50", "--max", "5000", "--trial-time", "1s", "--resolution", "0.05",
		"--connect-timeout", "500ms", "--lag-tolerance", "200ms", "--cpu-busy", "1")
	labFigure(t, "kernel", result, limit, 0.8, 1.15)
}

func TestBenchLabThroughputLimit(t *testing.T) {
	const mbit = 40
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{})
	tbf40(t, d)
	result, _, _ := benchInLab(t, d, "throughput", "--object-size", "65536", "--pause", "500ms", "--start", "5", "--max", "1000", "--trial-time", "1s",
		"--resolution", "0.05", "--conns", "16", "--lag-tolerance", "200ms", "--cpu-busy", "1")
	labFigure(t, "kernel", result, mbit, 0.8, 1.05)
}

// dataplaneDUT builds a DUT chain for the data plane: `cicada target
// --dataplane afpacket` in the server namespace, and a dpprobe client over
// AF_PACKET on the client namespace's end.
func dataplaneDUT(t *testing.T, cfg lab.DUTConfig, targetArgs ...string) (*lab.DUT, *dpprobe.Prober) {
	t.Helper()
	d := dataplaneTarget(t, cfg, targetArgs...)
	var link *afpacket.Link
	if err := d.Client.Do(func() (err error) {
		link, err = afpacket.Open(afpacket.Config{Index: d.Cicada.Index, BlockSize: 64 << 10, Blocks: 64, RetireTimeout: time.Millisecond})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	p, err := dpprobe.New(dpprobe.Options{Link: link, Waiter: link, ClientIP: ip4(lab.ClientIP), ServerIP: ip4(lab.ServerIP),
		Gateway: ip4(lab.Gateway), Duration: time.Second, RetransmitTimeout: 500 * time.Millisecond, CPUBusy: 100})
	if err != nil {
		t.Fatal(err)
	}
	return d, p
}

// dataplaneTarget builds a DUT chain with `cicada target --dataplane
// afpacket` in its server namespace.
func dataplaneTarget(t *testing.T, cfg lab.DUTConfig, targetArgs ...string) *lab.DUT {
	t.Helper()
	l := labtest.New(t)
	d, err := l.DUTChain(cfg)
	if err != nil {
		t.Fatalf("DUTChain = %v", err)
	}
	tg := startCicada(t, d.Server, "target", append([]string{"target", "--dataplane", "afpacket", "--interface", d.Peer.Name,
		"--listen", lab.ServerIP + ":80", "--client-ips", lab.ClientIP, "--client-ports", "10000-60000"}, targetArgs...)...)
	waitLog(t, tg, labTimeout, "cicada target serving http://"+lab.ServerIP+":80/")
	return d
}

// `cicada bench concurrent --dataplane afpacket` in the client namespace
// finds the device's connection limit of TestBenchLabConcurrentLimit, the
// kernel generator's figure beside it.
func TestBenchLabDataplaneCommand(t *testing.T) {
	const conns = 300
	skipShort(t)
	d := dataplaneTarget(t, lab.DUTConfig{MaxNew: conns, Conns: 2 * conns})
	result, _, _ := benchInLab(t, d, "concurrent", "--pause", "0", "--dataplane", "afpacket", "--interface", d.Cicada.Name, "--client-ips", lab.ClientIP,
		"--gateway", lab.Gateway, "--start", "50", "--max", "5000", "--resolution", "0.01", "--connect-timeout", "500ms", "--cpu-busy", "100")
	labFigure(t, "data plane", result, conns, 0.98, 1.02)
}

// TestBenchLabDataplaneRateLimit runs the cps search on the data plane
// (dpprobe over AF_PACKET, in this process) against the device's rate limit
// of TestBenchLabConnectionRateLimit, the kernel generator's figure beside
// it.
func TestBenchLabDataplaneRateLimit(t *testing.T) {
	const rate = 200
	skipShort(t)
	d, p := dataplaneDUT(t, lab.DUTConfig{})
	nftLimit(t, d, rate, "ct", "state", "new", "tcp", "dport", "80")
	dataplaneFigure(t, "cps", capacity.Search{Start: 50, Max: 5000, Resolution: 0.05, RetryInvalid: 1, Pause: 500 * time.Millisecond, Criteria: capacity.Criteria{MinAchieved: 0.95}}, p.CPS, rate, 0.8, 1.15)
}

// dataplaneFigure runs a search with a data-plane trial and checks and logs
// its figure as labFigure does.
func dataplaneFigure(t *testing.T, test string, s capacity.Search, trial capacity.TrialFunc, known, lo, hi float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	r, err := s.Run(ctx, trial)
	rep := &capacity.Report{Test: test, Title: test + " (data plane)", RFC: "RFC 9411", Unit: map[string]string{"cps": "connections/s", "concurrent": "connections", "teardown": "connections/s"}[test], Result: r}
	var b strings.Builder
	_ = rep.WriteTable(&b)
	t.Logf("data plane %s:\n%s", test, b.String())
	if err != nil {
		t.Fatal(err)
	}
	if r.Invalid != "" {
		t.Skipf("the generator was the limit on this busy host, so no maximum was claimed: %s", r.Invalid)
	}
	if !r.Found || r.Max < known*lo || r.Max > known*hi {
		t.Fatalf("found %v (%s); the device's limit is %v (want %v..%v)", r.Max, r.Outcome(), known, known*lo, known*hi)
	}
	t.Logf("FIGURE\t%s\tdata plane\t%v\t%v %s\t%.3f s", test, known, r.Max, rep.Unit, r.Elapsed.Seconds())
}

// nftLimit inserts a rule at the head of the device's forward chain that
// drops what match selects beyond rate per second (burst 20 packets).
func nftLimit(t *testing.T, d *lab.DUT, rate int, match ...string) {
	t.Helper()
	args := append([]string{"insert", "rule", "inet", lab.DUTTable, "forward"}, match...)
	args = append(args, "limit", "rate", "over", strconv.Itoa(rate)+"/second", "burst", "20", "packets", "counter", "drop")
	if err := d.Device.Exec("nft", args...); err != nil {
		t.Fatal(err)
	}
}

// requestSegments selects the client's segments with a payload (the GETs):
// IP length over 60, above a SYN's or a bare ACK's with the kernel's
// options and the data plane's.
var requestSegments = []string{"tcp", "dport", "80", "ip", "length", ">", "60"}

// tbf40 limits the device's traffic towards the client to 40 Mbit/s.
func tbf40(t *testing.T, d *lab.DUT) {
	t.Helper()
	if err := d.Device.Exec("tc", "qdisc", "add", "dev", d.DevClient.Name, "root", "tbf", "rate", "40mbit",
		"burst", "32kb", "latency", "400ms"); err != nil {
		t.Fatal(err)
	}
}

// The data plane's teardown search against the device of
// TestBenchLabTeardownRateLimit: a dropped FIN is retransmitted after the
// stack's 500 ms timeout, and the close counts as failed.
func TestBenchLabDataplaneTeardownRateLimit(t *testing.T) {
	const limit = 100
	skipShort(t)
	d, p := dataplaneDUT(t, lab.DUTConfig{})
	nftLimit(t, d, limit, "tcp", "dport", "80", "tcp", "flags", "&", "fin", "==", "fin")
	dataplaneFigure(t, "teardown", capacity.Search{Start: 25, Max: 5000, Resolution: 0.05, RetryInvalid: 1, Pause: 500 * time.Millisecond, Criteria: capacity.Criteria{MinAchieved: 0.95}}, p.Teardown, limit, 0.8, 1.25)
}

// The transaction rate: the device passes 300 requests a second. A dropped
// request comes back after the kernel's retransmission timeout (200 ms or
// more), which the p99 latency bound of 190 ms fails (just below that
// minimum, so that a short stall of a busy machine is not taken for a drop).
func TestBenchLabTransactionRateLimit(t *testing.T) {
	const limit = 300
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{})
	nftLimit(t, d, limit, requestSegments...)
	result, _, _ := benchInLab(t, d, "tps", "--pause", "500ms", "--start", "50", "--max", "5000", "--trial-time", "1s", "--resolution", "0.05",
		"--latency-bound", "190ms", "--latency-percentile", "99", "--conns", "32", "--lag-tolerance", "200ms", "--cpu-busy", "1")
	labFigure(t, "kernel", result, limit, 0.8, 1.15)
}

// The teardown rate: the device passes 100 client FINs a second; a close
// whose FIN was dropped does not see the server's FIN within 150 ms.
func TestBenchLabTeardownRateLimit(t *testing.T) {
	const limit = 100
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{})
	nftLimit(t, d, limit, "tcp", "dport", "80", "tcp", "flags", "&", "fin", "==", "fin")
	result, _, _ := benchInLab(t, d, "teardown", "--pause", "500ms", "--start", "25", "--max", "5000", "--trial-time", "1s", "--resolution", "0.05",
		"--timeout", "150ms", "--lag-tolerance", "200ms", "--cpu-busy", "1")
	labFigure(t, "kernel", result, limit, 0.8, 1.25)
}

// benchClusterInLab runs `cicada bench ARGS --master --expect-workers 2`
// with two cicada workers, all three in the client namespace (the
// controller on its loopback), as benchInLab does standalone.
func benchClusterInLab(t *testing.T, d *lab.DUT, args ...string) (result []string, trials [][]string, table string) {
	t.Helper()
	const port = "5557"
	for _, name := range []string{"labw1", "labw2"} {
		startCicada(t, d.Client, name, "--worker", "--master-host", "127.0.0.1", "--master-port", port, "--node-id", name)
	}
	return benchInLab(t, d, append(args, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", port,
		"--expect-workers", "2", "--expect-workers-max-wait", "30s")...)
}

// The concurrent search of TestBenchLabConcurrentLimit across two workers
// (each holds its share before either starts the second round): the same
// limit within the same tolerance.
func TestBenchLabClusterConcurrentLimit(t *testing.T) {
	const limit = 300
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{MaxNew: limit, Conns: 2 * limit})
	result, _, table := benchClusterInLab(t, d, "concurrent", "--http", "--pause", "0", "--start", "50", "--max", "5000", "--resolution", "0.01",
		"--connect-timeout", "500ms", "--cpu-busy", "1")
	if !strings.Contains(table, "kernel sockets, 2 workers") {
		t.Fatalf("the report does not name the cluster:\n%s", table)
	}
	labFigure(t, "kernel, 2 workers", result, limit, 0.98, 1.02)
}

// The connection rate search of TestBenchLabConnectionRateLimit across two
// workers, each offering half of every trial's rate.
func TestBenchLabClusterConnectionRateLimit(t *testing.T) {
	const limit = 200
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{})
	nftLimit(t, d, limit, "ct", "state", "new", "tcp", "dport", "80")
	result, _, _ := benchClusterInLab(t, d, "cps", "--http", "--pause", "500ms", "--start", "50", "--max", "5000", "--trial-time", "1s", "--resolution", "0.05",
		"--connect-timeout", "500ms", "--lag-tolerance", "200ms", "--cpu-busy", "1")
	labFigure(t, "kernel, 2 workers", result, limit, 0.8, 1.15)
}

// A data-plane worker (cicada --worker --dataplane afpacket) joins the
// bench controller and runs the concurrent search's trials with dpprobe on
// its interface and client address: the limit of TestBenchLabDataplaneCommand
// within the same tolerance.
func TestBenchLabClusterDataplaneWorker(t *testing.T) {
	const conns = 300
	skipShort(t)
	d := dataplaneTarget(t, lab.DUTConfig{MaxNew: conns, Conns: 2 * conns})
	const port = "5557"
	w := startCicada(t, d.Client, "dpworker", "--worker", "--master-host", "127.0.0.1", "--master-port", port, "--node-id", "dpw",
		"-f", seedScenario(t), "-H", "http://"+lab.ServerIP+":80", "--dataplane", "afpacket", "--interface", d.Cicada.Name, "--client-ips", lab.ClientIP,
		"--client-ports", "10000-60000", "--gateway", lab.Gateway)
	result, _, table := benchInLab(t, d, "concurrent", "--pause", "0", "--start", "50", "--max", "5000", "--resolution", "0.01",
		"--connect-timeout", "500ms", "--cpu-busy", "100", "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", port,
		"--expect-workers", "1", "--expect-workers-max-wait", "30s")
	if !strings.Contains(table, "worker 1               dpw, data plane (afpacket)") || !strings.Contains(table, "data plane (afpacket), 1 worker") {
		t.Fatalf("the report does not name the data-plane worker:\n%s\nworker:\n%s", table, tail(w.Log(), 3000))
	}
	labFigure(t, "data plane, 1 worker", result, conns, 0.98, 1.02)
}
