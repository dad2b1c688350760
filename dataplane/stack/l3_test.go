package stack

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// rawPeer drives the far end of a pipe by hand.
type rawPeer struct {
	t   *testing.T
	end *pipe.End
}

func (r rawPeer) send(f []byte) {
	b := r.end.Buffer()
	n := copy(b, f)
	r.end.Transmit([][]byte{b[:n]})
}

func (r rawPeer) recv() [][]byte {
	fr := make([][]byte, 16)
	n := r.end.Receive(fr)
	out := make([][]byte, n)
	for i := range out {
		out[i] = append([]byte(nil), fr[i]...)
	}
	return out
}

func arpFrame(src wire.MAC, sip, tip uint32) []byte {
	f := make([]byte, wire.EthernetLen+wire.ARPLen)
	_ = wire.PutEthernet(f, wire.Broadcast, src, wire.EtherTypeARP)
	_ = wire.PutARP(f[wire.EthernetLen:], wire.ARPFields{Op: wire.ARPRequest, SenderMAC: src, SenderIP: sip, TargetIP: tip})
	return f
}

func echoFrame(dst, src wire.MAC, sip, dip uint32, data string) []byte {
	f := make([]byte, wire.EthernetLen+20+8+len(data))
	_ = wire.PutEthernet(f, dst, src, wire.EtherTypeIPv4)
	_ = wire.PutIPv4(f[14:], wire.IPv4Fields{TotalLen: uint16(28 + len(data)), TTL: 9, Protocol: wire.ProtoICMP, Src: sip, Dst: dip})
	copy(f[14+28:], data)
	_ = wire.PutICMPEcho(f[34:], wire.ICMPEchoRequest, 0x77, 3)
	return f
}

func TestARPAndICMP(t *testing.T) {
	a, b, _ := pipe.New(pipe.Config{})
	s, err := New(Config{Mode: Client, Link: a, ClientIP: clientIP, ClientIPs: 4, ServerIP: serverIP})
	if err != nil {
		t.Fatal(err)
	}
	peer := rawPeer{t, b}
	peerIP := uint32(0x0a000063)
	bad := echoFrame(a.MAC(), b.MAC(), peerIP, clientIP+2, "x")
	bad[len(bad)-1] ^= 1
	for _, f := range [][]byte{
		arpFrame(b.MAC(), peerIP, clientIP+3),   // owned: answered
		arpFrame(b.MAC(), peerIP, clientIP+200), // not owned: ignored
		echoFrame(a.MAC(), b.MAC(), peerIP, clientIP+1, "ping data 0123456789"),
		bad,
		echoFrame(a.MAC(), b.MAC(), peerIP, clientIP+100, "not ours"),
	} {
		peer.send(f)
	}
	s.Poll(1)
	got := peer.recv()
	if len(got) != 3 {
		t.Fatalf("frames from the stack = %d; want 3 (ARP reply, echo reply, its own ARP request)", len(got))
	}
	if q, err := wire.ParseARP(got[2][14:]); err != nil || q.Op() != wire.ARPRequest || q.TargetIP() != serverIP || q.SenderIP() != clientIP {
		t.Errorf("first frame = ARP op %d for %#x from %#x; want a request for the server from the first client IP", q.Op(), q.TargetIP(), q.SenderIP())
	}
	rep, err := wire.ParseARP(got[0][14:])
	if err != nil {
		t.Fatalf("ParseARP(first frame) = %v", err)
	}
	if rep.Op() != wire.ARPReply || rep.SenderIP() != clientIP+3 || rep.SenderMAC() != a.MAC() ||
		rep.TargetIP() != peerIP || rep.TargetMAC() != b.MAC() || wire.Ethernet(got[0]).Dst() != b.MAC() {
		t.Errorf("ARP reply = %+v, %v; want the stack's MAC for %#x sent to the asker", rep.Fields(), err, clientIP+3)
	}
	e := wire.Ethernet(got[1])
	ip, err := wire.ParseIPv4(e.Payload())
	if err != nil || !ip.ChecksumValid() || ip.Src() != clientIP+1 || ip.Dst() != peerIP || e.Dst() != b.MAC() {
		t.Fatalf("echo reply IPv4 = %+v, %v, checksum valid %v; want from %#x to %#x", ip.Fields(), err, ip.ChecksumValid(), clientIP+1, peerIP)
	}
	m, _ := wire.ParseICMP(ip.Payload())
	if m.Type() != wire.ICMPEchoReply || wire.Checksum(m) != 0 || m.ID() != 0x77 || m.Seq() != 3 || string(m.Data()) != "ping data 0123456789" {
		t.Errorf("echo reply = type %d id %#x seq %d data %q checksum-ok %v; want type 0, id 0x77, seq 3, same data",
			m.Type(), m.ID(), m.Seq(), m.Data(), wire.Checksum(m) == 0)
	}
	c := s.Counters()
	check(t, "stack", []want{{"ARPIn", c.ARPIn, 2}, {"ARPOut", c.ARPOut, 2}, {"ICMPIn", c.ICMPIn, 1},
		{"ICMPOut", c.ICMPOut, 1}, {"DropChecksum", c.DropChecksum, 1}, {"DropNotForUs", c.DropNotForUs, 1}})
	if s.Resolved() {
		t.Errorf("Resolved() = true; want false (nobody answered for the server)")
	}
}

