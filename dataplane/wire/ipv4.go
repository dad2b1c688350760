package wire

import (
	"encoding/binary"
	"fmt"
)

// IPv4 constants: minimum header length, protocols, flags.
const (
	IPv4MinLen    = 20
	ProtoICMP     = 1
	ProtoTCP      = 6
	IPv4DontFrag  = 0x4000
	IPv4MoreFrags = 0x2000
	ipv4OffMask   = 0x1fff
)

// IPv4 is a view of an IPv4 packet, trimmed to its total length.
type IPv4 []byte

// ParseIPv4 checks version 4, a header length of at least 20 bytes that fits
// in b, and a total length between the header length and len(b); it returns
// the view trimmed to the total length (Ethernet padding dropped). Options
// are kept inside the header and skipped by Payload. The header checksum is
// not checked here (see IPv4.ChecksumValid).
func ParseIPv4(b []byte) (IPv4, error) {
	if len(b) < IPv4MinLen {
		return nil, fmt.Errorf("ipv4: %d bytes: %w", len(b), ErrShort)
	}
	if b[0]>>4 != 4 {
		return nil, fmt.Errorf("ipv4: version %d: %w", b[0]>>4, ErrMalformed)
	}
	hl := int(b[0]&0xf) * 4
	if hl < IPv4MinLen {
		return nil, fmt.Errorf("ipv4: header length %d: %w", hl, ErrMalformed)
	}
	tl := int(binary.BigEndian.Uint16(b[2:4]))
	if tl < hl {
		return nil, fmt.Errorf("ipv4: total length %d below header length %d: %w", tl, hl, ErrMalformed)
	}
	if tl > len(b) {
		return nil, fmt.Errorf("ipv4: total length %d in %d bytes: %w", tl, len(b), ErrShort)
	}
	return IPv4(b[:tl]), nil
}

// HeaderLen returns the header length in bytes, options included.
func (p IPv4) HeaderLen() int { return int(p[0]&0xf) * 4 }

// TotalLen returns the total length field.
func (p IPv4) TotalLen() uint16 { return binary.BigEndian.Uint16(p[2:4]) }

// ID returns the identification field.
func (p IPv4) ID() uint16 { return binary.BigEndian.Uint16(p[4:6]) }

// FlagsFrag returns the flags and fragment offset field.
func (p IPv4) FlagsFrag() uint16 { return binary.BigEndian.Uint16(p[6:8]) }

// IsFragment reports whether p is a fragment (more-fragments set or a
// non-zero offset).
func (p IPv4) IsFragment() bool {
	ff := p.FlagsFrag()
	return ff&IPv4MoreFrags != 0 || ff&ipv4OffMask != 0
}

// TTL returns the time to live.
func (p IPv4) TTL() uint8 { return p[8] }

// Protocol returns the protocol field.
func (p IPv4) Protocol() uint8 { return p[9] }

// HeaderChecksum returns the checksum field.
func (p IPv4) HeaderChecksum() uint16 { return binary.BigEndian.Uint16(p[10:12]) }

// Src returns the source address.
func (p IPv4) Src() uint32 { return binary.BigEndian.Uint32(p[12:16]) }

// Dst returns the destination address.
func (p IPv4) Dst() uint32 { return binary.BigEndian.Uint32(p[16:20]) }

// ChecksumValid reports whether the header checksum is right.
func (p IPv4) ChecksumValid() bool { return Checksum(p[:p.HeaderLen()]) == 0 }

// Payload returns the bytes after the header (options skipped).
func (p IPv4) Payload() []byte { return p[p.HeaderLen():] }

// IPv4Fields are the fields of an option-less IPv4 header that PutIPv4
// writes.
type IPv4Fields struct {
	TotalLen  uint16
	ID        uint16
	FlagsFrag uint16
	TTL       uint8
	Protocol  uint8
	Src, Dst  uint32
}

// PutIPv4 writes a 20-byte IPv4 header without options, checksum included,
// into b.
func PutIPv4(b []byte, f IPv4Fields) error {
	if len(b) < IPv4MinLen {
		return fmt.Errorf("ipv4: %d bytes: %w", len(b), ErrShort)
	}
	b[0], b[1] = 0x45, 0
	binary.BigEndian.PutUint16(b[2:4], f.TotalLen)
	binary.BigEndian.PutUint16(b[4:6], f.ID)
	binary.BigEndian.PutUint16(b[6:8], f.FlagsFrag)
	b[8], b[9] = f.TTL, f.Protocol
	b[10], b[11] = 0, 0
	binary.BigEndian.PutUint32(b[12:16], f.Src)
	binary.BigEndian.PutUint32(b[16:20], f.Dst)
	binary.BigEndian.PutUint16(b[10:12], Checksum(b[:IPv4MinLen]))
	return nil
}

// Fields returns the header fields PutIPv4 writes.
func (p IPv4) Fields() IPv4Fields {
	return IPv4Fields{TotalLen: p.TotalLen(), ID: p.ID(), FlagsFrag: p.FlagsFrag(), TTL: p.TTL(),
		Protocol: p.Protocol(), Src: p.Src(), Dst: p.Dst()}
}
