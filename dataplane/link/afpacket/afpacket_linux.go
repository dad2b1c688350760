//go:build linux

package afpacket

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// Link is an AF_PACKET link on one interface; it implements link.Link.
type Link struct {
	rxFd, txFd int
	rxMem      []byte
	txMem      []byte
	rx         *rxRing
	tx         *txRing
	mac        wire.MAC
	mtu        int
	kernel     Stats // PACKET_STATISTICS sums; only the kernel fields are used
	closed     bool
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (c *Config) setDefaults() {
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.Blocks == 0 {
		c.Blocks = DefaultBlocks
	}
	if c.FrameSize == 0 {
		c.FrameSize = DefaultFrameSize
	}
	if c.RetireTimeout == 0 {
		c.RetireTimeout = DefaultRetireTimeout
	}
	if c.TxFrames == 0 {
		c.TxFrames = DefaultTxFrames
	}
}

func (c *Config) validate() error {
	page := os.Getpagesize()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("afpacket: "+format+": %w", append(a, link.ErrConfig)...)
	}
	switch {
	case c.Index <= 0:
		return bad("interface index %d", c.Index)
	case c.FrameSize < 256 || c.FrameSize > 1<<16 || c.FrameSize&(c.FrameSize-1) != 0:
		return bad("FrameSize %d not a power of two in 256..65536", c.FrameSize)
	case c.BlockSize < page || c.BlockSize%page != 0 || c.BlockSize < c.FrameSize || c.BlockSize > 1<<30:
		return bad("BlockSize %d not a multiple of the page size %d holding a frame", c.BlockSize, page)
	case c.Blocks < 2 || c.Blocks > 1<<16 || uint64(c.Blocks)*uint64(c.BlockSize) > 1<<32:
		return bad("Blocks %d outside 2..65536 or ring over 4 GiB", c.Blocks)
	case c.RetireTimeout < time.Millisecond || c.RetireTimeout > time.Minute:
		return bad("RetireTimeout %v outside 1ms..1m", c.RetireTimeout)
	case c.TxFrames < 1 || c.TxFrames > 1<<20:
		return bad("TxFrames %d outside 1..%d", c.TxFrames, 1<<20)
	}
	return nil
}

// Open binds a Link to the interface cfg.Index, or returns an error (the
// configuration's wrap link.ErrConfig). It needs CAP_NET_RAW. The caller
// ends it with Close.
func Open(cfg Config) (*Link, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ifc, err := net.InterfaceByIndex(cfg.Index)
	if err != nil {
		return nil, fmt.Errorf("afpacket: interface %d: %w", cfg.Index, err)
	}
	if len(ifc.HardwareAddr) != 6 {
		return nil, fmt.Errorf("afpacket: interface %s has no Ethernet address: %w", ifc.Name, link.ErrConfig)
	}
	l := &Link{rxFd: -1, txFd: -1, mtu: ifc.MTU}
	copy(l.mac[:], ifc.HardwareAddr)
	if l.mtu+wire.EthernetLen > cfg.FrameSize-v2DataOff {
		return nil, fmt.Errorf("afpacket: %s MTU %d does not fit FrameSize %d: %w", ifc.Name, l.mtu, cfg.FrameSize, link.ErrConfig)
	}
	if err := l.openRx(&cfg); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("afpacket: %s receive ring: %w", ifc.Name, err)
	}
	if err := l.openTx(&cfg); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("afpacket: %s transmit ring: %w", ifc.Name, err)
	}
	return l, nil
}

func (l *Link) openRx(cfg *Config) error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	l.rxFd = fd
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("PACKET_VERSION: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
	}
	req := unix.TpacketReq3{
		Block_size:     uint32(cfg.BlockSize),
		Block_nr:       uint32(cfg.Blocks),
		Frame_size:     uint32(cfg.FrameSize),
		Frame_nr:       uint32(cfg.BlockSize / cfg.FrameSize * cfg.Blocks),
		Retire_blk_tov: uint32(cfg.RetireTimeout / time.Millisecond),
	}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_RX_RING: %w", err)
	}
	if l.rxMem, err = unix.Mmap(fd, 0, cfg.BlockSize*cfg.Blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	l.rx = newRxRing(l.rxMem, cfg.BlockSize, cfg.Blocks)
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: cfg.Index}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