func TestNonGETGets405(t *testing.T) {
	p := newPair(t, Config{Request: BuildRequest("POST", "/", "h", [][2]string{{"Content-Length", "0"}})}, Config{}, pipe.Config{})
	p.run(t, 1000, p.launcher(1, 1, func() bool { return p.c.Counters().SocketsClosed == 1 && p.s.Counters().SocketsClosed == 1 }))
	c, s := p.c.Counters(), p.s.Counters()
	check(t, "client", []want{{"HTTPOther", c.HTTPOther, 1}, {"HTTP2xx", c.HTTP2xx, 0}})
	check(t, "server", []want{{"Served405", s.Served405, 1}, {"Served200", s.Served200, 0}})
}

// TestPeerMSSHonoured: the server cuts its page at the client's MSS of 536.
func TestPeerMSSHonoured(t *testing.T) {
	const body = 4000
	p := newPair(t, Config{MSS: 536}, Config{BodySize: body}, pipe.Config{})
	p.run(t, 1000, p.launcher(1, 1, func() bool { return p.c.Counters().SocketsClosed == 1 && p.s.Counters().SocketsClosed == 1 }))
	segs := (uint64(len(serverResponse(body))) + 535) / 536
	s := p.s.Counters()
	check(t, "server", []want{{"PktsOut (ARP, SYN-ACK, page segments, FIN)", s.PktsOut, 3 + segs}})
	check(t, "client", []want{{"HTTP2xx", p.c.Counters().HTTP2xx, 1}})
}

func TestThinkTimeRequests(t *testing.T) {
	p := newPair(t, Config{RequestsPerConn: 3, ThinkTime: 50 * 1e6}, Config{}, pipe.Config{})
	p.run(t, 1000, p.launcher(1, 1, func() bool { return p.c.Counters().SocketsClosed == 1 }))
	c := p.c.Counters()
	check(t, "client", []want{{"HTTPRequests", c.HTTPRequests, 3}, {"HTTP2xx", c.HTTP2xx, 3}})
	check(t, "server", []want{{"Served200", p.s.Counters().Served200, 3}, {"SocketsOpened", p.s.Counters().SocketsOpened, 1}})
	if p.now < 100*1e6 {
		t.Errorf("finished at %d ns; want at least two 50 ms think times", p.now)
	}
}

// fixChecksums makes the IPv4 and TCP checksums of b right when it parses
// that far, so that fuzzing reaches the TCP state machines.
func fixChecksums(b []byte) {
	e, err := wire.ParseEthernet(b)
	if err != nil || e.Type() != wire.EtherTypeIPv4 {
		return
	}
	ip, err := wire.ParseIPv4(e.Payload())
	if err != nil {
		return
	}
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint16(ip[10:], wire.Checksum(ip[:ip.HeaderLen()]))
	if ip.Protocol() == wire.ProtoTCP && len(ip.Payload()) >= wire.TCPMinLen {
		wire.SetTCPChecksum(ip.Payload(), ip.Src(), ip.Dst())
	}
}

