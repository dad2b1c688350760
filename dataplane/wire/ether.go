package wire

import (
	"encoding/binary"
	"fmt"
)

// MAC is an Ethernet hardware address.
type MAC [6]byte

// Broadcast is the Ethernet broadcast address.
var Broadcast = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// String returns the address as six colon-separated hex bytes.
func (m MAC) String() string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// Ethernet II header length and the EtherTypes this package knows.
const (
	EthernetLen   = 14
	EtherTypeIPv4 = 0x0800
	EtherTypeARP  = 0x0806
)

// Ethernet is a view of an Ethernet II frame (header then payload).
type Ethernet []byte

// ParseEthernet returns b as an Ethernet view, or ErrShort when b cannot
// hold the 14-byte header.
func ParseEthernet(b []byte) (Ethernet, error) {
	if len(b) < EthernetLen {
		return nil, fmt.Errorf("ethernet: %d bytes: %w", len(b), ErrShort)
	}
	return Ethernet(b), nil
}

// Dst returns the destination address.
func (e Ethernet) Dst() (m MAC) { copy(m[:], e[0:6]); return m }

// Src returns the source address.
func (e Ethernet) Src() (m MAC) { copy(m[:], e[6:12]); return m }

// Type returns the EtherType.
func (e Ethernet) Type() uint16 { return binary.BigEndian.Uint16(e[12:14]) }

// Payload returns the bytes after the header.
func (e Ethernet) Payload() []byte { return e[EthernetLen:] }

// PutEthernet writes an Ethernet header into b (at least EthernetLen bytes).
func PutEthernet(b []byte, dst, src MAC, typ uint16) error {
	if len(b) < EthernetLen {
		return fmt.Errorf("ethernet: %d bytes: %w", len(b), ErrShort)
	}
	copy(b[0:6], dst[:])
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:14], typ)
	return nil
}
