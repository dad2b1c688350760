package wire

import (
	"encoding/binary"
	"testing"
)

func FuzzEthernet(f *testing.F) {
	f.Add(make([]byte, 14))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEthernet(b)
		if err != nil {
			return
		}
		out := make([]byte, EthernetLen)
		_ = PutEthernet(out, e.Dst(), e.Src(), e.Type())
		if string(out) != string(b[:EthernetLen]) {
			t.Errorf("PutEthernet(ParseEthernet(% x)) = % x", b[:EthernetLen], out)
		}
	})
}

func FuzzARP(f *testing.F) {
	b := make([]byte, ARPLen)
	_ = PutARP(b, ARPFields{Op: ARPRequest, SenderIP: 1, TargetIP: 2})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseARP(b)
		if err != nil {
			return
		}
		out := make([]byte, ARPLen)
		_ = PutARP(out, a.Fields())
		if string(out) != string(a) {
			t.Errorf("PutARP(ParseARP(% x)) = % x", []byte(a), out)
		}
	})
}

func FuzzIPv4(f *testing.F) {
	b := make([]byte, 40)
	_ = PutIPv4(b, IPv4Fields{TotalLen: 40, TTL: 64, Protocol: ProtoTCP, Src: 1, Dst: 2})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseIPv4(b)
		if err != nil {
			return
		}
		_, _, _ = p.ChecksumValid(), p.Payload(), p.IsFragment()
		if p.HeaderLen() != IPv4MinLen {
			return
		}
		out := make([]byte, IPv4MinLen)
		_ = PutIPv4(out, p.Fields())
		got, err := ParseIPv4(append(out, p.Payload()...))
		if err != nil || got.Fields() != p.Fields() || !got.ChecksumValid() {
			t.Errorf("ParseIPv4(PutIPv4(%+v)) = %+v, %v", p.Fields(), got.Fields(), err)
		}
	})
}

func FuzzICMP(f *testing.F) {
	f.Add(make([]byte, 16))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseICMP(b)
		if err != nil {
			return
		}
		out := append([]byte(nil), m...)
		_ = PutICMPEcho(out, ICMPEchoRequest, m.ID(), m.Seq())
		r, _ := ParseICMP(out)
		r.EchoToReply()
		if Checksum(out) != 0 && Checksum(out) != 0xffff || r.ID() != m.ID() || r.Seq() != m.Seq() {
			t.Errorf("echo reply of % x = % x: checksum or fields wrong", b, out)
		}
	})
}

func FuzzTCP(f *testing.F) {
	b := make([]byte, 28)
	_, _ = PutTCP(b, &TCPFields{SrcPort: 1, DstPort: 2, Flags: TCPSyn, HasMSS: true, MSS: 1460, HasWScale: true, WScale: 7})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseTCP(b)
		if err != nil {
			return
		}
		_, _ = ParseTCPOptions(s.Options())
		_ = s.ChecksumValid(1, 2)
		fl := s.Fields()
		out := make([]byte, TCPHeaderLen(&fl)+len(s.Payload()))
		n, err := PutTCP(out, &fl)
		if err != nil {
			t.Fatalf("PutTCP(%+v) = %v", fl, err)
		}
		copy(out[n:], s.Payload())
		SetTCPChecksum(out, 1, 2)
		got, err := ParseTCP(out)
		if err != nil || got.Fields() != fl || !got.ChecksumValid(1, 2) || string(got.Payload()) != string(s.Payload()) {
			t.Errorf("ParseTCP(PutTCP(%+v)) = %+v, %v", fl, got.Fields(), err)
		}
	})
}

func FuzzTCPOptions(f *testing.F) {
	f.Add([]byte{2, 4, 5, 0xb4, 1, 3, 3, 7, 4, 2})
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseTCPOptions(b) })
}

// FuzzUpdate32 checks the RFC 1624 update against a full recompute.
func FuzzUpdate32(f *testing.F) {
	f.Add([]byte("0123456789abcdefghij"), uint32(7))
	f.Fuzz(func(t *testing.T, b []byte, nw uint32) {
		if len(b) < 4 {
			return
		}
		c := append([]byte(nil), b...)
		sum := Checksum(c)
		old := binary.BigEndian.Uint32(c)
		binary.BigEndian.PutUint32(c, nw)
		got, want := Update32(sum, old, nw), Checksum(c)
		if !onesEqual(got, want) {
			t.Errorf("Update32(%#x, %#x, %#x) = %#x; want %#x", sum, old, nw, got, want)
		}
	})
}
