package wire

import (
	"encoding/binary"
	"fmt"
)

// TCP header constants and flags.
const (
	TCPMinLen = 20
	TCPFin    = 0x01
	TCPSyn    = 0x02
	TCPRst    = 0x04
	TCPPsh    = 0x08
	TCPAck    = 0x10
	TCPUrg    = 0x20

	tcpOptEnd    = 0
	tcpOptNop    = 1
	tcpOptMSS    = 2
	tcpOptWScale = 3
	tcpOptSACKOK = 4
	// TCPOptSACK is the SACK option's kind (RFC 2018).
	TCPOptSACK = 5
	// MaxWindowScale is the largest shift RFC 7323 allows.
	MaxWindowScale = 14
)

// TCP is a view of a TCP segment (header, options and payload).
type TCP []byte

// ParseTCP checks a data offset of at least 5 words that fits in b and
// returns b as a TCP view. The checksum is not checked here (see
// TCP.ChecksumValid).
func ParseTCP(b []byte) (TCP, error) {
	if len(b) < TCPMinLen {
		return nil, fmt.Errorf("tcp: %d bytes: %w", len(b), ErrShort)
	}
	hl := int(b[12]>>4) * 4
	if hl < TCPMinLen {
		return nil, fmt.Errorf("tcp: data offset %d: %w", hl, ErrMalformed)
	}
	if hl > len(b) {
		return nil, fmt.Errorf("tcp: data offset %d in %d bytes: %w", hl, len(b), ErrShort)
	}
	return TCP(b), nil
}

// SrcPort returns the source port.
func (t TCP) SrcPort() uint16 { return binary.BigEndian.Uint16(t[0:2]) }

// DstPort returns the destination port.
func (t TCP) DstPort() uint16 { return binary.BigEndian.Uint16(t[2:4]) }

// Seq returns the sequence number.
func (t TCP) Seq() uint32 { return binary.BigEndian.Uint32(t[4:8]) }

// Ack returns the acknowledgement number.
func (t TCP) Ack() uint32 { return binary.BigEndian.Uint32(t[8:12]) }

// HeaderLen returns the header length, options included.
func (t TCP) HeaderLen() int { return int(t[12]>>4) * 4 }

// Flags returns the flag bits (TCPFin ... TCPUrg).
func (t TCP) Flags() uint8 { return t[13] }

// Window returns the raw (unscaled) window field.
func (t TCP) Window() uint16 { return binary.BigEndian.Uint16(t[14:16]) }

// Checksum returns the checksum field.
func (t TCP) Checksum() uint16 { return binary.BigEndian.Uint16(t[16:18]) }

// Options returns the option bytes.
func (t TCP) Options() []byte { return t[TCPMinLen:t.HeaderLen()] }

// Payload returns the bytes after the header.
func (t TCP) Payload() []byte { return t[t.HeaderLen():] }

// ChecksumValid reports whether the checksum is right for the segment sent
// from src to dst.
func (t TCP) ChecksumValid(src, dst uint32) bool {
	return ^Fold(Sum(t, uint32(Fold(PseudoSum(src, dst, ProtoTCP, uint16(len(t))))))) == 0
}

// TCPOptions are the options this package reads from a SYN; a zero MSS or
// a false HasWScale means the option was absent.
type TCPOptions struct {
	MSS       uint16
	WScale    uint8
	HasWScale bool
	// SACKPermitted: the SACK-permitted option (RFC 2018) was present.
	SACKPermitted bool
}

