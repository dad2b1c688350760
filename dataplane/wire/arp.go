package wire

import (
	"encoding/binary"
	"fmt"
)

// ARP packet length (Ethernet/IPv4) and operations.
const (
	ARPLen     = 28
	ARPRequest = 1
	ARPReply   = 2
)

// ARP is a view of an ARP packet for IPv4 over Ethernet.
type ARP []byte

// ParseARP returns the first ARPLen bytes of b as an ARP view. It refuses
// anything but hardware type Ethernet (1), protocol IPv4 and address lengths
// 6 and 4.
func ParseARP(b []byte) (ARP, error) {
	if len(b) < ARPLen {
		return nil, fmt.Errorf("arp: %d bytes: %w", len(b), ErrShort)
	}
	if binary.BigEndian.Uint16(b[0:2]) != 1 || binary.BigEndian.Uint16(b[2:4]) != EtherTypeIPv4 ||
		b[4] != 6 || b[5] != 4 {
		return nil, fmt.Errorf("arp: not Ethernet/IPv4: %w", ErrMalformed)
	}
	return ARP(b[:ARPLen]), nil
}

// Op returns the operation (ARPRequest or ARPReply).
func (a ARP) Op() uint16 { return binary.BigEndian.Uint16(a[6:8]) }

// SenderMAC returns the sender hardware address.
func (a ARP) SenderMAC() (m MAC) { copy(m[:], a[8:14]); return m }

// SenderIP returns the sender protocol address.
func (a ARP) SenderIP() uint32 { return binary.BigEndian.Uint32(a[14:18]) }

// TargetMAC returns the target hardware address.
func (a ARP) TargetMAC() (m MAC) { copy(m[:], a[18:24]); return m }

// TargetIP returns the target protocol address.
func (a ARP) TargetIP() uint32 { return binary.BigEndian.Uint32(a[24:28]) }

// ARPFields are the variable fields of an Ethernet/IPv4 ARP packet.
type ARPFields struct {
	Op                   uint16
	SenderMAC, TargetMAC MAC
	SenderIP, TargetIP   uint32
}

// PutARP writes an ARP packet with f into b (at least ARPLen bytes).
func PutARP(b []byte, f ARPFields) error {
	if len(b) < ARPLen {
		return fmt.Errorf("arp: %d bytes: %w", len(b), ErrShort)
	}
	binary.BigEndian.PutUint16(b[0:2], 1)
	binary.BigEndian.PutUint16(b[2:4], EtherTypeIPv4)
	b[4], b[5] = 6, 4
	binary.BigEndian.PutUint16(b[6:8], f.Op)
	copy(b[8:14], f.SenderMAC[:])
	binary.BigEndian.PutUint32(b[14:18], f.SenderIP)
	copy(b[18:24], f.TargetMAC[:])
	binary.BigEndian.PutUint32(b[24:28], f.TargetIP)
	return nil
}

// Fields returns the variable fields of a.
func (a ARP) Fields() ARPFields {
	return ARPFields{Op: a.Op(), SenderMAC: a.SenderMAC(), TargetMAC: a.TargetMAC(),
		SenderIP: a.SenderIP(), TargetIP: a.TargetIP()}
}
