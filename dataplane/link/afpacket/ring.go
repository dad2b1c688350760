package afpacket

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Layout of the kernel's ring headers (linux/if_packet.h), in host byte
// order. Only the fields the walkers use are named.
const (
	// struct tpacket_block_desc: version, offset_to_priv, then
	// tpacket_hdr_v1 (block_status, num_pkts, offset_to_first_pkt, ...).
	blockStatusOff = 8
	blockNumOff    = 12
	blockFirstOff  = 16
	blockDescLen   = 48 // up to and including the two timestamps

	// struct tpacket3_hdr.
	v3NextOff    = 0
	v3SnaplenOff = 12
	v3LenOff     = 16
	v3MacOff     = 24

	// struct tpacket2_hdr: tp_status, tp_len, tp_snaplen, ...; the kernel
	// reads a TX frame's data at TPACKET2_HDRLEN - sizeof(sockaddr_ll).
	v2StatusOff  = 0
	v2LenOff     = 4
	v2SnaplenOff = 8
	v2DataOff    = 32

	statusKernel      = 0 // TP_STATUS_KERNEL / TP_STATUS_AVAILABLE
	statusUser        = 1 // TP_STATUS_USER / TP_STATUS_SEND_REQUEST
	statusSending     = 2 // TP_STATUS_SENDING
	statusWrongFormat = 4 // TP_STATUS_WRONG_FORMAT
)

// word returns the uint32 at b[off:] for atomic access; off must be 4-byte
// aligned within an aligned ring.
func word(b []byte, off int) *uint32 {
	_ = b[off+3]
	return (*uint32)(unsafe.Pointer(&b[off]))
}

// rxRing walks a TPACKET_V3 receive ring: Blocks blocks of BlockSize
// bytes, each handed to user space whole (block_status TP_STATUS_USER,
// read with acquire order) and handed back by storing TP_STATUS_KERNEL
// (release order) once every frame lent from it has been taken back.
//
// The walker trusts nothing in a block: a packet whose offsets leave the
// block ends the block's walk and is counted in bad.
type rxRing struct {
	mem       []byte
	blockSize int
	blocks    int

	cur     int // block being walked
	left    int // packets left in cur; -1: cur not yet opened
	next    int // offset of the next packet header in cur
	release int // blocks walked to the end, handed back at the next Receive

	frames, bytes, truncated, bad uint64
}

func newRxRing(mem []byte, blockSize, blocks int) *rxRing {
	return &rxRing{mem: mem, blockSize: blockSize, blocks: blocks, left: -1}
}

func (r *rxRing) block(i int) []byte {
	return r.mem[i*r.blockSize : (i+1)*r.blockSize : (i+1)*r.blockSize]
}

// receive hands back the blocks finished by the previous call and fills
// frames from user-owned blocks; see link.Link.Receive.
func (r *rxRing) receive(frames [][]byte) int {
	for ; r.release > 0; r.release-- {
		b := (r.cur - r.release + r.blocks) % r.blocks
		atomic.StoreUint32(word(r.block(b), blockStatusOff), statusKernel)
	}
	n := 0
	for n < len(frames) {
		b := r.block(r.cur)
		if r.left < 0 {
			if atomic.LoadUint32(word(b, blockStatusOff))&statusUser == 0 {
				break
			}
			r.left = int(binary.NativeEndian.Uint32(b[blockNumOff:]))
			r.next = int(binary.NativeEndian.Uint32(b[blockFirstOff:]))
		}
		if r.left > 0 {
			if f, ok := r.packet(b); ok {
				frames[n] = f
				n++
			}
		}
		if r.left <= 0 {
			r.left = -1
			r.cur = (r.cur + 1) % r.blocks
			r.release++
			if r.release == r.blocks {
				break // every block is lent: the caller must Receive again
			}
		}
	}
	return n
}