// ParseTCPOptions walks the option bytes of a segment. It reads MSS, window
// scale (a shift above 14 is clamped to 14, as RFC 7323 says) and
// SACK-permitted, skips every other option by its length (SACK blocks,
// timestamps, unknown ones) and refuses an option whose length is below 2
// or runs past the end.
func ParseTCPOptions(b []byte) (TCPOptions, error) {
	var o TCPOptions
	for i := 0; i < len(b); {
		switch b[i] {
		case tcpOptEnd:
			return o, nil
		case tcpOptNop:
			i++
			continue
		}
		if i+1 >= len(b) {
			return o, fmt.Errorf("tcp: option %d without length: %w", b[i], ErrMalformed)
		}
		l := int(b[i+1])
		if l < 2 || i+l > len(b) {
			return o, fmt.Errorf("tcp: option %d length %d: %w", b[i], l, ErrMalformed)
		}
		switch {
		case b[i] == tcpOptMSS && l == 4:
			o.MSS = binary.BigEndian.Uint16(b[i+2:])
		case b[i] == tcpOptWScale && l == 3:
			o.WScale, o.HasWScale = min(b[i+2], MaxWindowScale), true
		case b[i] == tcpOptSACKOK && l == 2:
			o.SACKPermitted = true
		}
		i += l
	}
	return o, nil
}

// TCPFields are the fields PutTCP writes. MSS and WScale are written as
// options when HasMSS / HasWScale are set (MSS 4 bytes, then NOP and window
// scale 3 bytes, then NOP, NOP and SACK-permitted), giving a header of 20
// to 32 bytes.
type TCPFields struct {
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            uint8
	Window           uint16
	HasMSS           bool
	MSS              uint16
	HasWScale        bool
	WScale           uint8
	// SACKPermitted writes NOP, NOP, SACK-permitted (4 bytes) last.
	SACKPermitted bool
}

// TCPHeaderLen returns the header length PutTCP writes for f.
func TCPHeaderLen(f *TCPFields) int {
	n := TCPMinLen
	if f.HasMSS {
		n += 4
	}
	if f.HasWScale {
		n += 4
	}
	if f.SACKPermitted {
		n += 4
	}
	return n
}

// PutTCP writes the header of f into b with the checksum field zero and
// returns the header length. The caller appends the payload and fills the
// checksum (see SetTCPChecksum).
func PutTCP(b []byte, f *TCPFields) (int, error) {
	n := TCPHeaderLen(f)
	if len(b) < n {
		return 0, fmt.Errorf("tcp: %d bytes for a %d-byte header: %w", len(b), n, ErrShort)
	}
	binary.BigEndian.PutUint16(b[0:2], f.SrcPort)
	binary.BigEndian.PutUint16(b[2:4], f.DstPort)
	binary.BigEndian.PutUint32(b[4:8], f.Seq)
	binary.BigEndian.PutUint32(b[8:12], f.Ack)
	b[12] = byte(n/4) << 4
	b[13] = f.Flags
	binary.BigEndian.PutUint16(b[14:16], f.Window)
	b[16], b[17], b[18], b[19] = 0, 0, 0, 0
	o := b[TCPMinLen:n]
	if f.HasMSS {
		o[0], o[1] = tcpOptMSS, 4
		binary.BigEndian.PutUint16(o[2:4], f.MSS)
		o = o[4:]
	}
	if f.HasWScale {
		o[0], o[1], o[2], o[3] = tcpOptNop, tcpOptWScale, 3, f.WScale
		o = o[4:]
	}
	if f.SACKPermitted {
		o[0], o[1], o[2], o[3] = tcpOptNop, tcpOptNop, tcpOptSACKOK, 2
	}
	return n, nil
}

// SetTCPChecksum computes and stores the checksum of the whole segment t
// (header and payload) sent from src to dst.
func SetTCPChecksum(t []byte, src, dst uint32) {
	t[16], t[17] = 0, 0
	binary.BigEndian.PutUint16(t[16:18], ^Fold(Sum(t, uint32(Fold(PseudoSum(src, dst, ProtoTCP, uint16(len(t))))))))
}

// Fields returns the fields PutTCP writes, options read by
// ParseTCPOptions (an unparsable option list yields no options).
func (t TCP) Fields() TCPFields {
	o, _ := ParseTCPOptions(t.Options())
	return TCPFields{SrcPort: t.SrcPort(), DstPort: t.DstPort(), Seq: t.Seq(), Ack: t.Ack(),
		Flags: t.Flags(), Window: t.Window(), HasMSS: o.MSS != 0, MSS: o.MSS,
		HasWScale: o.HasWScale, WScale: o.WScale, SACKPermitted: o.SACKPermitted}
}
