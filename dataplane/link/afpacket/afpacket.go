// Package afpacket is a Linux AF_PACKET back end of link.Link, bound to one
// interface by index, in pure Go (golang.org/x/sys/unix, CGO_ENABLED=0).
//
// Receive walks a TPACKET_V3 ring (blocks of BlockSize bytes, frames
// packed into them, a block retired to user space when full or after
// RetireTimeout). Transmit writes into a TPACKET_V2 TX ring on a second
// socket, bound with protocol 0 so it receives nothing, with
// PACKET_QDISC_BYPASS on unless Config.Qdisc asks for the qdisc, and kicks
// the kernel with one send(2) per burst. The receiving socket sets
// PACKET_IGNORE_OUTGOING so it never sees the link's own frames.
//
// AF_PACKET is a tap, not a steal: the host's kernel also sees every frame
// the interface receives. The interface must hold no address of the
// stack's range (the RST trap; see package dataplane).
//
// Why a TX ring rather than sendmmsg: BenchmarkTransmitRing and
// BenchmarkTransmitSendmmsg (64-byte frames, bursts of 64, the peer's RX
// ring receiving every frame) gave 185,000-351,000 and 145,000-403,000
// frames/s in 4 runs each on the shared VM at load 8-11: no difference
// beyond the noise (dataplane-lab.md has 0.7-1.6 and 0.6-1.5 Mpps on a
// quieter machine). The ring is kept: the stack builds frames directly in
// the ring's buffers, no iovec array is kept per burst, and one send(2)
// flushes every queued frame. Counters include the kernel's
// PACKET_STATISTICS (packets and drops on the receive ring).
//
// OpenFanout opens one Link per engine core on one interface, joined to a
// PACKET_FANOUT_CBPF group whose classic BPF program (Fanout.Program)
// returns the index of the core owning a TCP frame's port: the destination
// port on the client side, the source port on the server side, by the
// slices of engine.Split; ARP, ICMP, later IPv4 fragments and ports in no
// slice go to Link 0. The group's hook replaces each member's own, so
// PACKET_FANOUT_FLAG_IGNORE_OUTGOING (Linux 6.9) takes the place of
// PACKET_IGNORE_OUTGOING where the kernel has it. The program is tested
// against an interpreter in Go (a fuzz target compares it with a Go
// reference) and in the kernel on a lab veth.
//
// On systems other than Linux, Open returns an error wrapping
// ErrUnsupported. A Link is driven by one goroutine, like every link.Link.
package afpacket

import (
	"errors"
	"time"

	"github.com/cicada-load/cicada/dataplane/link"
)

// ErrUnsupported is wrapped by Open where AF_PACKET does not exist.
var ErrUnsupported = errors.New("afpacket: AF_PACKET needs Linux")

// Defaults for zero Config fields (dataplane-lab.md).
const (
	DefaultBlockSize     = 1 << 20
	DefaultBlocks        = 64
	DefaultFrameSize     = 2048
	DefaultRetireTimeout = 10 * time.Millisecond
	DefaultTxFrames      = 4096
)

// Config selects the interface and sizes the rings.
type Config struct {
	// Index is the interface index; required.
	Index int
	// BlockSize is the RX ring's block size, a multiple of the page size.
	// If zero, DefaultBlockSize.
	BlockSize int
	// Blocks is the number of RX blocks. If zero, DefaultBlocks.
	Blocks int
	// FrameSize is the TX ring's frame size (a power of two, 2048 or more
	// holds a 1500-byte MTU) and the RX ring's nominal frame size. If
	// zero, DefaultFrameSize.
	FrameSize int
	// RetireTimeout is how long the kernel keeps a partly filled RX block
	// before handing it over. If zero, DefaultRetireTimeout.
	RetireTimeout time.Duration
	// TxFrames is the number of TX ring frames. If zero, DefaultTxFrames.
	TxFrames int
	// Qdisc sends through the interface's qdisc instead of bypassing it.
	Qdisc bool
}

// Stats are the link's counters with the kernel's and the ring walkers'
// own counts.
type Stats struct {
	link.Counters
	// KernelPackets and KernelDrops are PACKET_STATISTICS summed since
	// Open: frames the kernel offered the RX ring, and those it dropped
	// because no block was free.
	KernelPackets, KernelDrops uint64
	// FreezeQueue counts the kernel's ring freezes (tp_freeze_q_cnt).
	FreezeQueue uint64
	// RxTruncated counts frames longer than a ring frame (dropped);
	// RxMalformed counts ring entries whose offsets leave their block.
	RxTruncated, RxMalformed uint64
	// TxWrongFormat counts TX frames the kernel refused.
	TxWrongFormat uint64
}

var _ link.Link = (*Link)(nil)
