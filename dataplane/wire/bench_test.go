package wire

import "testing"

func BenchmarkChecksum1460(b *testing.B) {
	buf := make([]byte, 1460)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		_ = Checksum(buf)
	}
}

func BenchmarkParseTCPFrame(b *testing.B) {
	buf := make([]byte, 14+20+28)
	_ = PutEthernet(buf, Broadcast, MAC{2}, EtherTypeIPv4)
	_ = PutIPv4(buf[14:], IPv4Fields{TotalLen: 48, TTL: 64, Protocol: ProtoTCP, Src: 1, Dst: 2})
	_, _ = PutTCP(buf[34:], &TCPFields{HasMSS: true, MSS: 1460, HasWScale: true, WScale: 2})
	b.ReportAllocs()
	for b.Loop() {
		e, _ := ParseEthernet(buf)
		p, _ := ParseIPv4(e.Payload())
		s, _ := ParseTCP(p.Payload())
		_, _ = ParseTCPOptions(s.Options())
	}
}

func BenchmarkBuildSYN(b *testing.B) {
	buf := make([]byte, 28)
	f := TCPFields{SrcPort: 1, DstPort: 80, Flags: TCPSyn, HasMSS: true, MSS: 1460, HasWScale: true, WScale: 7}
	b.ReportAllocs()
	for b.Loop() {
		f.Seq++
		_, _ = PutTCP(buf, &f)
		SetTCPChecksum(buf, 1, 2)
	}
}
