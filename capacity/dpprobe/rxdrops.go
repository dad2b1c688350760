package dpprobe

import (
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/link/afxdp"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
)

// rxDrops returns how many frames the link's receive path has dropped for
// want of room, frames the device delivered and the generator did not take
// in time: AF_PACKET's ring drops (PACKET_STATISTICS), AF_XDP's RX ring
// full, fill ring empty and other drops (XDP_STATISTICS), DPDK's missed
// frames and mbuf shortages; ok is false for a link that does not count
// them (the pipe).
func rxDrops(l link.Link) (n uint64, ok bool) {
	switch x := l.(type) {
	case *afpacket.Link:
		return x.Stats().KernelDrops, true
	case *afxdp.Link:
		s, err := x.Stats()
		return s.KernelRxDropped + s.KernelRxRingFull + s.KernelFillEmpty, err == nil
	case *dpdk.Link:
		s, err := x.Stats()
		return s.PortRxMissed + s.PortRxNoMbuf, err == nil
	}
	return 0, false
}
