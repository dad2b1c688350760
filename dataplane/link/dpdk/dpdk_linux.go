//go:build dpdk && cgo && linux

package dpdk

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// Available reports whether this binary has the DPDK link.
const Available = true

var eal struct {
	once sync.Once
	args []string // the caller's arguments of the first Init
	err  error

	mu    sync.Mutex
	argv  []string                 // what rte_eal_init got
	ports map[C.uint16_t]*portPool // the pool of each port a Link opened
}

// portPool is a port's mbuf pool, created by the port's first Open and
// kept while the port lives: a stopped port's driver may still hold mbufs
// of it in its queues, which the next configuration releases, so it is
// freed only when the port is closed (a device Open probed).
type portPool struct {
	pool  *C.struct_rte_mempool
	mbufs int
	inUse bool // a Link has the port open
}

// Init initialises DPDK's EAL with args (without the program name; see
// ealArgs in config.go, and the package doc, for the defaults added). It
// runs once per process, on a goroutine locked to its OS thread whose CPU
// affinity is restored afterwards (rte_eal_init pins the thread it runs on
// to the main lcore) and which then exits, so that no Go code runs on a
// thread DPDK pinned. Later calls return the first call's result, or an
// error wrapping ErrInitialised if their arguments differ.
func Init(args []string) error {
	eal.once.Do(func() {
		eal.args = slices0(args)
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			var set unix.CPUSet
			if err := unix.SchedGetaffinity(0, &set); err != nil {
				eal.err = fmt.Errorf("dpdk: sched_getaffinity: %w", err)
				return
			}
			first := 0
			for c := 0; c < 1024; c++ {
				if set.IsSet(c) {
					first = c
					break
				}
			}
			argv, err := ealArgs(args, first, unix.Getpid())
			if err != nil {
				eal.err = err
				return
			}
			cargv := make([]*C.char, len(argv)) // C strings, never freed: the EAL may keep them
			for i, a := range argv {
				cargv[i] = C.CString(a)
			}
			carr := (**C.char)(C.malloc(C.size_t(len(argv)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
			copy(unsafe.Slice(carr, len(argv)), cargv)
			r := C.cic_init(C.int(len(argv)), carr)
			_ = unix.SchedSetaffinity(0, &set)
			// The runtime directory (/var/run/dpdk/<prefix>) stays empty
			// with --in-memory or --no-shconf: remove it (os.Remove
			// leaves a directory that holds anything).
			_ = os.Remove(C.GoString(C.rte_eal_get_runtime_dir()))
			if r < 0 {
				eal.err = fmt.Errorf("%w: rte_eal_init(%s): %s", ErrEAL, strings.Join(argv[1:], " "), cerr(-r))
				return
			}
			eal.mu.Lock()
			eal.argv = argv
			eal.mu.Unlock()
		}()
		<-done
	})
	if eal.err != nil {
		return eal.err
	}
	if !slices.Equal(eal.args, args) {
		return fmt.Errorf("%w: first %q, now %q", ErrInitialised, eal.args, args)
	}
	return nil
}

// EALArgs returns the argument vector the EAL was initialised with
// (program name first), or nil before a successful Init.
func EALArgs() []string {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	return slices0(eal.argv)
}

func slices0(s []string) []string { return append([]string(nil), s...) }

func cerr(e C.int) string {
	return C.GoString(C.cic_strerror(e)) + " (rte_errno " + strconv.Itoa(int(e)) + ")"
}

var poolSeq atomic.Uint64

// Link is one DPDK ethdev port with one RX and one TX queue and the
// port's mbuf pool. It implements link.Link and engine.Waiter.
type Link struct {
	cfg     Config
	port    C.uint16_t
	vdev    string // probed by Open, removed by Close
	pool    *C.struct_rte_mempool
	pp      *portPool // the port's pool record, held while the link is open
	mac     wire.MAC
	mtu     int
	dataOff uintptr
	chunks  [][2]uintptr

	// C arrays, allocated once.
	rxBufs **C.struct_rte_mbuf
	rxData *unsafe.Pointer
	rxLens *C.uint16_t
	txBufs **C.struct_rte_mbuf
	txLens *C.uint16_t
	cache  **C.struct_rte_mbuf // transmit buffers not yet lent
	cdata  *unsafe.Pointer

	rxb   []*C.struct_rte_mbuf
	rxd   []unsafe.Pointer
	rxl   []C.uint16_t
	txb   []*C.struct_rte_mbuf
	txl   []C.uint16_t
	cb    []*C.struct_rte_mbuf
	cd    []unsafe.Pointer
	ncach int // cb[:ncach] are free transmit buffers
	lent  int // rxb[:lent] were lent by the last Receive

	counters link.Counters
	stats    Stats
	closed   bool
}

var _ link.Link = (*Link)(nil)

// Open initialises the EAL with cfg.EAL (unless cfg.EAL is nil), probes
// cfg.Device if set, and starts the port with one RX and one TX queue on
// the port's mbuf pool (made by its first Open). It refuses a port open
// already, a pool size other than the port's, and a port whose MTU-sized
// frames do not fit one mbuf.
func Open(cfg Config) (*Link, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.EAL != nil {
		if err := Init(c.EAL); err != nil {
			return nil, err
		}
	} else if EALArgs() == nil {
		return nil, fmt.Errorf("%w: dpdk: no EAL arguments and the EAL is not initialised", link.ErrConfig)
	}
	l := &Link{cfg: c}
	if err := l.open(); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

func (l *Link) open() error {
	c := l.cfg
	if c.Device != "" {
		name, args, _ := strings.Cut(c.Device, ",")
		cn, ca, cb := C.CString(name), C.CString(args), C.CString("vdev")
		r := C.rte_eal_hotplug_add(cb, cn, ca)
		C.free(unsafe.Pointer(cn))
		C.free(unsafe.Pointer(ca))
		C.free(unsafe.Pointer(cb))
		if r < 0 {
			return fmt.Errorf("%w: probe %q: %s", ErrEAL, c.Device, cerr(-r))
		}
		l.vdev = name
	}
	port, err := lookupPort(c.Port)
	if err != nil {
		return err
	}
	l.port = port
	if err := l.takePool(); err != nil {
		return err
	}
	var ch C.struct_cic_chunks
	C.cic_pool_chunks(l.pool, &ch)
	if ch.more != 0 {
		return fmt.Errorf("%w: mbuf pool in more than %d chunks", ErrEAL, len(ch.lo))
	}
	for i := 0; i < int(ch.n); i++ {
		l.chunks = append(l.chunks, [2]uintptr{uintptr(ch.lo[i]), uintptr(ch.hi[i])})
	}
	l.dataOff = uintptr(C.cic_data_offset())
	var mtu C.uint16_t
	if r := C.rte_eth_dev_get_mtu(port, &mtu); r < 0 {
		return fmt.Errorf("%w: port %s MTU: %s", ErrEAL, c.Port, cerr(-r))
	}
	l.mtu = int(mtu)
	if l.mtu+14 > DefaultFrameSize {
		return fmt.Errorf("%w: dpdk: port %s has MTU %d, an mbuf holds %d bytes", link.ErrConfig, c.Port, l.mtu, DefaultFrameSize)
	}
	var mac C.struct_rte_ether_addr
	if r := C.rte_eth_macaddr_get(port, &mac); r < 0 {
		return fmt.Errorf("%w: port %s MAC: %s", ErrEAL, c.Port, cerr(-r))
	}
	for i := range l.mac {
		l.mac[i] = byte(mac.addr_bytes[i])
	}
	ptr := unsafe.Sizeof(uintptr(0))
	alloc := func(n, size uintptr) unsafe.Pointer { return C.calloc(C.size_t(n), C.size_t(size)) }
	l.rxBufs = (**C.struct_rte_mbuf)(alloc(MaxBurst, ptr))
	l.rxData = (*unsafe.Pointer)(alloc(MaxBurst, ptr))
	l.rxLens = (*C.uint16_t)(alloc(MaxBurst, 2))
	l.txBufs = (**C.struct_rte_mbuf)(alloc(MaxBurst, ptr))
	l.txLens = (*C.uint16_t)(alloc(MaxBurst, 2))
	l.cache = (**C.struct_rte_mbuf)(alloc(MaxBurst, ptr))
	l.cdata = (*unsafe.Pointer)(alloc(MaxBurst, ptr))
	l.rxb, l.rxd, l.rxl = unsafe.Slice(l.rxBufs, MaxBurst), unsafe.Slice(l.rxData, MaxBurst), unsafe.Slice(l.rxLens, MaxBurst)
	l.txb, l.txl = unsafe.Slice(l.txBufs, MaxBurst), unsafe.Slice(l.txLens, MaxBurst)
	l.cb, l.cd = unsafe.Slice(l.cache, MaxBurst), unsafe.Slice(l.cdata, MaxBurst)
	nrx, ntx := C.uint16_t(c.RxRing), C.uint16_t(c.TxRing)
	if r := C.cic_port_start(port, l.pool, &nrx, &ntx); r < 0 {
		return fmt.Errorf("%w: start port %s: %s", ErrEAL, c.Port, cerr(-r))
	}
	l.cfg.RxRing, l.cfg.TxRing = int(nrx), int(ntx)
	return nil
}

// takePool marks the port in use and gives the link its pool, created on
// the port's first Open. A port open elsewhere, or whose pool has another
// size, is refused.
func (l *Link) takePool() error {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	if eal.ports == nil {
		eal.ports = map[C.uint16_t]*portPool{}
	}
	pp := eal.ports[l.port]
	switch {
	case pp != nil && pp.inUse:
		return fmt.Errorf("%w: dpdk: port %s is open already", link.ErrConfig, l.cfg.Port)
	case pp != nil && pp.mbufs != l.cfg.Mbufs:
		return fmt.Errorf("%w: dpdk: port %s keeps its pool of %d mbufs until it is closed; %d asked",
			link.ErrConfig, l.cfg.Port, pp.mbufs, l.cfg.Mbufs)
	case pp == nil:
		name := C.CString("cic" + strconv.Itoa(unix.Getpid()) + "_" + strconv.FormatUint(poolSeq.Add(1), 10))
		defer C.free(unsafe.Pointer(name))
		var perr C.int
		// net_af_xdp does no DMA and needs the mbufs packed (see cic_pool).
		drv := C.CString("net_af_xdp")
		packed := C.cic_driver_is(l.port, drv)
		C.free(unsafe.Pointer(drv))
		pool := C.cic_pool(name, C.uint(l.cfg.Mbufs), packed, &perr)
		if pool == nil {
			return fmt.Errorf("%w: mbuf pool of %d: %s", ErrEAL, l.cfg.Mbufs, cerr(perr))
		}
		pp = &portPool{pool: pool, mbufs: l.cfg.Mbufs}
		eal.ports[l.port] = pp
	}
	pp.inUse = true
	l.pp, l.pool = pp, pp.pool
	return nil
}

// lookupPort finds a port by number or by name.
func lookupPort(p string) (C.uint16_t, error) {
	if n, err := strconv.ParseUint(p, 10, 16); err == nil {
		if C.rte_eth_dev_is_valid_port(C.uint16_t(n)) == 0 {
			return 0, fmt.Errorf("%w: dpdk: no port %d (%d ports)", link.ErrConfig, n, int(C.rte_eth_dev_count_avail()))
		}
		return C.uint16_t(n), nil
	}
	cp := C.CString(p)
	defer C.free(unsafe.Pointer(cp))
	var id C.uint16_t
	if r := C.rte_eth_dev_get_port_by_name(cp, &id); r < 0 {
		return 0, fmt.Errorf("%w: dpdk: no port named %q (%d ports): %s", link.ErrConfig, p, int(C.rte_eth_dev_count_avail()), cerr(-r))
	}
	return id, nil
}

// Receive implements link.Link: one C call frees the previous burst's
// mbufs and receives the next. The frames are the mbufs' own data (no
// copy), valid until the next Receive, as package link says.
func (l *Link) Receive(frames [][]byte) int {
	if l.closed {
		return 0
	}
	max := min(len(frames), MaxBurst)
	n := int(C.cic_rx(l.port, l.rxBufs, C.uint16_t(l.lent), C.uint16_t(max), l.rxData, l.rxLens))
	l.lent = n
	k := 0
	for i := 0; i < n; i++ {
		ln := int(l.rxl[i])
		if ln == 0 {
			l.stats.RxMultiSeg++
			continue
		}
		frames[k] = unsafe.Slice((*byte)(l.rxd[i]), ln)
		l.counters.RxBytes += uint64(ln)
		k++
	}
	l.counters.RxFrames += uint64(k)
	return k
}

// Buffer implements link.Link: an mbuf's data room, from a cache refilled
// MaxBurst mbufs per C call.
func (l *Link) Buffer() []byte {
	if l.closed {
		return nil
	}
	if l.ncach == 0 {
		l.ncach = int(C.cic_alloc(l.pool, l.cache, l.cdata, MaxBurst))
		if l.ncach == 0 {
			l.counters.TxNoBuffer++
			return nil
		}
	}
	l.ncach--
	return unsafe.Slice((*byte)(l.cd[l.ncach]), DefaultFrameSize)
}

// mbufOf returns the mbuf whose data room starts at f, or nil if f did
// not come from Buffer (it does not lie in the pool).
func (l *Link) mbufOf(f []byte) *C.struct_rte_mbuf {
	if cap(f) < DefaultFrameSize {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(f))
	m := uintptr(p) - l.dataOff
	for _, ch := range l.chunks {
		if m >= ch[0] && uintptr(p)+DefaultFrameSize <= ch[1] {
			return (*C.struct_rte_mbuf)(unsafe.Add(p, -int(l.dataOff)))
		}
	}
	return nil
}

// Transmit implements link.Link: one C call sets the lengths and sends
// the burst; frames over MaxBurst go in further calls.
func (l *Link) Transmit(frames [][]byte) int {
	if l.closed {
		l.counters.TxDropped += uint64(len(frames))
		return 0
	}
	sent := 0
	for len(frames) > 0 {
		chunk := frames[:min(len(frames), MaxBurst)]
		frames = frames[len(chunk):]
		n := 0
		for _, f := range chunk {
			m := l.mbufOf(f)
			if m == nil || len(f) == 0 || len(f) > DefaultFrameSize {
				if m == nil {
					l.stats.TxForeign++
				} else {
					l.txb[0] = m
					C.cic_free(l.txBufs, 1)
				}
				l.counters.TxDropped++
				continue
			}
			l.txb[n], l.txl[n] = m, C.uint16_t(len(f))
			l.counters.TxBytes += uint64(len(f))
			n++
		}
		if n == 0 {
			continue
		}
		var tries C.uint
		s := int(C.cic_tx(l.port, l.txBufs, l.txLens, C.uint16_t(n), &tries))
		l.stats.TxRetries += uint64(tries) - 1
		for i := s; i < n; i++ {
			l.counters.TxBytes -= uint64(l.txl[i])
		}
		l.counters.TxFrames += uint64(s)
		l.counters.TxDropped += uint64(n - s)
		sent += s
	}
	return sent
}

// MAC implements link.Link.
func (l *Link) MAC() wire.MAC { return l.mac }

// MTU implements link.Link.
func (l *Link) MTU() int { return l.mtu }

// FrameSize implements link.Link: the mbuf data room after its headroom.
func (l *Link) FrameSize() int { return DefaultFrameSize }

// Counters implements link.Link.
func (l *Link) Counters() link.Counters { return l.counters }

// PortID is the port's DPDK number.
func (l *Link) PortID() int { return int(l.port) }

// Rings returns the RX and TX descriptor ring sizes the driver accepted.
func (l *Link) Rings() (rx, tx int) { return l.cfg.RxRing, l.cfg.TxRing }

// Stats returns the link's own counts and the port's.
func (l *Link) Stats() (Stats, error) {
	st := l.stats
	if l.closed {
		return st, ErrClosed
	}
	var out [8]C.uint64_t
	if r := C.cic_stats(l.port, &out[0]); r < 0 {
		return st, fmt.Errorf("%w: port stats: %s", ErrEAL, cerr(-r))
	}
	st.PortRxPackets, st.PortTxPackets, st.PortRxMissed, st.PortRxErrors = uint64(out[0]), uint64(out[1]), uint64(out[2]), uint64(out[3])
	st.PortTxErrors, st.PortRxNoMbuf, st.PortRxBytes, st.PortTxBytes = uint64(out[4]), uint64(out[5]), uint64(out[6]), uint64(out[7])
	st.PoolFree = uint64(C.rte_mempool_avail_count(l.pool))
	return st, nil
}

// Wait implements engine.Waiter: it sleeps for the smaller of d and
// Config.IdleSleep, and returns at once when IdleSleep is zero (a DPDK
// port has no descriptor to block on).
func (l *Link) Wait(d time.Duration) {
	if s := min(d, l.cfg.IdleSleep); s > 0 {
		time.Sleep(s)
	}
}

// Close stops the port and returns the mbufs the link holds to the pool;
// a device Open probed is closed and removed, and its pool freed (other
// ports keep theirs for the next Open). Buffers lent by Buffer and never
// transmitted, and frames lent by Receive, must not be used after.
func (l *Link) Close() error {
	if l.closed {
		return ErrClosed
	}
	var err error
	if r := C.rte_eth_dev_stop(l.port); r < 0 {
		err = fmt.Errorf("%w: stop port %s: %s", ErrEAL, l.cfg.Port, cerr(-r))
	}
	l.release()
	return err
}

// release frees what open built, in reverse order.
func (l *Link) release() {
	l.closed = true
	if l.rxBufs != nil {
		C.cic_free(l.rxBufs, C.uint(l.lent))
		C.cic_free(l.cache, C.uint(l.ncach))
		l.lent, l.ncach = 0, 0
	}
	eal.mu.Lock()
	if l.pp != nil {
		l.pp.inUse = false
	}
	if l.vdev != "" {
		// Closing the port releases its queues and the mbufs they hold:
		// only then can the pool go.
		cn, cb := C.CString(l.vdev), C.CString("vdev")
		C.rte_eth_dev_close(l.port)
		C.rte_eal_hotplug_remove(cb, cn)
		C.free(unsafe.Pointer(cn))
		C.free(unsafe.Pointer(cb))
		if l.pp != nil {
			C.rte_mempool_free(l.pp.pool)
			delete(eal.ports, l.port)
		}
		l.vdev = ""
	}
	eal.mu.Unlock()
	l.pp, l.pool = nil, nil
	for _, p := range []unsafe.Pointer{unsafe.Pointer(l.rxBufs), unsafe.Pointer(l.rxData), unsafe.Pointer(l.rxLens),
		unsafe.Pointer(l.txBufs), unsafe.Pointer(l.txLens), unsafe.Pointer(l.cache), unsafe.Pointer(l.cdata)} {
		C.free(p)
	}
	l.rxBufs, l.rxData, l.rxLens, l.txBufs, l.txLens, l.cache, l.cdata = nil, nil, nil, nil, nil, nil, nil
}

// OpenRingPair creates two ports named a and b joined back to back by two
// rte_rings (the ring driver's rte_eth_from_rings: what one sends the
// other receives, no kernel, no device) and opens a Link on each with cfg's
// other fields. The EAL must be initialised. Ring pairs cannot be removed:
// each name serves once per process.
func OpenRingPair(a, b string, cfg Config) (*Link, *Link, error) {
	if EALArgs() == nil {
		return nil, nil, fmt.Errorf("%w: dpdk: the EAL is not initialised", link.ErrConfig)
	}
	ca, cb := C.CString(a), C.CString(b)
	defer C.free(unsafe.Pointer(ca))
	defer C.free(unsafe.Pointer(cb))
	var pa, pb C.uint16_t
	if r := C.cic_ring_pair(ca, cb, 4096, &pa, &pb); r < 0 {
		return nil, nil, fmt.Errorf("%w: ring pair %s/%s: %s", ErrEAL, a, b, cerr(-r))
	}
	cfg.EAL, cfg.Device = nil, ""
	cfg.Port = strconv.Itoa(int(pa))
	la, err := Open(cfg)
	if err != nil {
		return nil, nil, err
	}
	cfg.Port = strconv.Itoa(int(pb))
	lb, err := Open(cfg)
	if err != nil {
		_ = la.Close()
		return nil, nil, err
	}
	return la, lb, nil
}
