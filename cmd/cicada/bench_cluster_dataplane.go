package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/cluster"
	"github.com/cicada-load/cicada/capacity/dpprobe"
	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/users"
)

// benchDataplaneAgent is a data-plane worker's bench agent: the trials of
// capacity/dpprobe (every test) over an AF_PACKET socket of
// its own on the worker's interface, from its first client address and its
// client ports (the worker's users are idle meanwhile: the controller runs
// no users). Other links are refused in the ready answer.
func benchDataplaneAgent(dp *dataplaneOpts, log *slog.Logger) (cluster.AgentOptions, func()) {
	o := cluster.AgentOptions{Logger: log, Runtime: cluster.RuntimeDataplane + " (" + dp.link + ")", Tests: []string{"cps", "concurrent", "teardown", "tps", "throughput"}}
	if dp.link != users.LinkAFPacket {
		o.Refuse = fmt.Sprintf("bench trials on the data plane run over afpacket only (this worker: --dataplane %s); start it with afpacket or without --dataplane", dp.link)
		return o, func() {}
	}
	var (
		mu   sync.Mutex
		l    link.Link
		wait engine.Waiter
		p    *dpprobe.Prober
		key  string
		held func(context.Context) error
	)
	o.Trial = func(spec cluster.TrialSpec, h func(context.Context) error) (capacity.TrialFunc, error) {
		mu.Lock()
		defer mu.Unlock()
		if spec.Probe.HTTP {
			return nil, fmt.Errorf("--http: the data plane always sends one HTTP GET per connection")
		}
		server, err := netip.ParseAddrPort(spec.Probe.Addr)
		if err != nil || !server.Addr().Is4() {
			return nil, fmt.Errorf("dpprobe: target %q is not IPv4:port", spec.Probe.Addr)
		}
		if l == nil {
			// Opened as cicada bench --dataplane opens it.
			if l, wait, err = users.OpenLink(users.LinkOptions{Kind: users.LinkAFPacket, Interface: dp.iface, AFPacketRetire: time.Millisecond}); err != nil {
				return nil, fmt.Errorf("afpacket on %s: %w", dp.iface, err)
			}
		}
		held = h
		k := fmt.Sprintf("%+v", spec.Probe)
		if p == nil || k != key {
			po := spec.Probe
			p, err = dpprobe.New(dpprobe.Options{Link: l, Waiter: wait, ClientIP: ip4of(dp.clients.First), ServerIP: ip4of(server.Addr()), ServerPort: server.Port(),
				Gateway: ip4of(dp.gateway), Host: po.Host, Path: po.Path, PortMin: dp.portMin, PortMax: dp.portMax, Duration: po.Duration,
				RetransmitTimeout: po.ConnectTimeout, CPUBusy: po.CPUBusy, LagTolerance: po.LagTolerance, Conns: po.Conns, Timeout: po.Timeout, KeepSamples: true,
				Held: func(ctx context.Context) error {
					mu.Lock()
					h := held
					mu.Unlock()
					return h(ctx)
				}})
			if err != nil {
				return nil, err
			}
			key = k
		}
		switch spec.Test {
		case "cps":
			return p.CPS, nil
		case "teardown":
			return p.Teardown, nil
		case "tps":
			return p.TPS, nil
		case "throughput":
			size := spec.Probe.ObjectSize
			return func(ctx context.Context, mbps float64) (capacity.Trial, error) { return p.Throughput(ctx, mbps, size) }, nil
		}
		return p.Concurrent, nil
	}
	return o, func() {
		mu.Lock()
		defer mu.Unlock()
		if l != nil {
			_ = users.CloseLink(l)
		}
	}
}

// ip4of is an IPv4 address in host order (0 when invalid).
func ip4of(a netip.Addr) uint32 {
	if !a.IsValid() || !a.Is4() {
		return 0
	}
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}
