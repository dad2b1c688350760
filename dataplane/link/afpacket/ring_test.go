package afpacket

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"
)

const testBlock = 4096

// ringMem is aligned like the kernel's mmap (8-byte words at least).
func ringMem(blocks int) []byte {
	w := make([]uint64, blocks*testBlock/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), blocks*testBlock)
}

// fill writes the frames into block b as the kernel does (headers at 48,
// 16-byte aligned, mac offset 66 like TPACKET_V3 with no vnet header) and
// hands the block to user space.
func fill(mem []byte, b int, frames ...[]byte) {
	blk := mem[b*testBlock : (b+1)*testBlock]
	clear(blk)
	ne := binary.NativeEndian
	ne.PutUint32(blk[blockNumOff:], uint32(len(frames)))
	ne.PutUint32(blk[blockFirstOff:], blockDescLen)
	h := blockDescLen
	for i, f := range frames {
		const mac = 66
		next := (mac + len(f) + 15) &^ 15
		if i == len(frames)-1 {
			next = 0
		}
		ne.PutUint32(blk[h+v3NextOff:], uint32(next))
		ne.PutUint32(blk[h+v3SnaplenOff:], uint32(len(f)))
		ne.PutUint32(blk[h+v3LenOff:], uint32(len(f)))
		ne.PutUint16(blk[h+v3MacOff:], mac)
		copy(blk[h+mac:], f)
		h += next
	}
	ne.PutUint32(blk[blockStatusOff:], statusUser)
}

func status(mem []byte, b int) uint32 {
	return binary.NativeEndian.Uint32(mem[b*testBlock+blockStatusOff:])
}

func frame(n int, v byte) []byte { return bytes.Repeat([]byte{v}, n) }

func TestRxRingWalksBlocksAndReleasesOnNextReceive(t *testing.T) {
	mem := ringMem(3)
	r := newRxRing(mem, testBlock, 3)
	out := make([][]byte, 2)
	if n := r.receive(out); n != 0 {
		t.Fatalf("empty ring: receive = %d", n)
	}
	fill(mem, 0, frame(60, 1), frame(100, 2), frame(1514, 3))
	fill(mem, 1, frame(70, 4))
	want := [][]byte{frame(60, 1), frame(100, 2), frame(1514, 3), frame(70, 4)}
	var got [][]byte
	for range 4 {
		n := r.receive(out)
		for _, f := range out[:n] {
			got = append(got, bytes.Clone(f))
		}
		if len(got) == 2 && status(mem, 0) != statusUser {
			t.Fatalf("block 0 handed back while its frames are lent")
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d frames; want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("frame %d: %d bytes of %d; want %d of %d", i, len(got[i]), got[i][0], len(want[i]), want[i][0])
		}
	}
	if status(mem, 0) != statusKernel || status(mem, 1) != statusKernel {
		t.Errorf("blocks not handed back: status %d %d", status(mem, 0), status(mem, 1))
	}
	if r.frames != 4 || r.bytes != 60+100+1514+70 || r.bad != 0 || r.truncated != 0 {
		t.Errorf("counters frames %d bytes %d bad %d truncated %d", r.frames, r.bytes, r.bad, r.truncated)
	}
	// The ring wraps: block 2, then block 0 again.
	fill(mem, 2, frame(80, 5))
	fill(mem, 0, frame(90, 6))
	n := r.receive(out)
	if n != 2 || out[0][0] != 5 || out[1][0] != 6 {
		t.Fatalf("after wrap: %d frames", n)
	}
}