// packet takes the packet at r.next in block b, advances to the next one
// and reports whether it is a whole frame to pass up.
func (r *rxRing) packet(b []byte) ([]byte, bool) {
	h := r.next
	if h < blockDescLen || h > len(b)-v3MacOff-4 || h%4 != 0 {
		r.bad++
		r.left = 0
		return nil, false
	}
	next := int(binary.NativeEndian.Uint32(b[h+v3NextOff:]))
	snap := int(binary.NativeEndian.Uint32(b[h+v3SnaplenOff:]))
	wire := int(binary.NativeEndian.Uint32(b[h+v3LenOff:]))
	mac := int(binary.NativeEndian.Uint16(b[h+v3MacOff:]))
	r.left--
	if r.left > 0 {
		if next <= 0 {
			r.bad++
			r.left = 0
		}
		r.next = h + next
	}
	start := h + mac
	if mac == 0 || start > len(b) || snap > len(b)-start {
		r.bad++
		r.left = 0
		return nil, false
	}
	if snap < wire {
		r.truncated++
		return nil, false
	}
	r.frames++
	r.bytes += uint64(snap)
	return b[start : start+snap : start+snap], true
}

// txRing hands out the frames of a TPACKET_V2 transmit ring in ring order:
// a frame is free when its tp_status is TP_STATUS_AVAILABLE (or
// TP_STATUS_WRONG_FORMAT, counted) and is queued by writing tp_len and
// storing TP_STATUS_SEND_REQUEST with release order. The kernel sends the
// queued frames from its own index on the next send(2).
type txRing struct {
	mem       []byte
	frameSize int
	frames    int

	head  int // next frame Buffer lends
	lent  int // frames lent and not yet given to transmit
	ready int // frames queued since the last kick

	sent, bytes, noBuffer, dropped, wrongFormat uint64
}

func newTxRing(mem []byte, frameSize, frames int) *txRing {
	return &txRing{mem: mem, frameSize: frameSize, frames: frames}
}

func (r *txRing) frame(i int) []byte {
	return r.mem[i*r.frameSize : (i+1)*r.frameSize : (i+1)*r.frameSize]
}

// buffer lends the next free frame's data area, or nil.
func (r *txRing) buffer() []byte {
	if r.lent == r.frames {
		r.noBuffer++
		return nil
	}
	f := r.frame(r.head)
	switch atomic.LoadUint32(word(f, v2StatusOff)) {
	case statusKernel:
	case statusWrongFormat:
		r.wrongFormat++
		atomic.StoreUint32(word(f, v2StatusOff), statusKernel)
	default:
		r.noBuffer++
		return nil
	}
	r.head = (r.head + 1) % r.frames
	r.lent++
	return f[v2DataOff:r.frameSize:r.frameSize]
}

// index returns the ring frame whose data area f starts, or false.
func (r *txRing) index(f []byte) (int, bool) {
	if cap(f) == 0 || len(f) > r.frameSize-v2DataOff || len(f) == 0 {
		return 0, false
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(f))) - uintptr(unsafe.Pointer(unsafe.SliceData(r.mem))) - v2DataOff
	if off >= uintptr(len(r.mem)) || off%uintptr(r.frameSize) != 0 {
		return 0, false
	}
	return int(off / uintptr(r.frameSize)), true
}

// queue marks every frame of fs for sending and returns how many it
// accepted; frames not lent by buffer are counted in dropped.
func (r *txRing) queue(fs [][]byte) int {
	ok := 0
	for _, f := range fs {
		i, good := r.index(f)
		if !good || r.lent == 0 {
			r.dropped++
			continue
		}
		fr := r.frame(i)
		binary.NativeEndian.PutUint32(fr[v2LenOff:], uint32(len(f)))
		binary.NativeEndian.PutUint32(fr[v2SnaplenOff:], uint32(len(f)))
		atomic.StoreUint32(word(fr, v2StatusOff), statusUser)
		r.lent--
		r.ready++
		r.sent++
		r.bytes += uint64(len(f))
		ok++
	}
	return ok
}
