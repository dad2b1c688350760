package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/dpprobe"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/users"
)

// The data plane's tps and throughput searches (dpprobe over AF_PACKET or
// AF_XDP, in this process, and `cicada bench --dataplane afxdp`) against the
// devices of bench_lab_linux_test.go, with the kernel's `cicada target` as
// the server: a kernel sender's congestion control through the token
// bucket, /bytes/N, keep-alive.

// kernelServerDUT builds the lab's DUT chain with `cicada target` (kernel
// sockets) in its server namespace and no kernel address on the client's
// end, which the data plane owns.
func kernelServerDUT(t *testing.T, cfg lab.DUTConfig) *lab.DUT {
	t.Helper()
	l := labtest.New(t)
	d, err := l.DUTChain(cfg)
	if err != nil {
		t.Fatalf("DUTChain = %v", err)
	}
	for _, args := range [][]string{
		{"addr", "add", lab.ServerNet, "dev", d.Peer.Name},
		{"route", "add", lab.ClientRange, "via", lab.DUTServerGateway},
	} {
		if err := d.Server.Exec("ip", args...); err != nil {
			t.Fatal(err)
		}
	}
	tg := startCicada(t, d.Server, "target", "target", "--listen", lab.ServerIP+":80")
	waitLog(t, tg, labTimeout, "cicada target serving")
	return d
}

// labProber opens a link of kind on the client namespace's end as `cicada
// bench --dataplane` does (users.OpenLink) and returns a Prober over it
// with o's trial options.
func labProber(t *testing.T, d *lab.DUT, kind string, o dpprobe.Options) *dpprobe.Prober {
	t.Helper()
	var l link.Link
	if err := d.Client.Do(func() (err error) {
		l, o.Waiter, err = users.OpenLink(users.LinkOptions{Kind: kind, Interface: d.Cicada.Name, AFPacketRetire: time.Millisecond})
		return err
	}); err != nil {
		t.Fatalf("open %s: %v", kind, err)
	}
	t.Cleanup(func() { _ = users.CloseLink(l) })
	o.Link, o.ClientIP, o.ServerIP, o.Gateway = l, ip4(lab.ClientIP), ip4(lab.ServerIP), ip4(lab.Gateway)
	if o.CPUBusy == 0 { // this busy machine's stalls are not the trial's
		o.CPUBusy = 100
	}
	p, err := dpprobe.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dataplaneSearch runs a search with a data-plane trial, logs its table
// and its FIGURE line, and checks it: a maximum within lo..hi of known, or,
// when invalidOK names the data plane's own limit, a search that stopped on
// it (INVALID) rather than a false maximum.
func dataplaneSearch(t *testing.T, gen, test, unit string, s capacity.Search, trial capacity.TrialFunc, known, lo, hi float64, invalidOK string) capacity.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	r, err := s.Run(ctx, trial)
	rep := &capacity.Report{Test: test, Title: test + " (" + gen + ")", RFC: "RFC 3511", Unit: unit, Result: r}
	var b strings.Builder
	_ = rep.WriteTable(&b)
	t.Logf("%s %s:\n%s", gen, test, b.String())
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case r.Invalid != "" && invalidOK != "" && strings.Contains(r.Invalid, invalidOK):
		t.Logf("FIGURE\t%s\t%s\t%v\tINVALID (%s)\t%.3f s", test, gen, known, r.Invalid, r.Elapsed.Seconds())
		return r
	case r.Invalid != "":
		t.Skipf("the generator was the limit on this busy host, so no maximum was claimed: %s", r.Invalid)
	}
	if !r.Found || r.Max < known*lo || r.Max > known*hi {
		t.Fatalf("found %v (%s); the device's limit is %v (want %v..%v)", r.Max, r.Outcome(), known, known*lo, known*hi)
	}
	t.Logf("FIGURE\t%s\t%s\t%v\t%v %s\t%.3f s", test, gen, known, r.Max, unit, r.Elapsed.Seconds())
	return r
}

// tpsSearch is TestBenchLabTransactionRateLimit's search: a dropped
// request comes back after the stack's 500 ms retransmission timeout,
// which the p99 bound of 190 ms fails.
var tpsSearch = capacity.Search{Start: 50, Max: 5000, Resolution: 0.05, RetryInvalid: 1, Pause: 500 * time.Millisecond,
	Criteria: capacity.Criteria{MinAchieved: 0.95, LatencyBound: 190 * time.Millisecond, LatencyPercentile: 99}}

// The data plane's tps search over AF_PACKET against the device that
// passes 300 requests a second.
func TestBenchLabDataplaneTransactionRateLimit(t *testing.T) {
	const limit = 300
	skipShort(t)
	d := kernelServerDUT(t, lab.DUTConfig{})
	nftLimit(t, d, limit, requestSegments...)
	p := labProber(t, d, users.LinkAFPacket, dpprobe.Options{Duration: time.Second, Conns: 32, RetransmitTimeout: 500 * time.Millisecond, LagTolerance: 200 * time.Millisecond})
	dataplaneSearch(t, "data plane (afpacket)", "tps", "transactions/s", tpsSearch, p.TPS, limit, 0.8, 1.15, "")
}

