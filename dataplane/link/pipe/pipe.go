// Package pipe is an in-process pair of links (link.Link) joined back to
// back, with injectable loss, reordering, duplication and delay driven by a
// seeded random source, so that every run with one seed is the same run. It
// serves the data plane's unit tests and measures the stack's own ceiling.
//
// Each direction has a fixed pool of frame buffers (Config.Frames), taken by
// the sender's Buffer and returned when the receiver's next Receive takes
// back the burst it handed out, so the pair allocates nothing after New.
// Delay is counted in the receiver's Receive calls (a frame sent while the
// receiver has made r calls is delivered at call r+Delay or later), which
// keeps runs deterministic without a clock. Both ends may be driven by
// different goroutines: a mutex per direction guards its pool and queue.
package pipe

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"unsafe"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// Defaults for zero Config fields.
const (
	DefaultFrames    = 4096
	DefaultFrameSize = 2048
	DefaultMTU       = 1500
)

// Config configures a pipe pair. Its zero value is a lossless pipe of
// DefaultFrames buffers of DefaultFrameSize bytes per direction and MTU
// DefaultMTU.
type Config struct {
	// Frames is the number of buffers per direction. If zero, DefaultFrames.
	Frames int
	// FrameSize is the size of each buffer. If zero, DefaultFrameSize; it
	// must hold MTU plus the Ethernet header.
	FrameSize int
	// MTU is the largest IP packet carried. If zero, DefaultMTU.
	MTU int
	// MACA and MACB are the two ends' addresses. If zero, 02:00:00:00:00:0a
	// and 02:00:00:00:00:0b.
	MACA, MACB wire.MAC
	// Loss, Reorder and Duplicate are probabilities in [0, 1] applied to
	// each transmitted frame: drop it; swap it with the frame queued before
	// it; queue a copy after it.
	Loss, Reorder, Duplicate float64
	// Delay is the number of receiver Receive calls a frame waits.
	Delay int
	// Seed seeds the random source of the injections.
	Seed uint64
}

// Counters are the pipe's own counts of injected faults, per direction
// (frames sent by this end).
type Counters struct {
	Lost, Reordered, Duplicated uint64
}

type slot struct {
	buf uint32 // buffer index
	n   uint32 // frame length
	due uint64 // receiver call count at which it may be delivered
}

// dir is one direction: the sender's buffer pool and the receiver's queue.
type dir struct {
	mu    sync.Mutex
	slab  []byte
	fs    int
	free  []uint32 // stack of free buffer indices
	queue []slot   // ring of frames in flight
	head  int
	count int
	lent  []uint32 // buffers handed out by the last Receive
	calls uint64   // receiver Receive calls
	cfg   *Config
	rng   *rand.Rand
	inj   Counters
	tx    link.Counters // sender side
	rx    link.Counters // receiver side
}

// End is one end of a pipe pair; it implements link.Link.
type End struct {
	out, in *dir
	mac     wire.MAC
	mtu     int
}

var _ link.Link = (*End)(nil)

// New returns the two ends of a pipe, or an error wrapping link.ErrConfig.
func New(cfg Config) (a, b *End, err error) {
	if cfg.Frames == 0 {
		cfg.Frames = DefaultFrames
	}
	if cfg.FrameSize == 0 {
		cfg.FrameSize = DefaultFrameSize
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.MACA == (wire.MAC{}) {
		cfg.MACA = wire.MAC{2, 0, 0, 0, 0, 0x0a}
	}
	if cfg.MACB == (wire.MAC{}) {
		cfg.MACB = wire.MAC{2, 0, 0, 0, 0, 0x0b}
	}
	switch {
	case cfg.Frames < 1 || cfg.Frames > 1<<20:
		return nil, nil, fmt.Errorf("pipe: Frames %d outside 1..%d: %w", cfg.Frames, 1<<20, link.ErrConfig)
	case cfg.MTU < 68 || cfg.MTU > 9000:
		return nil, nil, fmt.Errorf("pipe: MTU %d outside 68..9000: %w", cfg.MTU, link.ErrConfig)
	case cfg.FrameSize < cfg.MTU+wire.EthernetLen || cfg.FrameSize > 16384:
		return nil, nil, fmt.Errorf("pipe: FrameSize %d cannot hold MTU %d plus header or exceeds 16384: %w",
			cfg.FrameSize, cfg.MTU, link.ErrConfig)
	case !prob(cfg.Loss) || !prob(cfg.Reorder) || !prob(cfg.Duplicate):
		return nil, nil, fmt.Errorf("pipe: Loss %v, Reorder %v, Duplicate %v: each must be in [0, 1]: %w",
			cfg.Loss, cfg.Reorder, cfg.Duplicate, link.ErrConfig)
	case cfg.Delay < 0:
		return nil, nil, fmt.Errorf("pipe: Delay %d is negative: %w", cfg.Delay, link.ErrConfig)
	case cfg.MACA == cfg.MACB:
		return nil, nil, fmt.Errorf("pipe: both ends have MAC %v: %w", cfg.MACA, link.ErrConfig)
	}
	ab, ba := newDir(&cfg, 1), newDir(&cfg, 2)
	return &End{out: ab, in: ba, mac: cfg.MACA, mtu: cfg.MTU}, &End{out: ba, in: ab, mac: cfg.MACB, mtu: cfg.MTU}, nil
}

func prob(p float64) bool { return p >= 0 && p <= 1 }

func newDir(cfg *Config, stream uint64) *dir {
	d := &dir{slab: make([]byte, cfg.Frames*cfg.FrameSize), fs: cfg.FrameSize,
		free: make([]uint32, cfg.Frames), queue: make([]slot, cfg.Frames),
		lent: make([]uint32, 0, cfg.Frames), cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, stream))}
	for i := range d.free {
		d.free[i] = uint32(cfg.Frames - 1 - i)
	}
	return d
}

