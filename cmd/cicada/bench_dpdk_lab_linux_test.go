//go:build dpdk && cgo && linux

package main

import (
	"testing"

	"github.com/cicada-load/cicada/dataplane/lab"
)

// dpdkBenchArgs are `cicada bench --dataplane dpdk`'s options for a
// net_af_packet device on the client namespace's end of d.
func dpdkBenchArgs(d *lab.DUT) []string {
	iface := d.Cicada.Name
	dev := "net_af_packet_" + iface
	return []string{"--dataplane", "dpdk", "--interface", iface, "--client-ips", lab.ClientIP, "--gateway", lab.Gateway,
		"--dpdk-eal", "--no-huge -m 256 --log-level *:warning --vdev " + dev + ",iface=" + iface + ",qpairs=1,framecnt=4096",
		"--dpdk-port", dev, "--dpdk-idle-sleep", "50us", "--connect-timeout", "500ms", "--cpu-busy", "100"}
}

// TestDPDKBenchTransactionRate is TestBenchLabAFXDPCommand over DPDK, in a
// binary built with the dpdk tag (make test-dpdk): `cicada bench tps
// --dataplane dpdk` on a net_af_packet device of the client namespace's
// end finds the device's 300 requests a second.
func TestDPDKBenchTransactionRate(t *testing.T) {
	const limit = 300
	d := kernelServerDUT(t, lab.DUTConfig{})
	nftLimit(t, d, limit, requestSegments...)
	result, _, _ := benchInLab(t, d, append(append([]string{"tps"}, dpdkBenchArgs(d)...), "--pause", "500ms", "--start", "50", "--max", "5000",
		"--trial-time", "1s", "--resolution", "0.05", "--latency-bound", "190ms", "--latency-percentile", "99", "--conns", "32", "--lag-tolerance", "200ms")...)
	labFigure(t, "data plane (dpdk)", result, limit, 0.8, 1.15)
}

// TestDPDKBenchThroughput: `cicada bench throughput --dataplane dpdk`
// through the device's 40 Mbit/s token bucket.
func TestDPDKBenchThroughput(t *testing.T) {
	const mbit = 40
	d := kernelServerDUT(t, lab.DUTConfig{})
	tbf40(t, d)
	result, _, _ := benchInLab(t, d, append(append([]string{"throughput"}, dpdkBenchArgs(d)...), "--object-size", "65536", "--pause", "500ms",
		"--start", "5", "--max", "1000", "--trial-time", "1s", "--resolution", "0.05", "--conns", "16", "--lag-tolerance", "200ms")...)
	labFigure(t, "data plane (dpdk)", result, mbit, 0.8, 1.05)
}
