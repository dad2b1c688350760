package afxdp

import (
	"errors"
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// umemRegV1 is the original 24-byte struct xdp_umem_reg (address, length,
// chunk size, headroom). Kernels take it as is; x/sys's XDPUmemReg has the
// newer fields after it.
type umemRegV1 struct {
	addr, len           uint64
	chunkSize, headroom uint32
}

// Link is an AF_XDP socket bound to one queue of an interface, with its
// UMEM, its four rings and, unless Config.NoProgram, the XDP program that
// redirects the queue's frames to it. It implements link.Link.
type Link struct {
	cfg     Config
	fd      int
	ifindex int
	mac     wire.MAC
	mtu     int

	umem     []byte
	umemBase uintptr
	rxFrames uint64 // frames [0, rxFrames) serve receive, the rest transmit
	fs       uint64
	fsMask   uint64 // FrameSize-1: addr&^fsMask is a frame's start

	ringMem              [4][]byte // fill, completion, RX, TX mappings
	fill, comp, rx, tx   ring
	fillAddrs, compAddrs []uint64
	rxDescs, txDescs     []desc
	rxFree, txFree       frameStack
	lent                 []uint64 // RX frames lent by the last Receive
	rxHeld               int      // RX frames in the fill or RX ring (the kernel's)
	counters             link.Counters
	stats                Stats
	prog                 *xdpProgram
	closed               bool
}

var _ link.Link = (*Link)(nil)

// Open creates an AF_XDP link on cfg.Interface's queue cfg.QueueID, in the
// calling thread's network namespace. It needs CAP_NET_ADMIN and CAP_BPF
// (or root) and Linux 5.9 or later (BPF_LINK_CREATE for XDP). It refuses
// an interface whose MTU-sized frames would not fit a UMEM frame after
// its 256-byte headroom.
func Open(cfg Config) (*Link, error) {
	c, err := cfg.withDefaults(unix.Getpagesize())
	if err != nil {
		return nil, err
	}
	ifc, err := net.InterfaceByName(c.Interface)
	if err != nil {
		return nil, fmt.Errorf("afxdp: interface %q: %w", c.Interface, err)
	}
	if room := c.FrameSize - unix.XDP_PACKET_HEADROOM; ifc.MTU+14 > room {
		return nil, fmt.Errorf("%w: afxdp: %s has MTU %d, a frame of %d bytes leaves room for %d",
			link.ErrConfig, c.Interface, ifc.MTU, c.FrameSize, room)
	}
	l := &Link{cfg: c, fd: -1, ifindex: ifc.Index, mtu: ifc.MTU,
		fs: uint64(c.FrameSize), fsMask: uint64(c.FrameSize - 1), rxFrames: uint64(c.rxFrames())}
	copy(l.mac[:], ifc.HardwareAddr)
	if err := l.open(); err != nil {
		_ = l.release()
		return nil, err
	}
	return l, nil
}

func (l *Link) open() error {
	c := l.cfg
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("afxdp: socket(AF_XDP): %w", err)
	}
	l.fd = fd
	size := c.Frames * c.FrameSize
	l.umem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("afxdp: mmap UMEM of %d bytes: %w", size, err)
	}
	l.umemBase = uintptr(unsafe.Pointer(&l.umem[0]))
	reg := umemRegV1{addr: uint64(l.umemBase), len: uint64(size), chunkSize: uint32(c.FrameSize)}
	if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("afxdp: XDP_UMEM_REG: %w", err)
	}
	for _, r := range []struct {
		opt, size int
	}{
		{unix.XDP_UMEM_FILL_RING, c.FillRing}, {unix.XDP_UMEM_COMPLETION_RING, c.CompletionRing},
		{unix.XDP_RX_RING, c.RXRing}, {unix.XDP_TX_RING, c.TXRing},
	} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, r.opt, r.size); err != nil {
			return fmt.Errorf("afxdp: ring option %d size %d: %w", r.opt, r.size, err)
		}
	}
	var off unix.XDPMmapOffsets
	n := uint32(unsafe.Sizeof(off))
	if err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), &n); err != nil {
		return fmt.Errorf("afxdp: XDP_MMAP_OFFSETS: %w", err)
	}
	if n != uint32(unsafe.Sizeof(off)) {
		return fmt.Errorf("afxdp: XDP_MMAP_OFFSETS returned %d bytes, want %d (kernel before 5.4)",
			n, unsafe.Sizeof(off))
	}
	var rings [4]ring
	for i, m := range []struct {
		off   unix.XDPRingOffset
		pgoff int64
		size  int
		entry uintptr
	}{
		{off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, c.FillRing, 8},
		{off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, c.CompletionRing, 8},
		{off.Rx, unix.XDP_PGOFF_RX_RING, c.RXRing, unsafe.Sizeof(desc{})},
		{off.Tx, unix.XDP_PGOFF_TX_RING, c.TXRing, unsafe.Sizeof(desc{})},
	} {
		length := int(m.off.Desc) + m.size*int(m.entry)
		mem, err := unix.Mmap(fd, m.pgoff, length, unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("afxdp: mmap ring %d (%d bytes): %w", i, length, err)
		}
		l.ringMem[i] = mem
		rings[i] = newRing((*uint32)(unsafe.Pointer(&mem[m.off.Producer])),
			(*uint32)(unsafe.Pointer(&mem[m.off.Consumer])),
			(*uint32)(unsafe.Pointer(&mem[m.off.Flags])), uint32(m.size))
	}
	l.fill, l.comp, l.rx, l.tx = rings[0], rings[1], rings[2], rings[3]
	l.fillAddrs = unsafe.Slice((*uint64)(unsafe.Pointer(&l.ringMem[0][off.Fr.Desc])), c.FillRing)
	l.compAddrs = unsafe.Slice((*uint64)(unsafe.Pointer(&l.ringMem[1][off.Cr.Desc])), c.CompletionRing)
	l.rxDescs = unsafe.Slice((*desc)(unsafe.Pointer(&l.ringMem[2][off.Rx.Desc])), c.RXRing)
	l.txDescs = unsafe.Slice((*desc)(unsafe.Pointer(&l.ringMem[3][off.Tx.Desc])), c.TXRing)

	rxn := c.rxFrames()
	l.rxFree = newFrameStack(rxn)
	l.txFree = newFrameStack(c.Frames - rxn)
	l.lent = make([]uint64, 0, rxn)
	for i := rxn - 1; i >= 0; i-- {
		l.rxFree.push(uint64(i) * l.fs)
	}
	for i := c.Frames - 1; i >= rxn; i-- {
		l.txFree.push(uint64(i) * l.fs)
	}
	l.refill() // the kernel needs frames before the first packet

	if !c.NoProgram {
		if l.prog, err = loadProgram(c.QueueID, c.License); err != nil {
			return err
		}
	}
	if err := l.bind(); err != nil {
		return err
	}
	// Copy mode sends at most 32 frames per sendto() unless the budget is
	// raised (XDP_MAX_TX_SKB_BUDGET, Linux 6.16 and later); older kernels
	// refuse the option and keep 32.
	if err := unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, c.TXRing); err == nil {
		l.stats.TxBudget = uint64(c.TXRing)
	} else {
		l.stats.TxBudget = 32
	}
	if l.prog != nil {
		if err := l.prog.setSocket(c.QueueID, fd); err != nil {
			return err
		}
		if err := l.prog.attach(l.ifindex, c.GenericXDP); err != nil {
			return err
		}
	}
	return nil
}

