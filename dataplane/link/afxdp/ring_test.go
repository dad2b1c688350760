package afxdp

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cicada-load/cicada/dataplane/link"
)

// sharedRing is one ring's index words and entries as the kernel would
// map them, with the two sides' views of it: p produces, c consumes.
type sharedRing struct {
	words   [3]uint32 // producer, consumer, flags
	entries []uint64
	p, c    ring
}

func newSharedRing(size, start uint32) *sharedRing {
	s := &sharedRing{entries: make([]uint64, size)}
	s.words[0], s.words[1] = start, start
	s.p = newRing(&s.words[0], &s.words[1], &s.words[2], size)
	s.c = newRing(&s.words[0], &s.words[1], &s.words[2], size)
	return s
}

// produce writes up to n values from next on and returns how many.
func (s *sharedRing) produce(n uint32, next *uint64) uint32 {
	if room := s.p.free(n); room < n {
		n = room
	}
	for i := uint32(0); i < n; i++ {
		s.entries[(s.p.prod+i)&s.p.mask] = *next
		*next++
	}
	if n > 0 {
		s.p.submit(n)
	}
	return n
}

// consume reads up to n values and checks that they continue from *want.
func (s *sharedRing) consume(t testing.TB, n uint32, want *uint64) uint32 {
	t.Helper()
	if avail := s.c.avail(n); avail < n {
		n = avail
	}
	for i := uint32(0); i < n; i++ {
		if got := s.entries[(s.c.cons+i)&s.c.mask]; got != *want {
			t.Fatalf("entry %d: got %d, want %d (prod %d cons %d)", i, got, *want, s.words[0], s.words[1])
		}
		*want++
	}
	if n > 0 {
		s.c.release(n)
	}
	return n
}

func TestRingFullAndEmpty(t *testing.T) {
	s := newSharedRing(8, 0)
	var next, want uint64
	if got := s.c.avail(1); got != 0 {
		t.Fatalf("empty ring has %d entries to consume", got)
	}
	if got := s.produce(100, &next); got != 8 {
		t.Fatalf("produced %d into an empty ring of 8, want 8", got)
	}
	if got := s.p.free(1); got != 0 {
		t.Fatalf("full ring reports %d free", got)
	}
	if got := s.consume(t, 3, &want); got != 3 {
		t.Fatalf("consumed %d, want 3", got)
	}
	// The producer's cached consumer index is stale (it saw 0 free); asking
	// for one slot must re-read it and find the three released.
	if got := s.p.free(1); got != 3 {
		t.Fatalf("after 3 released the producer sees %d free, want 3", got)
	}
	if got := s.consume(t, 100, &want); got != 5 {
		t.Fatalf("consumed %d of the remaining, want 5", got)
	}
	if got := s.c.avail(1); got != 0 {
		t.Fatalf("drained ring has %d entries", got)
	}
}

// TestRingIndexWrap runs entries through a small ring whose free-running
// indices start just below 2^32, so they wrap to zero part way.
func TestRingIndexWrap(t *testing.T) {
	s := newSharedRing(4, 0xffff_fffa) // 6 below 2^32
	var next, want uint64
	for range 50 {
		s.produce(3, &next)
		s.consume(t, 2, &want)
		s.produce(1, &next)
		s.consume(t, 2, &want)
	}
	if next != 200 || want != 200 {
		t.Fatalf("produced %d, consumed %d, want 200 each", next, want)
	}
	const start, wrapped uint32 = 0xffff_fffa, 200 - (1<<32 - 0xffff_fffa)
	if s.words[0] != wrapped || s.words[1] != wrapped {
		t.Fatalf("indices %#x, %#x did not wrap from %#x to %#x", s.words[0], s.words[1], start, wrapped)
	}
}

func TestRingNeedWakeup(t *testing.T) {
	s := newSharedRing(4, 0)
	if s.p.needWakeup() {
		t.Fatal("wake-up reported with no flag set")
	}
	s.words[2] = ringNeedWakeup
	if !s.p.needWakeup() {
		t.Fatal("XDP_RING_NEED_WAKEUP not seen")
	}
}

