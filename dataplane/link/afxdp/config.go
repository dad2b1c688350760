package afxdp

import (
	"errors"
	"fmt"
	"time"

	"github.com/cicada-load/cicada/dataplane/link"
)

// Defaults for zero Config fields.
const (
	DefaultFrameSize = 2048
	DefaultRingSize  = 2048
	DefaultBindRetry = time.Second
)

// ErrClosed is returned by Wait and Close on a closed Link.
var ErrClosed = errors.New("afxdp: link closed")

// ErrOneCore is what a caller returns (wrapped) when asked to run more
// than one engine core over AF_XDP: an AF_XDP socket receives only the
// frames of the queue it is bound to, and on veth (as on most NICs without
// flow steering rules) the queue is chosen by the sender's flow hash, not by
// the cores' port slices; a frame redirected from another queue is dropped
// by a copy-mode socket. Multi-core runs use afpacket.OpenFanout.
var ErrOneCore = errors.New("afxdp: one core only: a socket gets its queue's frames, and the queue is chosen by flow hash, not by port slice")

// CheckCores returns nil for one engine core and an error wrapping
// ErrOneCore for more: the check a caller makes before running an engine
// over AF_XDP links.
func CheckCores(n int) error {
	if n > 1 {
		return fmt.Errorf("afxdp: %d cores asked: %w", n, ErrOneCore)
	}
	if n < 1 {
		return fmt.Errorf("afxdp: %d cores asked: %w", n, link.ErrConfig)
	}
	return nil
}

// ErrUnsupported is returned by Open where AF_XDP does not exist.
var ErrUnsupported = errors.New("afxdp: AF_XDP needs Linux")

// Mode is how the socket binds to the driver's queue.
type Mode int

