//go:build dpdk && cgo && linux

package main

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// TestDPDKDataplaneStandalone is TestDataplaneStandalone over DPDK, in a
// binary built with the dpdk tag (make test-dpdk): `cicada --headless
// --dataplane dpdk` with the EAL arguments of a net_af_packet device on the
// lab's host end exits 0, its stats rows counting what nginx served.
func TestDPDKDataplaneStandalone(t *testing.T) {
	const users = 300
	h := newHostLab(t)
	prefix := filepath.Join(t.TempDir(), "run")
	iface := h.p.Cicada.Name
	args := []string{"--headless", "-f", seedScenario(t), "-u", strconv.Itoa(users), "-r", "150", "-t", "8s",
		"-H", h.url(), "--csv", prefix,
		"--dataplane", "dpdk", "--interface", iface, "--client-ips", "198.18.0.1-198.18.0.20",
		"--dpdk-eal", "--no-huge -m 256 --log-level *:warning --vdev net_af_packet_" + iface + ",iface=" + iface + ",qpairs=1,framecnt=4096",
		"--dpdk-port", "net_af_packet_" + iface}
	c := startCicada(t, nil, "standalone-dpdk", args...)
	h.noResets(t, c, users)
	exited, err := c.Wait(labTimeout)
	if !exited || err != nil {
		t.Fatalf("cicada --headless --dataplane dpdk: exited %v, %v; want exit 0\n%s", exited, err, tail(c.Log(), 4000))
	}
	agg := testpeer.CSVRow(prefix+"_stats.csv", "")
	if agg == nil || agg["Name"] != "Aggregated" || agg["Request Count"] != strconv.Itoa(users) || agg["Failure Count"] != "0" {
		t.Fatalf("Aggregated row %v; want %d requests, 0 failures\n%s", agg, users, tail(c.Log(), 3000))
	}
	if tot := testpeer.CSVRow(prefix+"_connections.csv", "Total"); tot == nil || tot["Connects"] != strconv.Itoa(users) {
		t.Errorf("connections Total row %v; want %d connects", tot, users)
	}
	h.check(t, users)
}