// FuzzRing drives a producer and a consumer over one ring with an operation
// stream from the fuzzer, starting from any index, and checks that entries
// come out in order, exactly once, and that neither side ever sees more
// than the ring holds or frees.
func FuzzRing(f *testing.F) {
	f.Add(uint32(0), uint8(3), []byte{0x0f, 0x0e, 0x03, 0x02})
	f.Add(uint32(0xffff_fff0), uint8(0), []byte{0xff, 0xfe, 0xff, 0xfe, 0x11})
	f.Add(uint32(1<<31), uint8(7), []byte{0x01, 0x00, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, start uint32, sizeLog uint8, ops []byte) {
		size := uint32(1) << (sizeLog % 8)
		s := newSharedRing(size, start)
		var next, want uint64
		for _, op := range ops {
			n := uint32(op >> 1)
			if op&1 == 1 {
				s.produce(n, &next)
			} else {
				s.consume(t, n, &want)
			}
			inRing := s.words[0] - s.words[1]
			if inRing > size || uint64(inRing) != next-want {
				t.Fatalf("ring holds %d (prod %#x cons %#x), produced-consumed %d, size %d",
					inRing, s.words[0], s.words[1], next-want, size)
			}
			if free := s.p.free(size); free != size-inRing {
				t.Fatalf("producer sees %d free, want %d", free, size-inRing)
			}
			if avail := s.c.avail(size); avail != inRing {
				t.Fatalf("consumer sees %d, want %d", avail, inRing)
			}
		}
		s.consume(t, size, &want)
		if want != next {
			t.Fatalf("drained to %d, produced %d", want, next)
		}
	})
}

func TestFrameStack(t *testing.T) {
	s := newFrameStack(2)
	if _, ok := s.pop(); ok {
		t.Fatal("pop from an empty stack succeeded")
	}
	if !s.push(4096) || !s.push(8192) {
		t.Fatal("push within capacity failed")
	}
	if s.push(0) {
		t.Fatal("push beyond capacity succeeded: a frame returned twice would go unnoticed")
	}
	if a, ok := s.pop(); !ok || a != 8192 {
		t.Fatalf("pop = %d, %v; want 8192, true", a, ok)
	}
}

func TestConfigDefaultsAndRefusals(t *testing.T) {
	c, err := Config{Interface: "x"}.withDefaults(4096)
	if err != nil {
		t.Fatal(err)
	}
	if c.FrameSize != DefaultFrameSize || c.RXRing != DefaultRingSize || c.Frames != 3*DefaultRingSize ||
		c.BindRetry != DefaultBindRetry || c.License != "Dual MIT/GPL" || c.Mode != ModeCopy {
		t.Fatalf("defaults not filled in: %+v", c)
	}
	for name, bad := range map[string]Config{
		"no interface":      {},
		"negative queue":    {Interface: "x", QueueID: -1},
		"frame not pow2":    {Interface: "x", FrameSize: 3000},
		"frame over page":   {Interface: "x", FrameSize: 8192},
		"frame under 2048":  {Interface: "x", FrameSize: 1024},
		"ring not pow2":     {Interface: "x", TXRing: 100},
		"no TX frames":      {Interface: "x", FillRing: 64, RXRing: 64, Frames: 128},
		"unknown mode":      {Interface: "x", Mode: Mode(9)},
		"ring over 1<<20":   {Interface: "x", RXRing: 1 << 21},
		"too many frames":   {Interface: "x", Frames: 1<<24 + 1},
		"completion pow2":   {Interface: "x", CompletionRing: 3},
		"fill ring not pow": {Interface: "x", FillRing: 6},
	} {
		if _, err := bad.withDefaults(4096); !errors.Is(err, link.ErrConfig) {
			t.Errorf("%s: err = %v, want link.ErrConfig", name, err)
		}
	}
}

// TestProgramEncoding checks the XDP program's bytes against the encoding
// of struct bpf_insn (opcode, dst|src<<4, off, imm, little endian).
func TestProgramEncoding(t *testing.T) {
	want := [][8]byte{
		{0x61, 0x12, 16, 0, 0, 0, 0, 0}, // r2 = *(u32 *)(r1 + 16)
		{0x18, 0x11, 0, 0, 7, 0, 0, 0},  // r1 = map fd 7 (BPF_PSEUDO_MAP_FD)
		{0, 0, 0, 0, 0, 0, 0, 0},        // ld_imm64 upper half
		{0xb7, 0x03, 0, 0, 2, 0, 0, 0},  // r3 = XDP_PASS
		{0x85, 0x00, 0, 0, 51, 0, 0, 0}, // call bpf_redirect_map
		{0x95, 0x00, 0, 0, 0, 0, 0, 0},  // exit
	}
	got := program(7)
	if len(got) != len(want) {
		t.Fatalf("%d instructions, want %d", len(got), len(want))
	}
	for i, w := range want {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], got[i])
		if b != w {
			t.Errorf("insn %d = % x, want % x", i, b, w)
		}
	}
	if b := insn(0, 0, 0, -1, -2); b != 0xffff_fffe_ffff_0000 {
		t.Errorf("negative off/imm encode as %#x", b)
	}
}