// FuzzStackFrame feeds random frames to a client and a server stack: no
// panic, and every frame is counted in.
func FuzzStackFrame(f *testing.F) {
	p := newPair(f, Config{}, Config{}, pipe.Config{})
	syn := make([]byte, hdrMax)
	copy(syn, p.c.tSyn.b[:p.c.tSyn.n])
	binary.BigEndian.PutUint16(syn[offIP+2:], uint16(p.c.tSyn.n-offIP))
	f.Add(syn)
	f.Add(arpFrame(wire.MAC{2, 0, 0, 0, 0, 0x0b}, serverIP, clientIP))
	f.Add(echoFrame(wire.MAC{2, 0, 0, 0, 0, 0x0a}, wire.MAC{2}, serverIP, clientIP, "x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fixChecksums(b)
		for _, s := range []*Stack{p.c, p.s} {
			before := s.ctr.PktsIn
			s.input(b, 1)
			s.flush()
			if s.ctr.PktsIn != before+1 {
				t.Fatalf("PktsIn did not count the frame")
			}
		}
		p.ca.Receive(make([][]byte, 64))
		p.sb.Receive(make([][]byte, 64))
	})
}

// TestGatewayResolved: with a gateway set, the client asks ARP for it (not
// for the server), learns its MAC from the reply and sends the SYN there.
func TestGatewayResolved(t *testing.T) {
	const gw = 0x0a0000fe
	a, b, _ := pipe.New(pipe.Config{})
	s, err := New(Config{Mode: Client, Link: a, ClientIP: clientIP, ServerIP: serverIP, Gateway: gw})
	if err != nil {
		t.Fatal(err)
	}
	peer := rawPeer{t, b}
	s.Poll(1)
	got := peer.recv()
	if len(got) != 1 {
		t.Fatalf("frames = %d; want 1 ARP request", len(got))
	}
	if q, err := wire.ParseARP(got[0][14:]); err != nil || q.TargetIP() != gw {
		t.Fatalf("ARP request = %+v, %v; want one for the gateway %#x", q.Fields(), err, gw)
	}
	if n := s.Launch(2, 1); n != 0 {
		t.Errorf("Launch before resolution = %d; want 0", n)
	}
	gwMAC := wire.MAC{2, 0, 0, 0, 0, 0xfe}
	rep := make([]byte, wire.EthernetLen+wire.ARPLen)
	_ = wire.PutEthernet(rep, a.MAC(), gwMAC, wire.EtherTypeARP)
	_ = wire.PutARP(rep[14:], wire.ARPFields{Op: wire.ARPReply, SenderMAC: gwMAC, SenderIP: gw, TargetMAC: a.MAC(), TargetIP: clientIP})
	peer.send(rep)
	s.Poll(3)
	if !s.Resolved() {
		t.Fatalf("Resolved() = false after the gateway's reply; want true")
	}
	if n := s.Launch(4, 1); n != 1 {
		t.Fatalf("Launch = %d; want 1", n)
	}
	got = peer.recv()
	if len(got) != 1 {
		t.Fatalf("frames after Launch = %d; want 1 SYN", len(got))
	}
	e := wire.Ethernet(got[0])
	ip, _ := wire.ParseIPv4(e.Payload())
	seg, _ := wire.ParseTCP(ip.Payload())
	o, _ := wire.ParseTCPOptions(seg.Options())
	if e.Dst() != gwMAC || ip.Dst() != serverIP || !ip.ChecksumValid() || !seg.ChecksumValid(ip.Src(), ip.Dst()) ||
		seg.Flags() != wire.TCPSyn || o.MSS != 1460 {
		t.Errorf("SYN to %v, IP dst %#x, checksums %v/%v, flags %#x, MSS %d; want gateway MAC, server, valid, SYN, 1460",
			e.Dst(), ip.Dst(), ip.ChecksumValid(), seg.ChecksumValid(ip.Src(), ip.Dst()), seg.Flags(), o.MSS)
	}
}

