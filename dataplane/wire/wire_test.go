package wire

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestChecksum(t *testing.T) {
	// RFC 1071 section 3 example: words 0001 f203 f4f5 f6f7 sum to ddf2.
	tests := []struct {
		name string
		in   []byte
		want uint16
	}{
		{"rfc1071", []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, ^uint16(0xddf2)},
		{"odd", []byte{0x01}, ^uint16(0x0100)},
		{"empty", nil, 0xffff},
		{"ten bytes", []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7, 0x00, 0x01}, ^uint16(0xddf3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Checksum(tt.in); got != tt.want {
				t.Errorf("Checksum(% x) = %#04x; want %#04x", tt.in, got, tt.want)
			}
		})
	}
}

func TestUpdateMatchesRecompute(t *testing.T) {
	b := []byte{0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	binary.BigEndian.PutUint16(b[10:], Checksum(b))
	for _, nw := range []uint32{0, 1, 0x0a000002, 0xffffffff, 0xfffe0001} {
		c := append([]byte(nil), b...)
		old := binary.BigEndian.Uint32(c[12:])
		binary.BigEndian.PutUint32(c[12:], nw)
		got := Update32(binary.BigEndian.Uint16(c[10:]), old, nw)
		c[10], c[11] = 0, 0
		want := Checksum(c)
		if !onesEqual(got, want) {
			t.Errorf("Update32(src %#x) = %#04x; want %#04x", nw, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	ipBadVer := make([]byte, 20)
	ipBadVer[0] = 0x65
	ipShortIHL := make([]byte, 20)
	ipShortIHL[0] = 0x44
	ipLong := make([]byte, 20)
	ipLong[0] = 0x45
	binary.BigEndian.PutUint16(ipLong[2:], 60)
	tcpOff := make([]byte, 20)
	tcpOff[12] = 0x40
	tcpPast := make([]byte, 20)
	tcpPast[12] = 0x60
	arpHW := make([]byte, 28)
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"ethernet short", second(ParseEthernet(make([]byte, 13))), ErrShort},
		{"arp short", second(ParseARP(make([]byte, 27))), ErrShort},
		{"arp hardware", second(ParseARP(arpHW)), ErrMalformed},
		{"ipv4 short", second(ParseIPv4(make([]byte, 19))), ErrShort},
		{"ipv4 version", second(ParseIPv4(ipBadVer)), ErrMalformed},
		{"ipv4 ihl", second(ParseIPv4(ipShortIHL)), ErrMalformed},
		{"ipv4 total length", second(ParseIPv4(ipLong)), ErrShort},
		{"icmp short", second(ParseICMP(make([]byte, 7))), ErrShort},
		{"tcp short", second(ParseTCP(make([]byte, 19))), ErrShort},
		{"tcp offset", second(ParseTCP(tcpOff)), ErrMalformed},
		{"tcp offset past end", second(ParseTCP(tcpPast)), ErrShort},
		{"opt no length", second(ParseTCPOptions([]byte{2})), ErrMalformed},
		{"opt length 1", second(ParseTCPOptions([]byte{8, 1, 0})), ErrMalformed},
		{"opt past end", second(ParseTCPOptions([]byte{2, 4, 5})), ErrMalformed},
		{"put tcp short", second(PutTCP(make([]byte, 23), &TCPFields{HasMSS: true})), ErrShort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Errorf("error = %v; want %v", tt.err, tt.want)
			}
		})
	}
}

// onesEqual reports whether a and b are the same ones'-complement number
// (0x0000 and 0xffff are both zero).
func onesEqual(a, b uint16) bool {
	return a == b || a == 0 && b == 0xffff || a == 0xffff && b == 0
}

func second[T any](_ T, err error) error { return err }

