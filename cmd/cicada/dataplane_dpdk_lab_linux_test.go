//go:build dpdk && cgo && linux

package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/stack"
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
		"--dpdk-port", "net_af_packet_" + iface, "--dpdk-idle-sleep", "50us"}
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

// TestDPDKTargetHoldsConnections is TestTargetDataplaneHoldsConnections
// with the target over DPDK: `cicada target --dataplane dpdk` in the lab's
// server namespace, on a net_af_packet device of its veth end, holds 1,000
// connections of a client stack over AF_PACKET: every page served, the
// counters printed, SIGINT ends it with exit 0 and the totals.
func TestDPDKTargetHoldsConnections(t *testing.T) {
	const conns = 1000
	l := labtest.New(t)
	p, err := l.StackPair()
	if err != nil {
		t.Fatalf("StackPair = %v", err)
	}
	dev := "net_af_packet_" + p.Peer.Name
	tg := startCicada(t, p.Server, "target", "target", "--dataplane", "dpdk", "--interface", p.Peer.Name,
		"--dpdk-eal", "--no-huge -m 256 --log-level *:warning --vdev "+dev+",iface="+p.Peer.Name+",qpairs=1,framecnt=4096", "--dpdk-port", dev, "--dpdk-idle-sleep", "50us",
		"--listen", lab.ServerIP+":80", "--client-ips", lab.ClientIP, "--client-ports", "10000-10999", "--report-every", "200ms")
	waitLog(t, tg, labTimeout, "cicada target serving http://"+lab.ServerIP+":80/ on port "+dev+" (dpdk)")

	var link *afpacket.Link
	if err := p.Client.Do(func() (err error) {
		link, err = afpacket.Open(afpacket.Config{Index: p.Cicada.Index, BlockSize: 64 << 10, Blocks: 512, RetireTimeout: time.Millisecond})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	client, err := stack.New(stack.Config{Mode: stack.Client, Link: link, ClientIP: ip4(lab.ClientIP), ServerIP: ip4(lab.ServerIP),
		PortMin: 10000, PortMax: 10000 + conns - 1, Hold: true, RetransmitTimeout: time.Second, MaxRetries: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), labTimeout)
	defer cancel()
	loop := &engine.Loop{Stack: client, Waiter: link, Total: conns, MaxOpen: conns,
		Until: func(c *stack.Counters, n int) bool { return n == conns && c.HTTP2xx == conns || c.SocketsFailed > 0 }}
	err = loop.Run(ctx)
	c := client.Counters()
	if err != nil || c.HTTP2xx != conns || c.SocketsCurrent != conns || c.RstIn != 0 {
		t.Fatalf("client (%v): 2xx %d, open %d, RstIn %d, failed %d; want %d held", err, c.HTTP2xx, c.SocketsCurrent, c.RstIn, c.SocketsFailed, conns)
	}
	waitLog(t, tg, 10*time.Second, "open "+strconv.Itoa(conns)+", opened "+strconv.Itoa(conns)+", closed 0, failed 0, served "+strconv.Itoa(conns))
	stopCicada(t, tg, syscall.SIGINT)
	if want := "cicada target served " + strconv.Itoa(conns) + " pages on " + strconv.Itoa(conns) + " connections"; !strings.Contains(tg.Log(), want) {
		t.Errorf("target log lacks %q:\n%s", want, tail(tg.Log(), 2000))
	}
}
