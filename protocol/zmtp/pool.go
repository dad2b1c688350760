package zmtp

import (
	"math/bits"
	"sync"
)

// Encoded messages live in pooled buffers from Send until the writer has
// written them: power-of-two size classes from 256 B to 4 MiB (larger
// messages are allocated and left to the GC). Reusing warm memory makes the
// copy in Send several times cheaper for large messages than copying into
// fresh allocations.
const (
	minPoolShift = 8
	maxPoolShift = 22
)

var bufPools [maxPoolShift - minPoolShift + 1]sync.Pool // of *[]byte

// poolClass returns the pool index for a buffer of n bytes, or -1.
func poolClass(n int) int {
	if n > 1<<maxPoolShift {
		return -1
	}
	shift := max(bits.Len(uint(n-1)), minPoolShift)
	if n <= 1 {
		shift = minPoolShift
	}
	return shift - minPoolShift
}

// getBuf returns an empty buffer with capacity for n bytes.
func getBuf(n int) []byte {
	c := poolClass(n)
	if c < 0 {
		return make([]byte, 0, n)
	}
	if p, ok := bufPools[c].Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, 1<<(c+minPoolShift))
}

// putBuf returns a buffer obtained from getBuf. The caller must not use it
// afterwards.
func putBuf(b []byte) {
	c := poolClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+minPoolShift) {
		return
	}
	b = b[:0]
	bufPools[c].Put(&b)
}
