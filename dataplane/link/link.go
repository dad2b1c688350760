// Package link defines the batch interface every packet I/O back end of the
// userspace data plane implements (the in-process pipe now; AF_PACKET and
// AF_XDP later), in the style of gVisor's link endpoints: the stack above
// sees bursts of Ethernet frames, never sockets or syscalls.
//
// # Ownership contract
//
// Frame buffers belong to the link. Receive hands the caller up to
// len(frames) received frames; they stay valid, and the caller may read and
// write them in place, until the caller's next Receive on the same link,
// which takes them back. Buffer lends one empty transmit buffer of
// FrameSize bytes; the caller fills a prefix and passes buf[:n] to Transmit
// (the slice must start where Buffer's did). Transmit takes back every frame
// it is given, sent or dropped, and returns how many it accepted; the caller
// must not touch them afterwards. A buffer from Buffer that is never passed
// to Transmit is lost to the link until Close.
//
// A Link is driven by one goroutine at a time (one engine per core); back
// ends document whether their two ends may be driven by different
// goroutines.
package link

import (
	"errors"

	"github.com/cicada-load/cicada/dataplane/wire"
)

// ErrConfig is wrapped by every refused link option.
var ErrConfig = errors.New("link: invalid configuration")

// Link is a batch frame interface: a receive burst, transmit buffers and a
// transmit burst, the interface's MAC and MTU, and counters.
type Link interface {
	// Receive fills frames with up to len(frames) received Ethernet frames
	// and returns how many; it never blocks. See the package ownership
	// contract.
	Receive(frames [][]byte) int
	// Buffer returns an empty transmit buffer of FrameSize bytes, or nil
	// when every buffer is in use (the caller counts a drop).
	Buffer() []byte
	// Transmit queues frames for sending and takes them all back; it
	// returns how many were accepted (the rest were dropped and counted).
	Transmit(frames [][]byte) int
	// MAC returns the interface's hardware address.
	MAC() wire.MAC
	// MTU returns the largest IP packet the link carries (the frame minus
	// its 14-byte Ethernet header).
	MTU() int
	// FrameSize returns the size of every frame buffer.
	FrameSize() int
	// Counters returns a snapshot of the link's counters.
	Counters() Counters
}

// Counters are a link's own counts, plain values owned by the link.
type Counters struct {
	RxFrames, RxBytes uint64
	TxFrames, TxBytes uint64
	// TxNoBuffer counts Buffer calls that found no free buffer.
	TxNoBuffer uint64
	// TxDropped counts frames Transmit refused (queue full, bad frame).
	TxDropped uint64
}