func TestScanRequests(t *testing.T) {
	obj := func(n uint32) uint32 { return kindObject | n }
	tests := []struct {
		name   string
		pieces []string
		want   []uint32 // the descriptors queued
		ok     bool
	}{
		{"one get", []string{"GET / HTTP/1.1\r\nHost: h\r\n\r\n"}, []uint32{kindPage}, true},
		{"split blank line", []string{"GET / HTTP/1.1\r\n\r", "\n"}, []uint32{kindPage}, true},
		{"post then get", []string{"POST / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"}, []uint32{kindBadMth, kindPage}, true},
		{"get then head", []string{"GET / HTTP/1.1\r\n\r\n", "HEAD / HTTP/1.1\r\n\r\n"}, []uint32{kindPage, kindPage | descHead}, true},
		{"incomplete", []string{"GET / HTTP/1.1\r\n"}, nil, true},
		{"gets lowercase", []string{"get / HTTP/1.1\r\n\r\n"}, []uint32{kindBadMth}, true},
		{"GETX", []string{"GETX / HTTP/1.1\r\n\r\n"}, []uint32{kindBadMth}, true},
		{"HEADER", []string{"HEADER /bytes/1 HTTP/1.1\r\n\r\n"}, []uint32{kindBadMth}, true},
		{"post to an object", []string{"POST /bytes/10 HTTP/1.1\r\n\r\n"}, []uint32{kindBadMth}, true},
		{"blank line alone", []string{"\r\n\r\n"}, []uint32{kindBadMth}, true},
		{"object", []string{"GET /bytes/65536 HTTP/1.1\r\n\r\n"}, []uint32{obj(65536)}, true},
		{"object byte by byte", strings.Split("GET /bytes/1234 HTTP/1.1\r\nHost: x\r\n\r\n", ""), []uint32{obj(1234)}, true},
		{"object of 0", []string{"GET /bytes/0 HTTP/1.1\r\n\r\n"}, []uint32{obj(0)}, true},
		{"largest object", []string{"GET /bytes/16777216 HTTP/1.1\r\n\r\n"}, []uint32{obj(MaxObjectSize)}, true},
		{"leading zeros", []string{"GET /bytes/000000007 HTTP/1.1\r\n\r\n"}, []uint32{obj(7)}, true},
		{"head of an object", []string{"HEAD /bytes/99 HTTP/1.1\r\n\r\n"}, []uint32{obj(99) | descHead}, true},
		{"query", []string{"GET /bytes/5?x=1 HTTP/1.1\r\n\r\n"}, []uint32{obj(5)}, true},
		{"no version", []string{"GET /bytes/5\r\n\r\n"}, []uint32{obj(5)}, true},
		{"too large", []string{"GET /bytes/16777217 HTTP/1.1\r\n\r\n"}, []uint32{kindBadReq}, true},
		{"ten digits", []string{"GET /bytes/0000000001 HTTP/1.1\r\n\r\n"}, []uint32{kindBadReq}, true},
		{"huge", []string{"GET /bytes/99999999999999999999999 HTTP/1.1\r\n\r\n"}, []uint32{kindBadReq}, true},
		{"no digits", []string{"GET /bytes/ HTTP/1.1\r\n\r\n"}, []uint32{kindBadReq}, true},
		{"letters", []string{"GET /bytes/1a HTTP/1.1\r\n\r\n"}, []uint32{kindBadReq}, true},
		{"negative", []string{"GET /bytes/-1 HTTP/1.1\r\n\r\n"}, []uint32{kindBadReq}, true},
		{"subpath", []string{"GET /bytes/12/x HTTP/1.1\r\n\r\n"}, []uint32{kindBadReq}, true},
		{"head of a bad size", []string{"HEAD /bytes/x HTTP/1.1\r\n\r\n"}, []uint32{kindBadReq | descHead}, true},
		{"no slash", []string{"GET /bytes HTTP/1.1\r\n\r\n"}, []uint32{kindPage}, true},
		{"other path", []string{"GET /byte/5 HTTP/1.1\r\n\r\n"}, []uint32{kindPage}, true},
		{"pipelined objects", []string{"GET /bytes/1 HTTP/1.1\r\n\r\nGET /bytes/22 HTTP/1.1\r\n\r\nHEAD / HTTP/1.1\r\n\r\nGET /bytes/333 HTTP/1.1\r\n\r\n"},
			[]uint32{obj(1), obj(22), kindPage | descHead, obj(333)}, true},
		{"too many", []string{strings.Repeat("GET / HTTP/1.1\r\n\r\n", maxPending+1)}, make([]uint32, maxPending), false},
	}
	s := &Stack{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c conn
			ok := true
			for _, p := range tt.pieces {
				ok = ok && s.scanRequests(&c, []byte(p))
			}
			got := c.reqs().pend[:c.pending]
			if ok != tt.ok || !slices.Equal(got, tt.want) && len(got)+len(tt.want) > 0 {
				t.Errorf("scanRequests(%q) = %v, descriptors %#x; want %v, %#x", tt.pieces, ok, got, tt.ok, tt.want)
			}
		})
	}
}
