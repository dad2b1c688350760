package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/dpprobe"
	"github.com/cicada-load/cicada/dataplane/ifcheck"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
)

// benchDataplaneOnly are `cicada bench`'s options that need --dataplane.
var benchDataplaneOnly = []string{"interface", "client-ips", "client-ports", "gateway", "dataplane-dedicated"}

// benchDataplaneTests are the tests the data plane runs.
var benchDataplaneTests = map[string]bool{"cps": true, "concurrent": true, "teardown": true}

// benchDataplaneOpts are the data plane's flags of `cicada bench`.
type benchDataplaneOpts struct {
	iface, clientIPs, clientPorts, gateway string
	dedicated                              bool
}

// benchDataplane opens the data plane's link and returns the trial of test
// (cps, concurrent or teardown) over it, and a close function. Options it cannot
// honour are refused.
func benchDataplane(kind, test, addr, path string, o *benchOptions, d *benchDataplaneOpts, stderr io.Writer) (capacity.TrialFunc, func(), error) {
	if kind != "afpacket" {
		return nil, nil, fmt.Errorf("--dataplane %q: cicada bench runs on afpacket only (afxdp and dpdk are not wired yet)", kind)
	}
	if !benchDataplaneTests[test] {
		return nil, nil, fmt.Errorf("test %q does not run on the data plane yet (cps, concurrent and teardown do)", test)
	}
	if o.http {
		return nil, nil, fmt.Errorf("--http: the data plane always sends one HTTP GET per connection")
	}
	if d.iface == "" || d.clientIPs == "" {
		return nil, nil, fmt.Errorf("--dataplane needs --interface and --client-ips")
	}
	r, err := ifcheck.ParseRange(d.clientIPs)
	if err != nil {
		return nil, nil, fmt.Errorf("--client-ips: %w", err)
	}
	if r.Count != 1 {
		return nil, nil, fmt.Errorf("--client-ips %q: cicada bench's data plane uses one client address", d.clientIPs)
	}
	lo, hi, err := ifcheck.ParsePorts(d.clientPorts)
	if err != nil {
		return nil, nil, fmt.Errorf("--client-ports: %w", err)
	}
	var gw netip.Addr
	if d.gateway != "" {
		if gw, err = netip.ParseAddr(d.gateway); err != nil || !gw.Is4() {
			return nil, nil, fmt.Errorf("--gateway %q is not an IPv4 address", d.gateway)
		}
	}
	server := netip.MustParseAddrPort(addr)
	warnings, err := ifcheck.Check(ifcheck.Options{Interface: d.iface, Owned: r, Dedicated: d.dedicated})
	if err != nil {
		return nil, nil, fmt.Errorf("%w (%s makes refusals warnings)", err, ifcheck.DedicatedFlag)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "cicada bench: warning: %s\n", w)
	}
	ifi, err := net.InterfaceByName(d.iface)
	if err != nil {
		return nil, nil, fmt.Errorf("--interface %q: %w", d.iface, err)
	}
	l, err := afpacket.Open(afpacket.Config{Index: ifi.Index, BlockSize: 64 << 10, Blocks: 64, RetireTimeout: time.Millisecond})
	if err != nil {
		return nil, nil, fmt.Errorf("afpacket on %s: %w", d.iface, err)
	}
	ip4 := func(a netip.Addr) uint32 {
		if !a.IsValid() {
			return 0
		}
		b := a.As4()
		return binary.BigEndian.Uint32(b[:])
	}
	host, _, _ := strings.Cut(strings.TrimPrefix(o.host, "http://"), "/")
	p, err := dpprobe.New(dpprobe.Options{Link: l, Waiter: l, ClientIP: ip4(r.First), ServerIP: ip4(server.Addr()), ServerPort: server.Port(),
		Gateway: ip4(gw), Host: host, Path: path, PortMin: lo, PortMax: hi, Duration: o.trial, RetransmitTimeout: o.connectTO,
		CPUBusy: o.cpuBusy, LagTolerance: o.lag})
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	closeLink := func() { l.Close() }
	switch test {
	case "cps":
		return p.CPS, closeLink, nil
	case "teardown":
		return p.Teardown, closeLink, nil
	}
	return p.Concurrent, closeLink, nil
}