// bind binds the socket to the queue, retrying EBUSY for BindRetry.
func (l *Link) bind() error {
	var flags uint16
	switch l.cfg.Mode {
	case ModeCopy:
		flags = unix.XDP_COPY
	case ModeZeroCopy:
		flags = unix.XDP_ZEROCOPY
	}
	if !l.cfg.NoNeedWakeup {
		flags |= unix.XDP_USE_NEED_WAKEUP
	}
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(l.ifindex), QueueID: uint32(l.cfg.QueueID)}
	deadline := time.Now().Add(l.cfg.BindRetry)
	for {
		err := unix.Bind(l.fd, sa)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || !time.Now().Before(deadline) {
			return fmt.Errorf("afxdp: bind %s queue %d (%s): %w",
				l.cfg.Interface, l.cfg.QueueID, l.cfg.Mode, err)
		}
		l.stats.BindRetries++
		// The previous socket's teardown is asynchronous; nothing to wait
		// on but time. Bounded by BindRetry.
		time.Sleep(10 * time.Millisecond)
	}
}

// refill moves free RX frames to the fill ring, as many as fit.
func (l *Link) refill() {
	n := uint32(l.rxFree.len())
	if n == 0 {
		return
	}
	if room := l.fill.free(n); room < n {
		n = room
	}
	for i := uint32(0); i < n; i++ {
		a, _ := l.rxFree.pop()
		l.fillAddrs[(l.fill.prod+i)&l.fill.mask] = a
	}
	if n > 0 {
		l.fill.submit(n)
		l.rxHeld += int(n)
	}
}