const (
	// ModeCopy copies frames between the driver and the UMEM (XDP_COPY);
	// every driver supports it, veth included.
	ModeCopy Mode = iota
	// ModeZeroCopy lets the driver DMA into the UMEM (XDP_ZEROCOPY); Open
	// fails where the driver has no support (veth has none).
	ModeZeroCopy
	// ModeAuto lets the kernel choose (zero copy where supported).
	ModeAuto
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeCopy:
		return "copy"
	case ModeZeroCopy:
		return "zerocopy"
	case ModeAuto:
		return "auto"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Config configures a Link. Only Interface is required; the other zero
// values work.
type Config struct {
	// Interface is the network interface's name, in the network namespace
	// of the thread that calls Open.
	Interface string
	// QueueID is the interface's receive/transmit queue to bind.
	QueueID int
	// FrameSize is the size of each UMEM frame: a power of two from 2048
	// to the page size. If zero, DefaultFrameSize. A received frame starts
	// XDP_PACKET_HEADROOM (256) bytes into its UMEM frame, so it can be
	// FrameSize-256 bytes long.
	FrameSize int
	// FillRing, CompletionRing, RXRing and TXRing are the ring sizes, powers
	// of two. If zero, DefaultRingSize.
	FillRing, CompletionRing, RXRing, TXRing int
	// Frames is the number of UMEM frames. The first FillRing+RXRing
	// frames serve receive (enough to keep the fill ring full while the RX
	// ring is full too), the rest transmit. If zero,
	// FillRing+RXRing+TXRing.
	Frames int
	// Mode is the bind mode. The zero value is ModeCopy.
	Mode Mode
	// NoNeedWakeup binds without XDP_USE_NEED_WAKEUP: every Transmit then
	// kicks the kernel.
	NoNeedWakeup bool
	// NoProgram attaches no XDP program: the link transmits, and receives
	// only what another program redirects to its socket.
	NoProgram bool
	// GenericXDP attaches the program in generic (skb) mode instead of
	// driver (native) mode.
	GenericXDP bool
	// BindRetry is how long Open retries a bind that fails with EBUSY. If
	// zero, DefaultBindRetry; negative means no retry.
	BindRetry time.Duration
	// License is the XDP program's license string. If empty, "Dual
	// MIT/GPL".
	License string
}

// withDefaults returns c with its zero fields filled in, or an error
// wrapping link.ErrConfig.
func (c Config) withDefaults(pageSize int) (Config, error) {
	if c.Interface == "" {
		return c, fmt.Errorf("%w: afxdp: no interface", link.ErrConfig)
	}
	if c.QueueID < 0 {
		return c, fmt.Errorf("%w: afxdp: queue id %d", link.ErrConfig, c.QueueID)
	}
	if c.FrameSize == 0 {
		c.FrameSize = DefaultFrameSize
	}
	if c.FrameSize < 2048 || c.FrameSize > pageSize || !powerOfTwo(c.FrameSize) {
		return c, fmt.Errorf("%w: afxdp: frame size %d is not a power of two in [2048, %d]",
			link.ErrConfig, c.FrameSize, pageSize)
	}
	for _, r := range []*int{&c.FillRing, &c.CompletionRing, &c.RXRing, &c.TXRing} {
		if *r == 0 {
			*r = DefaultRingSize
		}
		if !powerOfTwo(*r) || *r > 1<<20 {
			return c, fmt.Errorf("%w: afxdp: ring size %d is not a power of two up to 1<<20",
				link.ErrConfig, *r)
		}
	}
	if c.Frames == 0 {
		c.Frames = c.rxFrames() + c.TXRing
	}
	if c.Frames <= c.rxFrames() || c.Frames > 1<<24 {
		return c, fmt.Errorf("%w: afxdp: %d frames leave none for transmit after receive's %d",
			link.ErrConfig, c.Frames, c.rxFrames())
	}
	if uint64(c.Frames)*uint64(c.FrameSize) > uint64(maxInt) {
		return c, fmt.Errorf("%w: afxdp: a UMEM of %d x %d bytes does not fit an int",
			link.ErrConfig, c.Frames, c.FrameSize)
	}
	switch c.Mode {
	case ModeCopy, ModeZeroCopy, ModeAuto:
	default:
		return c, fmt.Errorf("%w: afxdp: unknown mode %d", link.ErrConfig, int(c.Mode))
	}
	if c.BindRetry == 0 {
		c.BindRetry = DefaultBindRetry
	}
	if c.License == "" {
		c.License = "Dual MIT/GPL"
	}
	return c, nil
}

// rxFrames is how many UMEM frames serve receive: as many as the fill and
// RX rings hold together.
func (c Config) rxFrames() int { return c.FillRing + c.RXRing }

const maxInt = int(^uint(0) >> 1)

func powerOfTwo(n int) bool { return n > 0 && n&(n-1) == 0 }

// Stats are a Link's own counts beyond link.Counters, and the kernel's
// XDP_STATISTICS for the socket.
type Stats struct {
	// Kicks counts sendto() wake-ups of the TX path; KickErrors those that
	// failed (EAGAIN, EBUSY or ENOBUFS while the kernel is busy, ENETDOWN);
	// the frames stay queued and the next Transmit kicks again.
	Kicks, KickErrors uint64
	// Polls counts zero-timeout poll() calls of an idle Receive.
	Polls uint64
	// BindRetries counts binds that failed with EBUSY and were retried.
	BindRetries uint64
	// TxBudget is how many frames one sendto() sends in copy mode: the
	// TX ring size where the kernel lets it be raised, else 32.
	TxBudget uint64
	// RxFillEmpty counts Receive calls that found no free frame for the
	// fill ring while it was empty.
	RxFillEmpty uint64
	// Kernel counters (XDP_STATISTICS): frames dropped for any reason,
	// invalid RX/TX descriptors, RX ring full, fill ring empty, TX ring
	// empty.
	KernelRxDropped, KernelRxInvalid, KernelTxInvalid    uint64
	KernelRxRingFull, KernelFillEmpty, KernelTxRingEmpty uint64
}