// throughputSearch is TestBenchLabThroughputLimit's search.
var throughputSearch = capacity.Search{Start: 5, Max: 1000, Resolution: 0.05, RetryInvalid: 1, Pause: 500 * time.Millisecond,
	Criteria: capacity.Criteria{MinAchieved: 0.95}}

// The data plane's throughput search over AF_PACKET through the device's
// 40 Mbit/s token bucket: the limit within 20 % (the payload's share of
// the bucket's wire rate is 38.3 Mbit/s).
func TestBenchLabDataplaneThroughputLimit(t *testing.T) {
	const mbit = 40
	skipShort(t)
	d := kernelServerDUT(t, lab.DUTConfig{})
	tbf40(t, d)
	p := labProber(t, d, users.LinkAFPacket, dpprobe.Options{Duration: time.Second, Conns: 16, Path: "/bytes/65536", RetransmitTimeout: 500 * time.Millisecond,
		LagTolerance: 200 * time.Millisecond})
	dataplaneSearch(t, "data plane (afpacket)", "throughput", "Mbit/s", throughputSearch,
		func(ctx context.Context, mbps float64) (capacity.Trial, error) { return p.Throughput(ctx, mbps, 65536) }, mbit, 0.8, 1.05, "")
}

// `cicada bench tps --dataplane afxdp` in the client namespace finds the
// transaction rate limit of TestBenchLabTransactionRateLimit over AF_XDP.
func TestBenchLabAFXDPCommand(t *testing.T) {
	const limit = 300
	skipShort(t)
	d := kernelServerDUT(t, lab.DUTConfig{})
	nftLimit(t, d, limit, requestSegments...)
	result, _, _ := benchInLab(t, d, "tps", "--dataplane", "afxdp", "--interface", d.Cicada.Name, "--client-ips", lab.ClientIP, "--gateway", lab.Gateway,
		"--pause", "500ms", "--start", "50", "--max", "5000", "--trial-time", "1s", "--resolution", "0.05", "--latency-bound", "190ms",
		"--latency-percentile", "99", "--conns", "32", "--connect-timeout", "500ms", "--lag-tolerance", "200ms", "--cpu-busy", "100")
	labFigure(t, "data plane (afxdp)", result, limit, 0.8, 1.15)
}

// TestBenchLabDataplaneThroughputLimit's search over AF_XDP.
func TestBenchLabAFXDPThroughputLimit(t *testing.T) {
	const mbit = 40
	skipShort(t)
	d := kernelServerDUT(t, lab.DUTConfig{})
	tbf40(t, d)
	p := labProber(t, d, users.LinkAFXDP, dpprobe.Options{Duration: time.Second, Conns: 16, Path: "/bytes/65536", RetransmitTimeout: 500 * time.Millisecond,
		LagTolerance: 200 * time.Millisecond})
	dataplaneSearch(t, "data plane (afxdp)", "throughput", "Mbit/s", throughputSearch,
		func(ctx context.Context, mbps float64) (capacity.Trial, error) { return p.Throughput(ctx, mbps, 65536) }, mbit, 0.8, 1.05, "")
}

// A data-plane worker (cicada --worker --dataplane afpacket) runs the tps
// search's trials for the bench controller: the device's 300 requests a
// second, as standalone.
func TestBenchLabClusterDataplaneTPS(t *testing.T) {
	const limit = 300
	skipShort(t)
	d := kernelServerDUT(t, lab.DUTConfig{})
	nftLimit(t, d, limit, requestSegments...)
	const port = "5558"
	w := startCicada(t, d.Client, "dpworker", "--worker", "--master-host", "127.0.0.1", "--master-port", port, "--node-id", "dpw",
		"-f", seedScenario(t), "-H", "http://"+lab.ServerIP+":80", "--dataplane", "afpacket", "--interface", d.Cicada.Name, "--client-ips", lab.ClientIP,
		"--client-ports", "10000-60000", "--gateway", lab.Gateway)
	result, _, table := benchInLab(t, d, "tps", "--pause", "500ms", "--start", "50", "--max", "5000", "--trial-time", "1s", "--resolution", "0.05",
		"--latency-bound", "190ms", "--latency-percentile", "99", "--conns", "32", "--connect-timeout", "500ms", "--lag-tolerance", "200ms", "--cpu-busy", "100",
		"--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", port, "--expect-workers", "1", "--expect-workers-max-wait", "30s")
	if !strings.Contains(table, "dpw, data plane (afpacket)") {
		t.Fatalf("the report does not name the data-plane worker:\n%s\nworker:\n%s", table, tail(w.Log(), 3000))
	}
	labFigure(t, "data plane, 1 worker", result, limit, 0.8, 1.15)
}