// reclaim moves completed TX frames back to the TX stack.
func (l *Link) reclaim() {
	n := l.comp.avail(uint32(l.comp.size))
	for i := uint32(0); i < n; i++ {
		l.txFree.push(l.compAddrs[(l.comp.cons+i)&l.comp.mask] &^ l.fsMask)
	}
	if n > 0 {
		l.comp.release(n)
	}
}

// Receive implements link.Link: it takes back the previous burst, tops up
// the fill ring and returns up to len(frames) received frames, in place in
// the UMEM. It never blocks; when it finds nothing and the kernel asked for
// a wake-up it calls poll() with a zero timeout.
func (l *Link) Receive(frames [][]byte) int {
	if l.closed {
		return 0
	}
	for _, a := range l.lent {
		l.rxFree.push(a)
	}
	l.lent = l.lent[:0]
	l.refill()
	want := uint32(len(frames))
	n := l.rx.avail(want)
	if n > want {
		n = want
	}
	for i := uint32(0); i < n; i++ {
		d := l.rxDescs[(l.rx.cons+i)&l.rx.mask]
		end := d.Addr + uint64(d.Len)
		frames[i] = l.umem[d.Addr:end:end]
		l.lent = append(l.lent, d.Addr&^l.fsMask)
		l.counters.RxBytes += uint64(d.Len)
	}
	if n > 0 {
		l.rx.release(n)
		l.rxHeld -= int(n)
		l.counters.RxFrames += uint64(n)
		return int(n)
	}
	if l.rxHeld == 0 {
		l.stats.RxFillEmpty++
	}
	if !l.cfg.NoNeedWakeup && l.fill.needWakeup() {
		l.stats.Polls++
		pfd := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}}
		_, _ = unix.Poll(pfd, 0)
	}
	return 0
}

// Buffer implements link.Link: an empty transmit frame from the TX stack,
// reclaiming completions (and kicking the kernel for them) when it is
// empty.
func (l *Link) Buffer() []byte {
	if l.closed {
		return nil
	}
	a, ok := l.txFree.pop()
	if !ok {
		l.reclaim()
		if a, ok = l.txFree.pop(); !ok {
			l.kick(true)
			l.reclaim()
			a, ok = l.txFree.pop()
		}
	}
	if !ok {
		l.counters.TxNoBuffer++
		return nil
	}
	end := a + l.fs
	return l.umem[a:end:end]
}

// Transmit implements link.Link: it queues each frame from Buffer on the TX
// ring, returns those the ring has no room for to the TX stack (counted in
// TxDropped), and kicks the kernel if it asks for it.
func (l *Link) Transmit(frames [][]byte) int {
	if l.closed {
		l.counters.TxDropped += uint64(len(frames))
		return 0
	}
	l.reclaim()
	room := l.tx.free(uint32(len(frames)))
	var queued uint32
	for _, f := range frames {
		a, ok := l.txAddr(f)
		if !ok {
			l.counters.TxDropped++ // not one of ours: nothing to give back
			continue
		}
		if queued == room || len(f) == 0 {
			l.txFree.push(a)
			l.counters.TxDropped++
			continue
		}
		l.txDescs[(l.tx.prod+queued)&l.tx.mask] = desc{Addr: a, Len: uint32(len(f))}
		queued++
		l.counters.TxBytes += uint64(len(f))
	}
	if queued > 0 {
		l.tx.submit(queued)
		l.counters.TxFrames += uint64(queued)
		l.kick(false)
	}
	return int(queued)
}

// txAddr returns the UMEM address of a transmit frame from Buffer.
func (l *Link) txAddr(f []byte) (uint64, bool) {
	if cap(f) == 0 {
		return 0, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(f)))
	if p < l.umemBase {
		return 0, false
	}
	a := uint64(p - l.umemBase)
	if a < l.rxFrames*l.fs || a >= uint64(len(l.umem)) || a&l.fsMask != 0 ||
		uint64(len(f)) > l.fs {
		return 0, false
	}
	return a, true
}

