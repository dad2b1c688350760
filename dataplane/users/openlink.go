package users

import (
	"io"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
)

// LinkOptions select the link OpenLink opens.
type LinkOptions struct {
	// Kind is LinkAFPacket, LinkAFXDP or LinkDPDK.
	Kind string
	// Interface is the interface (AF_PACKET, AF_XDP); unused for DPDK.
	Interface string
	// DPDK is the DPDK port and EAL arguments (LinkDPDK).
	DPDK dpdk.Config
	// AFPacketRetire, if not zero, is AF_PACKET's RX block retire
	// timeout: how long a frame may wait in a partly filled block, which
	// a trial at a low rate sees as latency (afpacket's default is 10 ms).
	AFPacketRetire time.Duration
}

// OpenLink opens the one link that the runtime opens for one core: a plain
// AF_PACKET socket or an AF_XDP socket on the interface's queue 0, or the
// DPDK port (the EAL initialised on first use; refused with
// dpdk.ErrUnsupported in a binary without the dpdk tag). The waiter is
// waited on when a turn had nothing to do. Close the link with CloseLink.
// `cicada bench --dataplane` opens its link here, as the worker does.
func OpenLink(o LinkOptions) (link.Link, engine.Waiter, error) {
	ls, ws, err := openLinks(o.Kind, o.Interface, o.DPDK, [][2]uint16{{0, 0}}, o.AFPacketRetire)
	if err != nil {
		return nil, nil, err
	}
	return ls[0], ws[0], nil
}

// CloseLink closes a link OpenLink opened.
func CloseLink(l link.Link) error {
	if c, ok := l.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
