package wire

import "encoding/binary"

// Sum adds b to the ones'-complement accumulator initial as a sequence of
// big-endian 16-bit words (an odd last byte is padded with zero) and returns
// the unfolded accumulator. Sums of several parts may be added together as
// long as every part but the last has even length.
func Sum(b []byte, initial uint32) uint64 {
	s := uint64(initial)
	for len(b) >= 8 {
		s += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

// Fold folds an accumulator from Sum into 16 bits (the ones'-complement
// sum, not yet inverted).
func Fold(s uint64) uint16 {
	for s>>16 != 0 {
		s = (s & 0xffff) + (s >> 16)
	}
	return uint16(s)
}

// Checksum returns the Internet checksum (RFC 1071) of b: the inverted
// ones'-complement sum. A buffer that holds its own correct checksum has
// Checksum 0.
func Checksum(b []byte) uint16 { return ^Fold(Sum(b, 0)) }

// PseudoSum returns the accumulator of the IPv4 pseudo-header for a TCP or
// UDP checksum: source and destination address, protocol and the transport
// length (header plus payload).
func PseudoSum(src, dst uint32, proto uint8, length uint16) uint64 {
	return uint64(src>>16) + uint64(src&0xffff) + uint64(dst>>16) + uint64(dst&0xffff) +
		uint64(proto) + uint64(length)
}

// Update16 returns checksum csum updated for one 16-bit field changing from
// old to new, by RFC 1624 equation 3: HC' = ~(~HC + ~m + m').
func Update16(csum, old, new uint16) uint16 {
	s := uint64(^csum) + uint64(^old) + uint64(new)
	return ^Fold(s)
}

// Update32 returns checksum csum updated for one 32-bit field (an address or
// a sequence number) changing from old to new, as two 16-bit updates.
func Update32(csum uint16, old, new uint32) uint16 {
	s := uint64(^csum) + uint64(^uint16(old>>16)) + uint64(^uint16(old)) +
		uint64(new>>16) + uint64(new&0xffff)
	return ^Fold(s)
}
