package afxdp

import "sync/atomic"

// ringNeedWakeup is XDP_RING_NEED_WAKEUP, the flag the kernel sets in a
// ring's flags word when it needs a syscall to make progress.
const ringNeedWakeup = 1

// desc is struct xdp_desc, the RX and TX ring entry: a UMEM address, a
// length and options.
type desc struct {
	Addr    uint64
	Len     uint32
	Options uint32
}

// ring is one single-producer single-consumer ring shared with the kernel:
// the index arithmetic only, the entries live in a slice beside it.
//
// Indices are free-running uint32 counters; an entry's slot is index&mask,
// and producer-consumer is the number of entries in the ring, which uint32
// subtraction keeps right across wrap-around (the ring size is at most
// 1<<31). Our side owns one index and caches the other (the kernel's);
// the cache is refreshed with an atomic load only when it shows too little,
// and our index is published with an atomic store after the entries are
// written (producer) or read (consumer).
type ring struct {
	producer, consumer, flags *uint32
	mask, size                uint32
	// prod and cons are our view: the index we own is exact, the other a
	// cached copy of the kernel's.
	prod, cons uint32
}

// newRing returns a ring over the given index words; size is a power of
// two. It starts from the indices found there.
func newRing(producer, consumer, flags *uint32, size uint32) ring {
	return ring{
		producer: producer, consumer: consumer, flags: flags,
		mask: size - 1, size: size,
		prod: atomic.LoadUint32(producer), cons: atomic.LoadUint32(consumer),
	}
}

// free returns how many entries the producer may write now. It re-reads
// the consumer index only if fewer than want are free in the cached view.
func (r *ring) free(want uint32) uint32 {
	if n := r.size - (r.prod - r.cons); n >= want {
		return n
	}
	r.cons = atomic.LoadUint32(r.consumer)
	return r.size - (r.prod - r.cons)
}

// submit publishes n entries written at slots prod..prod+n-1.
func (r *ring) submit(n uint32) {
	r.prod += n
	atomic.StoreUint32(r.producer, r.prod)
}

// avail returns how many entries the consumer may read now. It re-reads the
// producer index only if fewer than want are available in the cached view.
func (r *ring) avail(want uint32) uint32 {
	if n := r.prod - r.cons; n >= want {
		return n
	}
	r.prod = atomic.LoadUint32(r.producer)
	return r.prod - r.cons
}

// release gives back n entries read at slots cons..cons+n-1.
func (r *ring) release(n uint32) {
	r.cons += n
	atomic.StoreUint32(r.consumer, r.cons)
}

// needWakeup reports whether the kernel asked for a syscall on this ring.
func (r *ring) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&ringNeedWakeup != 0
}

// frameStack is a stack of free UMEM frame addresses with a fixed
// capacity: it never grows after creation.
type frameStack struct {
	addrs []uint64
}

func newFrameStack(capacity int) frameStack {
	return frameStack{addrs: make([]uint64, 0, capacity)}
}

func (s *frameStack) len() int { return len(s.addrs) }

// push adds addr; it reports false (and drops nothing) if the stack is
// full, which would mean a frame was returned twice.
func (s *frameStack) push(addr uint64) bool {
	if len(s.addrs) == cap(s.addrs) {
		return false
	}
	s.addrs = append(s.addrs, addr)
	return true
}

// pop removes and returns the top address, or false if empty.
func (s *frameStack) pop() (uint64, bool) {
	n := len(s.addrs)
	if n == 0 {
		return 0, false
	}
	a := s.addrs[n-1]
	s.addrs = s.addrs[:n-1]
	return a, true
}