// kick wakes the kernel's TX path with sendto() if it asked for it (or
// always, without need-wakeup, or if force). Transient errors are counted,
// the next Transmit tries again.
func (l *Link) kick(force bool) {
	if !force && !l.cfg.NoNeedWakeup && !l.tx.needWakeup() {
		return
	}
	l.stats.Kicks++
	err := unix.Sendto(l.fd, nil, unix.MSG_DONTWAIT, nil)
	if err != nil {
		l.stats.KickErrors++
	}
}

// Wait blocks until a frame may be received or timeout passes (poll() on
// the socket), for an engine with nothing to do. A negative timeout waits
// without limit.
func (l *Link) Wait(timeout time.Duration) error {
	if l.closed {
		return ErrClosed
	}
	ms := -1
	if timeout >= 0 {
		ms = int(timeout / time.Millisecond)
	}
	pfd := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}}
	if _, err := unix.Poll(pfd, ms); err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("afxdp: poll: %w", err)
	}
	return nil
}

// MAC implements link.Link.
func (l *Link) MAC() wire.MAC { return l.mac }

// MTU implements link.Link: the interface's MTU.
func (l *Link) MTU() int { return l.mtu }

// FrameSize implements link.Link: the size of a transmit buffer. A
// received frame can be up to FrameSize-256 bytes (XDP_PACKET_HEADROOM).
func (l *Link) FrameSize() int { return l.cfg.FrameSize }

// Counters implements link.Link.
func (l *Link) Counters() link.Counters { return l.counters }

// Stats returns the link's wake-up counts and the kernel's XDP_STATISTICS.
func (l *Link) Stats() (Stats, error) {
	s := l.stats
	if l.closed {
		return s, ErrClosed
	}
	var ks unix.XDPStatistics
	n := uint32(unsafe.Sizeof(ks))
	if err := getsockopt(l.fd, unix.XDP_STATISTICS, unsafe.Pointer(&ks), &n); err != nil {
		return s, fmt.Errorf("afxdp: XDP_STATISTICS: %w", err)
	}
	s.KernelRxDropped, s.KernelRxInvalid, s.KernelTxInvalid = ks.Rx_dropped, ks.Rx_invalid_descs, ks.Tx_invalid_descs
	s.KernelRxRingFull, s.KernelFillEmpty, s.KernelTxRingEmpty = ks.Rx_ring_full, ks.Rx_fill_ring_empty_descs, ks.Tx_ring_empty_descs
	return s, nil
}

// Close detaches the XDP program, closes the socket and unmaps the rings
// and the UMEM. Frames lent by Receive or Buffer are invalid afterwards;
// Receive then returns 0, Buffer nil and Transmit 0. A second Close
// returns ErrClosed.
func (l *Link) Close() error {
	if l.closed {
		return ErrClosed
	}
	return l.release()
}

// release frees whatever open set up, in reverse order: the program first,
// so nothing is redirected to a closing socket.
func (l *Link) release() error {
	l.closed = true
	var errs []error
	if l.prog != nil {
		errs = append(errs, l.prog.close())
		l.prog = nil
	}
	for i, m := range l.ringMem {
		if m != nil {
			errs = append(errs, unix.Munmap(m))
			l.ringMem[i] = nil
		}
	}
	if l.fd >= 0 {
		errs = append(errs, unix.Close(l.fd))
		l.fd = -1
	}
	if l.umem != nil {
		errs = append(errs, unix.Munmap(l.umem))
		l.umem = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("afxdp: close: %w", err)
	}
	return nil
}

// frameCounts reports where the frames are, for tests: free on the two
// stacks, lent by Receive, held by the kernel for receive.
func (l *Link) frameCounts() (rxFree, txFree, lent, rxHeld int) {
	return l.rxFree.len(), l.txFree.len(), len(l.lent), l.rxHeld
}

func setsockopt(fd, opt int, val unsafe.Pointer, size uintptr) error {
	_, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt),
		uintptr(val), size, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func getsockopt(fd, opt int, val unsafe.Pointer, size *uint32) error {
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt),
		uintptr(val), uintptr(unsafe.Pointer(size)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}
