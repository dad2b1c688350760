package stack

import (
	"encoding/binary"

	"github.com/cicada-load/cicada/dataplane/wire"
)

// hdrMax is the longest header a template holds: Ethernet, IPv4 without
// options, TCP with MSS, window scale and SACK-permitted, or with one SACK
// block.
const hdrMax = wire.EthernetLen + wire.IPv4MinLen + 32

// sackLen is the SACK option of one block with its two NOPs.
const sackLen = 12

const (
	offIP  = wire.EthernetLen
	offTCP = offIP + wire.IPv4MinLen
)

// template is a pre-built frame header of one kind (SYN, SYN-ACK, ACK,
// FIN, RST, data) with every field fixed for the stack filled in and the
// per-connection fields (the client's address and port, sequence and
// acknowledgement numbers, lengths) left zero. Its checksums are kept as
// partial sums over the fixed part; emitting a frame adds the sums of the
// variable fields and the payload (RFC 1071's incremental property) instead
// of summing the header again.
type template struct {
	b     [hdrMax]byte
	n     int   // header length
	flags uint8 // TCP flags
	// scaled: the window field holds Window>>WScale, right only on a
	// connection that negotiated window scaling; emit writes unscaled
	// otherwise.
	scaled bool
	win    uint16 // the window field as built
	// sack: the header ends with one SACK block, filled by emit from the
	// record's held range (receive.go).
	sack   bool
	ipSum  uint64 // partial IPv4 header sum
	tcpSum uint64 // partial TCP sum with the fixed pseudo-header part
}

// newTemplate builds a template; the client's address sits at src (client
// mode) or dst (server mode) and is zero here, like its port.
func (s *Stack) newTemplate(flags uint8, syn bool, wscale bool) template {
	return s.newTemplateSACK(flags, syn, wscale, false)
}

// newTemplateSACK is newTemplate, with one SACK block if sack.
func (s *Stack) newTemplateSACK(flags uint8, syn, wscale, sack bool) template {
	var t template
	f := wire.TCPFields{Flags: flags, Window: uint16(min(s.cfg.Window>>s.cfg.WScale, 0xffff))}
	if syn {
		f.HasMSS, f.MSS = true, s.cfg.MSS
		f.Window = uint16(min(s.cfg.Window, 0xffff))
		if wscale {
			f.HasWScale, f.WScale = true, s.cfg.WScale
		}
		// The client offers SACK (RFC 2018) for its held range; the
		// server reads no SACK blocks, so it does not.
		f.SACKPermitted = s.cfg.Mode == Client
	}
	var srcIP, dstIP uint32
	if s.cfg.Mode == Client {
		f.DstPort, dstIP = s.cfg.ServerPort, s.cfg.ServerIP
	} else {
		f.SrcPort, srcIP = s.cfg.ServerPort, s.cfg.ServerIP
	}
	_ = wire.PutEthernet(t.b[:], s.nextHop, s.mac, wire.EtherTypeIPv4)
	hl, _ := wire.PutTCP(t.b[offTCP:], &f)
	if sack {
		o := t.b[offTCP+hl : offTCP+hl+sackLen]
		clear(o)
		o[0], o[1], o[2], o[3] = 1, 1, wire.TCPOptSACK, sackLen-2
		hl += sackLen
		t.b[offTCP+12] = byte(hl/4) << 4
	}
	_ = wire.PutIPv4(t.b[offIP:], wire.IPv4Fields{FlagsFrag: wire.IPv4DontFrag, TTL: 64,
		Protocol: wire.ProtoTCP, Src: srcIP, Dst: dstIP})
	t.b[offIP+10], t.b[offIP+11] = 0, 0
	t.n, t.flags, t.win, t.sack = offTCP+hl, flags, f.Window, sack
	t.scaled = !syn && s.cfg.WScale != 0
	t.ipSum = wire.Sum(t.b[offIP:offTCP], 0)
	t.tcpSum = wire.Sum(t.b[offTCP:t.n], 0) + wire.PseudoSum(srcIP, dstIP, wire.ProtoTCP, 0)
	return t
}

// emit sends one frame from template t for record i with seq, ack and the
// payload (whose Sum is psum). It returns false when no buffer was free
// (counted); the peer's retransmission or ours recovers.
func (s *Stack) emit(t *template, i uint32, seq, ack uint32, payload []byte, psum uint64) bool {
	b := s.buffer()
	if b == nil {
		return false
	}
	n := copy(b, t.b[:t.n])
	n += copy(b[n:], payload)
	ip, port := s.peer(i)
	ipOff, portOff := offIP+12, offTCP
	if s.cfg.Mode == Server {
		ipOff, portOff = offIP+16, offTCP+2
	}
	binary.BigEndian.PutUint32(b[ipOff:], ip)
	binary.BigEndian.PutUint16(b[portOff:], port)
	binary.BigEndian.PutUint32(b[offTCP+4:], seq)
	binary.BigEndian.PutUint32(b[offTCP+8:], ack)
	tl := uint16(n - offIP)
	binary.BigEndian.PutUint16(b[offIP+2:], tl)
	ipw := uint64(ip>>16) + uint64(ip&0xffff)
	binary.BigEndian.PutUint16(b[offIP+10:], ^wire.Fold(t.ipSum+ipw+uint64(tl)))
	if t.flags&wire.TCPAck != 0 {
		s.conns[i].flags &^= fAckLater
	}
	v := t.tcpSum
	if t.scaled && s.conns[i].flags&fWScale == 0 {
		binary.BigEndian.PutUint16(b[offTCP+14:], s.unscaledWin)
		v += uint64(s.unscaledWin) + uint64(^t.win)
	}
	if t.sack {
		c := &s.conns[i]
		binary.BigEndian.PutUint32(b[t.n-8:], c.oooSeq)
		binary.BigEndian.PutUint32(b[t.n-4:], c.oooEnd)
		v += uint64(c.oooSeq>>16) + uint64(c.oooSeq&0xffff) + uint64(c.oooEnd>>16) + uint64(c.oooEnd&0xffff)
	}
	v += ipw + uint64(port) + uint64(seq>>16) + uint64(seq&0xffff) +
		uint64(ack>>16) + uint64(ack&0xffff) + uint64(n-offTCP) + psum
	binary.BigEndian.PutUint16(b[offTCP+16:], ^wire.Fold(v))
	s.queue(b[:n])
	s.ctr.count(t.flags)
	return true
}

// buildTemplates (re)builds every template, after the next hop's MAC is
// known or changes.
func (s *Stack) buildTemplates() {
	s.tSyn = s.newTemplate(wire.TCPSyn, true, s.cfg.WScale != 0)
	s.tSynAck = s.newTemplate(wire.TCPSyn|wire.TCPAck, true, false)
	s.tSynAckWS = s.newTemplate(wire.TCPSyn|wire.TCPAck, true, true)
	s.tAck = s.newTemplate(wire.TCPAck, false, false)
	s.tAckSACK = s.newTemplateSACK(wire.TCPAck, false, false, true)
	s.tFin = s.newTemplate(wire.TCPFin|wire.TCPAck, false, false)
	s.tRst = s.newTemplate(wire.TCPRst|wire.TCPAck, false, false)
	s.tRstNoAck = s.newTemplate(wire.TCPRst, false, false)
	s.tData = s.newTemplate(wire.TCPAck|wire.TCPPsh, false, false)
}
