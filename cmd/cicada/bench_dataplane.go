package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/dpprobe"
	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/dataplane/ifcheck"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/dataplane/users"
)

// benchDataplaneOnly are `cicada bench`'s options that need --dataplane.
var benchDataplaneOnly = []string{"interface", "client-ips", "client-ports", "gateway", "dataplane-dedicated", "dpdk-eal", "dpdk-port", "dpdk-idle-sleep"}

// benchDataplaneTests are the tests the data plane runs.
var benchDataplaneTests = map[string]bool{"cps": true, "concurrent": true, "teardown": true, "tps": true, "throughput": true}

// benchDataplaneOpts are the data plane's flags of `cicada bench`: the
// worker's, less --dataplane-cores (a trial polls one stack on one core).
type benchDataplaneOpts struct {
	iface, clientIPs, clientPorts, gateway string
	dedicated                              bool
	dpdkEAL, dpdkPort, dpdkIdle            string
}

// benchDataplane opens the data plane's link as the worker does (checked by
// parseDataplane and ifcheck, opened by users.OpenLink) and returns the
// trial of test over it, and a close function. Options it cannot honour are
// refused.
func benchDataplane(kind, test, addr, path string, o *benchOptions, d *benchDataplaneOpts, stderr io.Writer) (capacity.TrialFunc, func(), error) {
	switch kind {
	case users.LinkAFPacket, users.LinkAFXDP, users.LinkDPDK:
	default:
		return nil, nil, fmt.Errorf("--dataplane %q: one of afpacket, afxdp, dpdk", kind)
	}
	if !benchDataplaneTests[test] {
		return nil, nil, fmt.Errorf("test %q does not run on the data plane", test)
	}
	if o.http {
		return nil, nil, fmt.Errorf("--http: the data plane always sends one HTTP GET per connection")
	}
	if kind != users.LinkDPDK && (d.dpdkEAL != "" || d.dpdkPort != "" || d.dpdkIdle != "") {
		return nil, nil, fmt.Errorf("--dpdk-eal, --dpdk-port and --dpdk-idle-sleep are for --dataplane dpdk")
	}
	if (d.iface == "" && kind != users.LinkDPDK) || d.clientIPs == "" {
		return nil, nil, fmt.Errorf("--dataplane %s needs --interface and --client-ips", kind)
	}
	if kind == users.LinkDPDK && d.dpdkPort == "" {
		return nil, nil, fmt.Errorf("--dataplane dpdk needs --dpdk-port (and --dpdk-eal for a virtual device)")
	}
	dp, err := parseDataplane(&config.Config{Dataplane: kind, Interface: d.iface, ClientIPs: d.clientIPs, ClientPorts: d.clientPorts, Gateway: d.gateway,
		DataplaneDedicated: d.dedicated, DPDKEAL: d.dpdkEAL, DPDKPort: d.dpdkPort, DPDKIdleSleep: d.dpdkIdle})
	if err != nil {
		return nil, nil, err
	}
	if dp.clients.Count != 1 {
		return nil, nil, fmt.Errorf("--client-ips %q: cicada bench's data plane uses one client address", d.clientIPs)
	}
	server := netip.MustParseAddrPort(addr)
	// A DPDK port bound to vfio-pci has no kernel interface left to
	// check; a virtual device's is named and checked.
	if dp.iface != "" {
		warnings, err := ifcheck.Check(ifcheck.Options{Interface: dp.iface, Owned: dp.clients, Dedicated: dp.dedicated})
		if err != nil {
			return nil, nil, fmt.Errorf("%w (%s makes refusals warnings)", err, ifcheck.DedicatedFlag)
		}
		for _, w := range warnings {
			fmt.Fprintf(stderr, "cicada bench: warning: %s\n", w)
		}
	}
	where := "on " + dp.iface
	if kind == users.LinkDPDK {
		where = "on port " + dp.dpdkPort
	}
	l, wait, err := users.OpenLink(users.LinkOptions{Kind: kind, Interface: dp.iface, AFPacketRetire: time.Millisecond,
		DPDK: dpdk.Config{EAL: dp.dpdkEAL, Port: dp.dpdkPort, IdleSleep: dp.dpdkIdle}})
	if err != nil {
		return nil, nil, fmt.Errorf("--dataplane %s %s: %w", kind, where, err)
	}
	ip4 := func(a netip.Addr) uint32 {
		if !a.IsValid() {
			return 0
		}
		b := a.As4()
		return binary.BigEndian.Uint32(b[:])
	}
	host, _, _ := strings.Cut(strings.TrimPrefix(o.host, "http://"), "/")
	p, err := dpprobe.New(dpprobe.Options{Link: l, Waiter: wait, ClientIP: ip4(dp.clients.First), ServerIP: ip4(server.Addr()), ServerPort: server.Port(),
		Gateway: ip4(dp.gateway), Host: host, Path: path, PortMin: dp.portMin, PortMax: dp.portMax, Duration: o.trial, RetransmitTimeout: o.connectTO,
		CPUBusy: o.cpuBusy, LagTolerance: o.lag, Conns: o.conns, Timeout: o.timeout})
	if err != nil {
		_ = users.CloseLink(l)
		return nil, nil, err
	}
	closeLink := func() { _ = users.CloseLink(l) }
	switch test {
	case "cps":
		return p.CPS, closeLink, nil
	case "teardown":
		return p.Teardown, closeLink, nil
	case "tps":
		return p.TPS, closeLink, nil
	case "throughput":
		size := o.objectSize
		return func(ctx context.Context, mbps float64) (capacity.Trial, error) { return p.Throughput(ctx, mbps, size) }, closeLink, nil
	}
	return p.Concurrent, closeLink, nil
}
