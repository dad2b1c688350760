package stack

import (
	"encoding/binary"
	"fmt"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// Stack is one userspace TCP/IPv4 stack instance over one link: the
// connection table, its timer lists, the frame templates and the counters.
// It is driven by one goroutine (run to completion: Poll, Launch) and is not
// safe for concurrent use; an engine runs one Stack per core.
type Stack struct {
	cfg    Config
	link   link.Link
	mac    wire.MAC
	nPorts uint32

	conns  []conn
	timers [nLists]timerList
	wheel  wheel
	now    int64  // the clock of the current call (Poll, LaunchClass, ...)
	cursor uint32 // client: next record Launch tries
	issNxt uint32

	nextHopIP uint32
	nextHop   wire.MAC
	resolved  bool
	arpAt     int64

	tSyn, tSynAck, tSynAckWS, tAck, tFin, tRst, tData template
	tRstNoAck                                         template  // RST alone (SYN-SENT answer)
	tAckSACK                                          template  // client: ACK with the held range as a SACK block
	unscaledWin                                       uint16    // window field without scaling
	pages                                             [2][]byte // server: 200 page, 405 page

	// Server objects (objects.go): the body pattern, a segment's scratch,
	// the last object's headers (for size objHeadFor-1), the page's
	// header length.
	pattern, scratch, objHead []byte
	objHeadFor, pageHead      uint32

	rx   [][]byte
	tx   [][]byte
	acks []uint32 // records owing an ACK at the end of this burst
	ctr  Counters

	// Users (client with a Program).
	reqs    []progRequest
	classes []progClass
	rows    []StatsRow // per stats row accumulations since TakeStats
	rng     uint64     // xorshift64 state
	// The second round's queue of users ready to send (record index + 1,
	// 0 when empty) and its requests in flight, at most
	// Config.SecondRoundWindow.
	rqHead, rqTail uint32
	roundInFlight  int
	// wheelFn, set by tests, replaces the users' handler of wheel timers.
	wheelFn func(i uint32, now int64)
	// onTaskEnd is SetOnTaskEnd's callback (wake.go).
	onTaskEnd func(rec uint32, now int64, ok bool)
}

// New returns a Stack for cfg, with its table of ClientIPs x ports records
// allocated up front, or an error wrapping ErrConfig.
func New(cfg Config) (*Stack, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Stack{cfg: cfg, link: cfg.Link, mac: cfg.Link.MAC(),
		nPorts: uint32(cfg.PortMax-cfg.PortMin) + 1, issNxt: 0x1000,
		rx: make([][]byte, cfg.Burst), tx: make([][]byte, 0, cfg.Burst), acks: make([]uint32, 0, cfg.Burst)}
	s.conns = make([]conn, uint64(cfg.ClientIPs)*uint64(s.nPorts))
	for i := range s.conns {
		s.conns[i].next, s.conns[i].prev = none, none
	}
	s.unscaledWin = uint16(min(cfg.Window, 0xffff))
	s.nextHopIP = cfg.Gateway
	if cfg.Mode == Client {
		if s.nextHopIP == 0 {
			s.nextHopIP = cfg.ServerIP
		}
	} else {
		page := serverResponse(cfg.BodySize)
		if cfg.Chunked {
			page = chunkedResponse(cfg.BodySize)
		}
		s.pages = [2][]byte{page, badMethodResponse}
		s.initObjects()
	}
	if cfg.Mode == Client {
		if cfg.Program != nil {
			var err error
			if s.reqs, s.classes, err = compileProgram(cfg.Program, cfg.MSS); err != nil {
				return nil, fmt.Errorf("stack: Program: %w: %w", err, ErrConfig)
			}
			s.rows = make([]StatsRow, cfg.Program.Stats())
		} else {
			s.reqs = []progRequest{{raw: cfg.Request, sum: wire.Sum(cfg.Request, 0), head: isHead(cfg.Request)}}
			s.rows = make([]StatsRow, 1)
		}
	}
	s.rng = 0x9e3779b97f4a7c15
	s.initTimers()
	s.buildTemplates()
	return s, nil
}

// Conns returns the number of records in the table.
func (s *Stack) Conns() int { return len(s.conns) }

// Counters returns a copy of the counters.
func (s *Stack) Counters() Counters { return s.ctr }

// Resolved reports whether the next hop's MAC is known.
func (s *Stack) Resolved() bool { return s.resolved }

// peer returns the client address and port of record i.
func (s *Stack) peer(i uint32) (uint32, uint16) {
	return s.cfg.ClientIP + i/s.nPorts, s.cfg.PortMin + uint16(i%s.nPorts)
}

// index returns the record of a client address and port, by arithmetic.
func (s *Stack) index(ip uint32, port uint16) (uint32, bool) {
	ipIdx, p := ip-s.cfg.ClientIP, uint32(port-s.cfg.PortMin)
	if ipIdx >= uint32(s.cfg.ClientIPs) || port < s.cfg.PortMin || p >= s.nPorts {
		return 0, false
	}
	return ipIdx*s.nPorts + p, true
}

// owns reports whether the stack answers for ip.
func (s *Stack) owns(ip uint32) bool {
	if s.cfg.Mode == Client {
		return ip-s.cfg.ClientIP < uint32(s.cfg.ClientIPs)
	}
	return ip == s.cfg.ServerIP
}

// Poll runs one turn of the loop at now (nanoseconds on the caller's
// monotonic clock, never going back): a receive burst and its processing,
// due timers, ARP for an unresolved next hop, and the transmit flush. It
// returns how many frames it received.
func (s *Stack) Poll(now int64) int {
	s.now = now
	n := s.link.Receive(s.rx)
	for _, f := range s.rx[:n] {
		s.input(f, now)
	}
	s.flushAcks()
	s.expire(now)
	s.releaseRound(now)
	if !s.resolved && s.nextHopIP != 0 && now >= s.arpAt {
		s.arpAt = now + int64(s.cfg.ARPInterval)
		s.arpRequest()
	}
	s.flush()
	return n
}

// ackLater defers the ACK of in-order data of record i to the end of the
// receive burst, so that one ACK covers every segment of the burst (dperf
// batches ACKs the same way); any segment sent for i before then carries
// the ACK instead.
func (s *Stack) ackLater(i uint32) {
	c := &s.conns[i]
	if c.flags&fAckLater != 0 {
		return
	}
	if len(s.acks) == cap(s.acks) {
		s.emit(s.ackT(c), i, c.sndNxt, c.rcvNxt, nil, 0)
		return
	}
	c.flags |= fAckLater
	s.acks = append(s.acks, i)
}

// flushAcks sends the ACKs deferred during the burst that no other segment
// carried.
func (s *Stack) flushAcks() {
	for _, i := range s.acks {
		if c := &s.conns[i]; c.flags&fAckLater != 0 && c.state != stClosed {
			s.emit(s.ackT(c), i, c.sndNxt, c.rcvNxt, nil, 0)
		}
	}
	s.acks = s.acks[:0]
}

func (s *Stack) buffer() []byte {
	b := s.link.Buffer()
	if b == nil {
		s.flush()
		if b = s.link.Buffer(); b == nil {
			s.ctr.DropNoTxBuffer++
			return nil
		}
	}
	return b
}

func (s *Stack) queue(f []byte) {
	s.ctr.PktsOut++
	s.ctr.BytesOut += uint64(len(f))
	s.tx = append(s.tx, f)
	if len(s.tx) == cap(s.tx) {
		s.flush()
	}
}

func (s *Stack) flush() {
	if len(s.tx) == 0 {
		return
	}
	n := s.link.Transmit(s.tx)
	s.ctr.DropTxRefused += uint64(len(s.tx) - n)
	clear(s.tx)
	s.tx = s.tx[:0]
}

func (s *Stack) setNextHop(m wire.MAC) {
	if s.resolved && m == s.nextHop {
		return
	}
	s.nextHop, s.resolved = m, true
	s.buildTemplates()
}

func (s *Stack) input(f []byte, now int64) {
	s.ctr.PktsIn++
	s.ctr.BytesIn += uint64(len(f))
	e, err := wire.ParseEthernet(f)
	if err != nil {
		s.ctr.DropMalformed++
		return
	}
	if d := e.Dst(); d != s.mac && d != wire.Broadcast {
		s.ctr.DropNotForUs++
		return
	}
	switch e.Type() {
	case wire.EtherTypeARP:
		s.arpInput(e.Payload())
	case wire.EtherTypeIPv4:
		s.ipInput(e, now)
	default:
		s.ctr.DropEtherType++
	}
}

func (s *Stack) ipInput(e wire.Ethernet, now int64) {
	p, err := wire.ParseIPv4(e.Payload())
	if err != nil {
		s.ctr.DropMalformed++
		return
	}
	if !p.ChecksumValid() {
		s.ctr.DropChecksum++
		return
	}
	if p.IsFragment() {
		s.ctr.DropFragment++
		return
	}
	if !s.owns(p.Dst()) {
		s.ctr.DropNotForUs++
		return
	}
	switch p.Protocol() {
	case wire.ProtoTCP:
		s.tcpInput(e, p, now)
	case wire.ProtoICMP:
		s.icmpInput(e, p)
	default:
		s.ctr.DropProtocol++
	}
}

func (s *Stack) tcpInput(e wire.Ethernet, p wire.IPv4, now int64) {
	seg, err := wire.ParseTCP(p.Payload())
	if err != nil {
		s.ctr.DropMalformed++
		return
	}
	if !seg.ChecksumValid(p.Src(), p.Dst()) {
		s.ctr.DropChecksum++
		return
	}
	fl := seg.Flags()
	if fl&wire.TCPSyn != 0 {
		s.ctr.SynIn++
	}
	if fl&wire.TCPFin != 0 {
		s.ctr.FinIn++
	}
	if fl&wire.TCPRst != 0 {
		s.ctr.RstIn++
	}
	if s.cfg.Mode == Client {
		if p.Src() != s.cfg.ServerIP || seg.SrcPort() != s.cfg.ServerPort {
			s.ctr.DropNoSocket++
			return
		}
		i, ok := s.index(p.Dst(), seg.DstPort())
		if !ok {
			s.ctr.DropNoSocket++
			return
		}
		s.clientInput(i, seg, now)
		return
	}
	i, ok := s.index(p.Src(), seg.SrcPort())
	if !ok || seg.DstPort() != s.cfg.ServerPort {
		s.ctr.DropNoSocket++
		return
	}
	if !s.resolved && s.cfg.Gateway == 0 {
		s.setNextHop(e.Src())
	}
	s.serverInput(i, seg, now)
}

func (s *Stack) arpInput(b []byte) {
	a, err := wire.ParseARP(b)
	if err != nil {
		s.ctr.DropMalformed++
		return
	}
	s.ctr.ARPIn++
	sip := a.SenderIP()
	if s.nextHopIP != 0 && sip == s.nextHopIP {
		s.setNextHop(a.SenderMAC())
	}
	if a.Op() != wire.ARPRequest || !s.owns(a.TargetIP()) {
		return
	}
	f := s.buffer()
	if f == nil {
		return
	}
	_ = wire.PutEthernet(f, a.SenderMAC(), s.mac, wire.EtherTypeARP)
	_ = wire.PutARP(f[wire.EthernetLen:], wire.ARPFields{Op: wire.ARPReply, SenderMAC: s.mac,
		SenderIP: a.TargetIP(), TargetMAC: a.SenderMAC(), TargetIP: sip})
	s.ctr.ARPOut++
	s.queue(f[:wire.EthernetLen+wire.ARPLen])
}

// arpRequest asks for the next hop from the stack's first own address.
func (s *Stack) arpRequest() {
	f := s.buffer()
	if f == nil {
		return
	}
	src := s.cfg.ServerIP
	if s.cfg.Mode == Client {
		src = s.cfg.ClientIP
	}
	_ = wire.PutEthernet(f, wire.Broadcast, s.mac, wire.EtherTypeARP)
	_ = wire.PutARP(f[wire.EthernetLen:], wire.ARPFields{Op: wire.ARPRequest, SenderMAC: s.mac,
		SenderIP: src, TargetIP: s.nextHopIP})
	s.ctr.ARPOut++
	s.queue(f[:wire.EthernetLen+wire.ARPLen])
}

// icmpInput answers an echo request with the same frame turned around.
func (s *Stack) icmpInput(e wire.Ethernet, p wire.IPv4) {
	m, err := wire.ParseICMP(p.Payload())
	if err != nil {
		s.ctr.DropMalformed++
		return
	}
	if wire.Checksum(m) != 0 {
		s.ctr.DropChecksum++
		return
	}
	s.ctr.ICMPIn++
	if m.Type() != wire.ICMPEchoRequest || m.Code() != 0 {
		s.ctr.DropICMPType++
		return
	}
	n := wire.EthernetLen + len(p)
	if n > s.link.FrameSize() {
		s.ctr.DropMalformed++
		return
	}
	f := s.buffer()
	if f == nil {
		return
	}
	copy(f, e[:n])
	src := e.Src()
	copy(f[0:6], src[:])
	copy(f[6:12], s.mac[:])
	ip := f[wire.EthernetLen:n]
	copy(ip[12:16], p[16:20])
	copy(ip[16:20], p[12:16])
	oldTTL := binary.BigEndian.Uint16(ip[8:10])
	ip[8] = 64
	binary.BigEndian.PutUint16(ip[10:12], wire.Update16(binary.BigEndian.Uint16(ip[10:12]), oldTTL, binary.BigEndian.Uint16(ip[8:10])))
	wire.ICMP(ip[int(ip[0]&0xf)*4:]).EchoToReply()
	s.ctr.ICMPOut++
	s.queue(f[:n])
}