func (l *Link) openTx(cfg *Config) error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	l.txFd = fd
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return fmt.Errorf("PACKET_VERSION: %w", err)
	}
	if !cfg.Qdisc {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
		}
	}
	// Blocks of at most 64 KiB (and at least a page), whole frames each:
	// the frames are then contiguous and frame i is at i*FrameSize.
	block := max(os.Getpagesize(), min(1<<16, cfg.FrameSize*cfg.TxFrames))
	perBlock := block / cfg.FrameSize
	blocks := (cfg.TxFrames + perBlock - 1) / perBlock
	req := unix.TpacketReq{Block_size: uint32(block), Block_nr: uint32(blocks),
		Frame_size: uint32(cfg.FrameSize), Frame_nr: uint32(blocks * perBlock)}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_TX_RING: %w", err)
	}
	if l.txMem, err = unix.Mmap(fd, 0, block*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	l.tx = newTxRing(l.txMem, cfg.FrameSize, blocks*perBlock)
	// Protocol 0: bound for sending only, this socket receives nothing.
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: cfg.Index}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

// Receive implements link.Link.
func (l *Link) Receive(frames [][]byte) int { return l.rx.receive(frames) }

// Buffer implements link.Link: the next free TX ring frame.
func (l *Link) Buffer() []byte {
	if b := l.tx.buffer(); b != nil {
		return b
	}
	l.kick()
	if b := l.tx.buffer(); b != nil {
		l.tx.noBuffer-- // the first try's count: this Buffer call succeeded
		return b
	}
	return nil
}

// Transmit implements link.Link: it queues the frames in the TX ring and
// asks the kernel to send them.
func (l *Link) Transmit(frames [][]byte) int {
	n := l.tx.queue(frames)
	l.kick()
	return n
}

// kick asks the kernel to send every queued frame. A failed send (EAGAIN,
// ENOBUFS) leaves the frames queued and ready set, so the next Transmit or
// a Buffer call that finds the ring full kicks again.
func (l *Link) kick() {
	if l.tx.ready == 0 {
		return
	}
	if err := unix.Sendto(l.txFd, nil, unix.MSG_DONTWAIT, nil); err == nil {
		l.tx.ready = 0
	}
}

// MAC implements link.Link.
func (l *Link) MAC() wire.MAC { return l.mac }

// MTU implements link.Link.
func (l *Link) MTU() int { return l.mtu }

// FrameSize implements link.Link: the data area of a TX ring frame.
func (l *Link) FrameSize() int { return l.tx.frameSize - v2DataOff }

// Counters implements link.Link.
func (l *Link) Counters() link.Counters {
	return link.Counters{RxFrames: l.rx.frames, RxBytes: l.rx.bytes,
		TxFrames: l.tx.sent, TxBytes: l.tx.bytes, TxNoBuffer: l.tx.noBuffer,
		TxDropped: l.tx.dropped + l.tx.wrongFormat}
}

// Stats returns Counters with the kernel's PACKET_STATISTICS (read and
// summed: the kernel resets them on each read) and the walkers' counts.
func (l *Link) Stats() Stats {
	if st, err := unix.GetsockoptTpacketStatsV3(l.rxFd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
		l.kernel.KernelPackets += uint64(st.Packets)
		l.kernel.KernelDrops += uint64(st.Drops)
		l.kernel.FreezeQueue += uint64(st.Freeze_q_cnt)
	}
	s := l.kernel
	s.Counters = l.Counters()
	s.RxTruncated, s.RxMalformed, s.TxWrongFormat = l.rx.truncated, l.rx.bad, l.tx.wrongFormat
	return s
}

// Wait blocks up to d for the receive ring to have a block for user space
// (poll(2)); an idle engine calls it instead of spinning.
func (l *Link) Wait(d time.Duration) {
	fds := []unix.PollFd{{Fd: int32(l.rxFd), Events: unix.POLLIN}}
	_, _ = unix.Poll(fds, int(max(d/time.Millisecond, 1)))
}

// Close unmaps the rings and closes the sockets. It may be called more
// than once; frames lent by Receive or Buffer are invalid afterwards.
func (l *Link) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	for _, m := range [][]byte{l.rxMem, l.txMem} {
		if m != nil {
			errs = append(errs, unix.Munmap(m))
		}
	}
	for _, fd := range []int{l.rxFd, l.txFd} {
		if fd >= 0 {
			errs = append(errs, unix.Close(fd))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("afpacket: close: %w", err)
	}
	return nil
}