// MAC implements link.Link.
func (e *End) MAC() wire.MAC { return e.mac }

// MTU implements link.Link.
func (e *End) MTU() int { return e.mtu }

// FrameSize implements link.Link.
func (e *End) FrameSize() int { return e.out.fs }

// Buffer implements link.Link.
func (e *End) Buffer() []byte {
	d := e.out
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.free) == 0 {
		d.tx.TxNoBuffer++
		return nil
	}
	i := d.free[len(d.free)-1]
	d.free = d.free[:len(d.free)-1]
	off := int(i) * d.fs
	return d.slab[off : off+d.fs : off+d.fs]
}

// index returns the buffer index of f, or false when f does not start at a
// buffer of d.
func (d *dir) index(f []byte) (uint32, bool) {
	if cap(f) == 0 || len(f) > d.fs {
		return 0, false
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(f))) - uintptr(unsafe.Pointer(unsafe.SliceData(d.slab)))
	if off >= uintptr(len(d.slab)) || off%uintptr(d.fs) != 0 {
		return 0, false
	}
	return uint32(off / uintptr(d.fs)), true
}

// Transmit implements link.Link. Frames not from this end's Buffer are
// counted in TxDropped and otherwise ignored.
func (e *End) Transmit(frames [][]byte) int {
	d := e.out
	d.mu.Lock()
	defer d.mu.Unlock()
	sent := 0
	for _, f := range frames {
		i, ok := d.index(f)
		if !ok {
			d.tx.TxDropped++
			continue
		}
		d.tx.TxFrames++
		d.tx.TxBytes += uint64(len(f))
		sent++
		if d.cfg.Loss > 0 && d.rng.Float64() < d.cfg.Loss {
			d.inj.Lost++
			d.free = append(d.free, i)
			continue
		}
		d.enqueue(i, len(f))
		if d.cfg.Reorder > 0 && d.count >= 2 && d.rng.Float64() < d.cfg.Reorder {
			d.inj.Reordered++
			a, b := d.at(d.count-1), d.at(d.count-2)
			*a, *b = *b, *a
		}
		if d.cfg.Duplicate > 0 && len(d.free) > 0 && d.rng.Float64() < d.cfg.Duplicate {
			d.inj.Duplicated++
			j := d.free[len(d.free)-1]
			d.free = d.free[:len(d.free)-1]
			copy(d.slab[int(j)*d.fs:], f)
			d.enqueue(j, len(f))
		}
	}
	return sent
}

func (d *dir) at(k int) *slot { return &d.queue[(d.head+k)%len(d.queue)] }

// enqueue appends buffer i; the queue has room for every buffer, so it
// cannot overflow.
func (d *dir) enqueue(i uint32, n int) {
	*d.at(d.count) = slot{buf: i, n: uint32(n), due: d.calls + uint64(d.cfg.Delay)}
	d.count++
}

// Receive implements link.Link.
func (e *End) Receive(frames [][]byte) int {
	d := e.in
	d.mu.Lock()
	defer d.mu.Unlock()
	d.free = append(d.free, d.lent...)
	d.lent = d.lent[:0]
	d.calls++
	n := 0
	for n < len(frames) && d.count > 0 {
		s := d.at(0)
		if s.due > d.calls {
			break
		}
		off := int(s.buf) * d.fs
		frames[n] = d.slab[off : off+int(s.n) : off+d.fs]
		d.lent = append(d.lent, s.buf)
		d.rx.RxFrames++
		d.rx.RxBytes += uint64(s.n)
		d.head = (d.head + 1) % len(d.queue)
		d.count--
		n++
	}
	return n
}

// Counters implements link.Link: this end's transmit and receive counts.
func (e *End) Counters() link.Counters {
	e.out.mu.Lock()
	c := e.out.tx
	e.out.mu.Unlock()
	e.in.mu.Lock()
	c.RxFrames, c.RxBytes = e.in.rx.RxFrames, e.in.rx.RxBytes
	e.in.mu.Unlock()
	return c
}

// Injected returns the faults injected into frames this end sent.
func (e *End) Injected() Counters {
	e.out.mu.Lock()
	defer e.out.mu.Unlock()
	return e.out.inj
}

// InFlight returns the number of frames sent by this end and not yet
// received by the other.
func (e *End) InFlight() int {
	e.out.mu.Lock()
	defer e.out.mu.Unlock()
	return e.out.count
}
