//go:build dpdk && cgo && linux

package main

import (
	"testing"

	"github.com/cicada-load/cicada/dataplane/lab"
)

// TestDPDKBenchTransactionRate is TestBenchLabAFXDPCommand over DPDK, in a
// binary built with the dpdk tag (make test-dpdk): `cicada bench tps
// --dataplane dpdk` on a net_af_packet device of the client namespace's
// end finds the device's 300 requests a second.
func TestDPDKBenchTransactionRate(t *testing.T) {
	const limit = 300
	d := kernelServerDUT(t, lab.DUTConfig{})
	nftLimit(t, d, limit, requestSegments...)
	iface := d.Cicada.Name
	dev := "net_af_packet_" + iface
	result, _, _ := benchInLab(t, d, "tps", "--dataplane", "dpdk", "--interface", iface, "--client-ips", lab.ClientIP, "--gateway", lab.Gateway,
		"--dpdk-eal", "--no-huge -m 256 --log-level *:warning --vdev "+dev+",iface="+iface+",qpairs=1,framecnt=4096", "--dpdk-port", dev, "--dpdk-idle-sleep", "50us",
		"--pause", "500ms", "--start", "50", "--max", "5000", "--trial-time", "1s", "--resolution", "0.05", "--latency-bound", "190ms",
		"--latency-percentile", "99", "--conns", "32", "--connect-timeout", "500ms", "--lag-tolerance", "200ms", "--cpu-busy", "100")
	labFigure(t, "data plane (dpdk net_af_packet)", result, limit, 0.8, 1.15)
}