func TestIPv4OptionsSkipped(t *testing.T) {
	b := make([]byte, 28)
	b[0] = 0x46 // 24-byte header: one option word
	binary.BigEndian.PutUint16(b[2:], 26)
	b[20], b[21], b[22], b[23] = 1, 1, 1, 0 // NOPs and EOL
	b[24], b[25] = 0xaa, 0xbb
	p, err := ParseIPv4(b)
	if err != nil {
		t.Fatalf("ParseIPv4 = %v; want nil", err)
	}
	if got := p.Payload(); len(got) != 2 || got[0] != 0xaa {
		t.Errorf("Payload() = % x; want aa bb (options skipped, padding trimmed)", got)
	}
}

func TestTCPOptions(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want TCPOptions
	}{
		{"linux syn", []byte{2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7},
			TCPOptions{MSS: 1460, WScale: 7, HasWScale: true, SACKPermitted: true}},
		{"sack-permitted of a wrong length", []byte{4, 3, 0}, TCPOptions{}},
		{"wscale clamped", []byte{1, 3, 3, 20}, TCPOptions{WScale: 14, HasWScale: true}},
		{"eol stops", []byte{0, 2, 4, 1, 0}, TCPOptions{}},
		{"sack blocks skipped", []byte{5, 10, 0, 0, 0, 0, 0, 0, 0, 0, 2, 4, 0, 100}, TCPOptions{MSS: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTCPOptions(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("ParseTCPOptions(% x) = %+v, %v; want %+v, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestTCPBuildChecksum(t *testing.T) {
	f := TCPFields{SrcPort: 1000, DstPort: 80, Seq: 7, Ack: 9, Flags: TCPSyn, Window: 65535,
		HasMSS: true, MSS: 1460, HasWScale: true, WScale: 7}
	b := make([]byte, 28+5)
	n, err := PutTCP(b, &f)
	if err != nil || n != 28 {
		t.Fatalf("PutTCP = %d, %v; want 28, nil", n, err)
	}
	copy(b[n:], "hello")
	SetTCPChecksum(b, 0x0a000001, 0x0a000002)
	seg, err := ParseTCP(b)
	if err != nil {
		t.Fatalf("ParseTCP = %v", err)
	}
	if !seg.ChecksumValid(0x0a000001, 0x0a000002) {
		t.Errorf("ChecksumValid = false; want true")
	}
	if seg.ChecksumValid(0x0a000001, 0x0a000003) {
		t.Errorf("ChecksumValid(wrong dst) = true; want false")
	}
	if got := seg.Fields(); got != f {
		t.Errorf("Fields() = %+v; want %+v", got, f)
	}
	if string(seg.Payload()) != "hello" {
		t.Errorf("Payload() = %q; want hello", seg.Payload())
	}
}

func TestEchoToReply(t *testing.T) {
	b := make([]byte, 8+6)
	copy(b[8:], "abcdef")
	if err := PutICMPEcho(b, ICMPEchoRequest, 0x1234, 7); err != nil {
		t.Fatal(err)
	}
	m, _ := ParseICMP(b)
	m.EchoToReply()
	if m.Type() != ICMPEchoReply || Checksum(b) != 0 {
		t.Errorf("EchoToReply: type %d checksum-over-all %#x; want 0, 0", m.Type(), Checksum(b))
	}
}

func TestViewsAllocateNothing(t *testing.T) {
	b := make([]byte, 14+20+28)
	_ = PutEthernet(b, Broadcast, MAC{2}, EtherTypeIPv4)
	_ = PutIPv4(b[14:], IPv4Fields{TotalLen: 48, TTL: 64, Protocol: ProtoTCP, Src: 1, Dst: 2})
	f := TCPFields{HasMSS: true, MSS: 1460, HasWScale: true, WScale: 2}
	_, _ = PutTCP(b[34:], &f)
	allocs := testing.AllocsPerRun(100, func() {
		e, _ := ParseEthernet(b)
		p, _ := ParseIPv4(e.Payload())
		s, _ := ParseTCP(p.Payload())
		_, _ = ParseTCPOptions(s.Options())
		_, _ = PutTCP(b[34:], &f)
		SetTCPChecksum(b[34:], 1, 2)
	})
	if allocs != 0 {
		t.Errorf("parse and build allocs = %v; want 0", allocs)
	}
}
