package users

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/link/afxdp"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
)

// openLinks opens one link per port slice on iface: AF_PACKET sockets
// joined in a fanout group that steers each frame to the core owning its
// client port (one plain socket for one core), or one AF_XDP socket on
// queue 0 (one core only: nothing steers ports to queues), or one DPDK
// port (one core only, likewise; the EAL is initialised with its
// arguments on first use). retire, if not zero, is AF_PACKET's RX block
// retire timeout.
func openLinks(kind, iface string, dcfg dpdk.Config, split [][2]uint16, retire time.Duration) ([]link.Link, []engine.Waiter, error) {
	if kind == LinkDPDK {
		l, err := dpdk.Open(dcfg)
		if err != nil {
			return nil, nil, err
		}
		return []link.Link{l}, []engine.Waiter{l}, nil
	}
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, nil, fmt.Errorf("interface %q: %w", iface, err)
	}
	switch kind {
	case LinkAFPacket:
		cfg := afpacket.Config{Index: ifi.Index, RetireTimeout: retire}
		var ls []*afpacket.Link
		if len(split) == 1 {
			l, err := afpacket.Open(cfg)
			if err != nil {
				return nil, nil, err
			}
			ls = []*afpacket.Link{l}
		} else {
			ls, err = afpacket.OpenFanout(cfg, afpacket.Fanout{Group: uint16(os.Getpid()), Slices: split, Side: afpacket.ClientSide})
			if err != nil {
				return nil, nil, err
			}
		}
		links := make([]link.Link, len(ls))
		waits := make([]engine.Waiter, len(ls))
		for i, l := range ls {
			links[i], waits[i] = l, l
		}
		return links, waits, nil
	case LinkAFXDP:
		l, err := afxdp.Open(afxdp.Config{Interface: iface})
		if err != nil {
			return nil, nil, err
		}
		return []link.Link{l}, []engine.Waiter{xdpWaiter{l}}, nil
	}
	return nil, nil, fmt.Errorf("unknown link %q: %w", kind, ErrOption)
}

// xdpWaiter adapts afxdp.Link.Wait (which reports poll errors) to
// engine.Waiter; an error ends the wait early, and the loop polls again.
type xdpWaiter struct{ l *afxdp.Link }

func (w xdpWaiter) Wait(d time.Duration) { _ = w.l.Wait(d) }