func TestRxRingCountsTruncatedAndMalformed(t *testing.T) {
	mem := ringMem(2)
	r := newRxRing(mem, testBlock, 2)
	fill(mem, 0, frame(60, 1), frame(60, 2))
	// The first frame was longer on the wire than the ring kept.
	binary.NativeEndian.PutUint32(mem[blockDescLen+v3LenOff:], 9000)
	fill(mem, 1, frame(60, 3), frame(60, 4))
	// The second packet's header points past the block.
	binary.NativeEndian.PutUint32(mem[testBlock+blockDescLen+v3NextOff:], testBlock)
	out := make([][]byte, 8)
	n := r.receive(out)
	if n != 2 || out[0][0] != 2 || out[1][0] != 3 {
		t.Fatalf("receive = %d frames", n)
	}
	if r.truncated != 1 || r.bad != 1 {
		t.Errorf("truncated %d bad %d; want 1 1", r.truncated, r.bad)
	}
	r.receive(out)
	if status(mem, 0) != statusKernel || status(mem, 1) != statusKernel {
		t.Errorf("blocks not handed back after a bad entry")
	}
}

func TestTxRingLendsInOrderAndQueues(t *testing.T) {
	const fs, frames = 256, 4
	mem := ringMem(1)[:fs*frames]
	r := newTxRing(mem, fs, frames)
	var bufs [][]byte
	for range frames {
		b := r.buffer()
		if b == nil || len(b) != fs-v2DataOff {
			t.Fatalf("buffer = %d bytes", len(b))
		}
		bufs = append(bufs, b)
	}
	if r.buffer() != nil || r.noBuffer != 1 {
		t.Fatalf("a fifth buffer from four frames (noBuffer %d)", r.noBuffer)
	}
	foreign := make([]byte, 64)
	if n := r.queue([][]byte{bufs[1][:60], foreign, bufs[0][:100]}); n != 2 || r.dropped != 1 {
		t.Fatalf("queue = %d, dropped %d; want 2, 1", n, r.dropped)
	}
	ne := binary.NativeEndian
	if ne.Uint32(mem[fs+v2StatusOff:]) != statusUser || ne.Uint32(mem[fs+v2LenOff:]) != 60 ||
		ne.Uint32(mem[v2LenOff:]) != 100 || ne.Uint32(mem[2*fs+v2StatusOff:]) != statusKernel {
		t.Fatalf("frame headers not written as queued")
	}
	// The kernel has not sent frame 0 yet: its slot is not free.
	r.queue([][]byte{bufs[2][:60], bufs[3][:60]})
	if r.buffer() != nil {
		t.Fatalf("lent a frame the kernel still owns")
	}
	ne.PutUint32(mem[v2StatusOff:], statusWrongFormat)
	if b := r.buffer(); b == nil || &b[0] != &bufs[0][0] || r.wrongFormat != 1 {
		t.Fatalf("frame 0 not lent again after the kernel refused it")
	}
	if r.sent != 4 || r.bytes != 60+100+60+60 {
		t.Errorf("sent %d bytes %d", r.sent, r.bytes)
	}
}

// FuzzRxRing feeds arbitrary block contents to the walker: it must not
// panic, and every frame it returns must lie inside its block.
func FuzzRxRing(f *testing.F) {
	mem := ringMem(2)
	fill(mem, 0, frame(60, 1), frame(100, 2))
	f.Add(bytes.Clone(mem[:testBlock]))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, blk []byte) {
		mem := ringMem(2)
		copy(mem, blk)
		copy(mem[testBlock:], blk)
		for b := range 2 {
			binary.NativeEndian.PutUint32(mem[b*testBlock+blockStatusOff:], statusUser)
		}
		r := newRxRing(mem, testBlock, 2)
		out := make([][]byte, 4)
		base := uintptr(unsafe.Pointer(&mem[0]))
		for range 4 {
			n := r.receive(out)
			for _, fr := range out[:n] {
				p := uintptr(unsafe.Pointer(unsafe.SliceData(fr)))
				if p < base || p+uintptr(len(fr)) > base+uintptr(len(mem)) {
					t.Fatalf("frame outside the ring")
				}
				if (p-base)/testBlock != (p+uintptr(len(fr))-1-base)/testBlock && len(fr) > 0 {
					t.Fatalf("frame crosses a block")
				}
			}
		}
	})
}
