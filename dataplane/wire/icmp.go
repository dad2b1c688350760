package wire

import (
	"encoding/binary"
	"fmt"
)

// ICMP echo constants.
const (
	ICMPEchoLen     = 8
	ICMPEchoReply   = 0
	ICMPEchoRequest = 8
)

// ICMP is a view of an ICMP message (header and data).
type ICMP []byte

// ParseICMP returns b as an ICMP view, or ErrShort when it cannot hold the
// 8-byte echo header.
func ParseICMP(b []byte) (ICMP, error) {
	if len(b) < ICMPEchoLen {
		return nil, fmt.Errorf("icmp: %d bytes: %w", len(b), ErrShort)
	}
	return ICMP(b), nil
}

// Type returns the message type.
func (m ICMP) Type() uint8 { return m[0] }

// Code returns the message code.
func (m ICMP) Code() uint8 { return m[1] }

// Checksum returns the checksum field.
func (m ICMP) Checksum() uint16 { return binary.BigEndian.Uint16(m[2:4]) }

// ID returns the echo identifier.
func (m ICMP) ID() uint16 { return binary.BigEndian.Uint16(m[4:6]) }

// Seq returns the echo sequence number.
func (m ICMP) Seq() uint16 { return binary.BigEndian.Uint16(m[6:8]) }

// Data returns the echo data.
func (m ICMP) Data() []byte { return m[ICMPEchoLen:] }

// PutICMPEcho writes an echo header of type typ over b, whose bytes from
// offset 8 on already hold the data, and computes the checksum over all of
// b.
func PutICMPEcho(b []byte, typ uint8, id, seq uint16) error {
	if len(b) < ICMPEchoLen {
		return fmt.Errorf("icmp: %d bytes: %w", len(b), ErrShort)
	}
	b[0], b[1], b[2], b[3] = typ, 0, 0, 0
	binary.BigEndian.PutUint16(b[4:6], id)
	binary.BigEndian.PutUint16(b[6:8], seq)
	binary.BigEndian.PutUint16(b[2:4], Checksum(b))
	return nil
}

// EchoToReply turns an echo request in place into its reply: the type
// becomes ICMPEchoReply and the checksum is updated by RFC 1624 for the one
// changed word.
func (m ICMP) EchoToReply() {
	old := binary.BigEndian.Uint16(m[0:2])
	m[0] = ICMPEchoReply
	binary.BigEndian.PutUint16(m[2:4], Update16(m.Checksum(), old, binary.BigEndian.Uint16(m[0:2])))
}
