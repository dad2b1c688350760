package stack

import (
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// Hostile clients against a server stack configured as `cicada target
// --dataplane` configures it (1 s RTO, 8 tries, a 24 h idle timeout):
// the server stays bounded, answers what it should and counts the rest.

// evilClient sends hand-made segments to a server stack and reads its
// answers.
type evilClient struct {
	t   *testing.T
	s   *Stack
	end *pipe.End
	now int64
}

func newEvilClient(t *testing.T, ports uint16) *evilClient {
	t.Helper()
	a, b, err := pipe.New(pipe.Config{Frames: 8192})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Mode: Server, Link: b, ClientIP: clientIP, ClientIPs: 2, PortMin: 10000, PortMax: 10000 + ports - 1,
		ServerIP: serverIP, RetransmitTimeout: time.Second, MaxRetries: 8, IdleTimeout: 24 * time.Hour, Burst: 256})
	if err != nil {
		t.Fatal(err)
	}
	return &evilClient{t: t, s: s, end: a, now: int64(time.Second)}
}

// frame builds the segment from ip:port.
func (e *evilClient) frame(ip uint32, port uint16, f wire.TCPFields, payload []byte) []byte {
	if f.DstPort == 0 {
		f.DstPort = DefaultServerPort
	}
	f.SrcPort = port
	if f.Window == 0 {
		f.Window = 65535
	}
	return tcpFrame(e.s.mac, ip, serverIP, f, payload)
}

// send hands the segment to the server and polls it once.
func (e *evilClient) send(ip uint32, port uint16, f wire.TCPFields, payload []byte) {
	e.sendFrame(e.frame(ip, port, f, payload))
}

func (e *evilClient) sendFrame(fr []byte) {
	b := e.end.Buffer()
	if b == nil {
		e.t.Fatal("pipe out of buffers")
	}
	n := copy(b, fr)
	if e.end.Transmit([][]byte{b[:n]}) != 1 {
		e.t.Fatal("pipe refused")
	}
	e.s.Poll(e.now)
}

// recv returns the server's segments since the last call.
func (e *evilClient) recv() []wire.TCP {
	var out []wire.TCP
	fr := make([][]byte, 256)
	for {
		n := e.end.Receive(fr)
		if n == 0 {
			return out
		}
		for _, f := range fr[:n] {
			ip, err := wire.ParseIPv4(wire.Ethernet(f).Payload())
			if err != nil || ip.Protocol() != wire.ProtoTCP {
				continue
			}
			seg, err := wire.ParseTCP(ip.Payload())
			if err != nil {
				e.t.Fatalf("the server sent a bad segment: %v", err)
			}
			out = append(out, wire.TCP(append([]byte(nil), seg...)))
		}
	}
}

// handshake opens a connection from ip:port and returns the server's ISS+1
// and our next sequence number.
func (e *evilClient) handshake(ip uint32, port uint16, seq uint32) (uint32, uint32) {
	e.send(ip, port, wire.TCPFields{Seq: seq, Flags: wire.TCPSyn, HasMSS: true, MSS: 1460}, nil)
	segs := e.recv()
	if len(segs) != 1 || segs[0].Flags() != wire.TCPSyn|wire.TCPAck || segs[0].Ack() != seq+1 {
		e.t.Fatalf("SYN drew %d segments; want one SYN-ACK", len(segs))
	}
	srv := segs[0].Seq() + 1
	e.send(ip, port, wire.TCPFields{Seq: seq + 1, Ack: srv, Flags: wire.TCPAck}, nil)
	return srv, seq + 1
}

// TestHostileSYNFlood: SYNs for every record of the tuple space and from
// outside it. Each record holds one half-open connection (the table does
// not grow, nothing allocates), the outsiders are dropped as no socket,
// and every half-open connection ends after its SYN-ACK retries.
func TestHostileSYNFlood(t *testing.T) {
	const ports = 100
	e := newEvilClient(t, ports)
	conns := e.s.Conns()
	syns := func(seq uint32) [][]byte {
		var fs [][]byte
		for ipk := range uint32(2) {
			for p := range uint16(ports) {
				fs = append(fs, e.frame(clientIP+ipk, 10000+p, wire.TCPFields{Seq: seq, Flags: wire.TCPSyn}, nil))
			}
		}
		return fs
	}
	first := syns(1000)
	// Run twice: the SYNs, then their duplicates (SYN-ACKs resent).
	allocs := testing.AllocsPerRun(1, func() {
		for _, f := range first {
			e.sendFrame(f)
		}
	})
	if allocs != 0 {
		t.Errorf("the SYN flood allocated %.0f times", allocs)
	}
	for _, f := range syns(2000) { // another ISN: new incarnations replace the old
		e.sendFrame(f)
	}
	outside := []struct {
		ip   uint32
		port uint16
		dst  uint16
	}{
		{clientIP + 2, 10000, 80}, {clientIP - 1, 10000, 80}, {clientIP, 9999, 80}, {clientIP, 10000 + ports, 80},
		{clientIP, 10000, 81}, {serverIP, 10000, 80}, {0, 0, 80}, {0xffffffff, 65535, 80},
	}
	before := e.s.Counters()
	for _, o := range outside {
		e.send(o.ip, o.port, wire.TCPFields{Seq: 1, Flags: wire.TCPSyn, DstPort: o.dst}, nil)
	}
	c := e.s.Counters()
	if c.SocketsCurrent != uint64(conns) || e.s.Conns() != conns || c.DropNoSocket-before.DropNoSocket != uint64(len(outside)) {
		t.Fatalf("SocketsCurrent %d of %d records (table now %d), outsiders dropped %d of %d", c.SocketsCurrent, conns,
			e.s.Conns(), c.DropNoSocket-before.DropNoSocket, len(outside))
	}
	if got := len(e.recv()); got != 3*conns {
		t.Fatalf("%d segments for %d SYNs; want one SYN-ACK each", got, 3*conns)
	}
	for range 20 * 60 {
		e.now += int64(time.Second)
		e.s.Poll(e.now)
		e.recv()
		if e.s.Counters().SocketsCurrent == 0 {
			break
		}
	}
	if c := e.s.Counters(); c.SocketsCurrent != 0 || c.SocketsFailed != uint64(conns) {
		t.Fatalf("after the retries: SocketsCurrent %d, failed %d; want 0, %d", c.SocketsCurrent, c.SocketsFailed, conns)
	}
}

// TestHostileClientSegments: data before the handshake, resets out of
// sequence, a request without its blank line, pipelining beyond the bound.
func TestHostileClientSegments(t *testing.T) {
	get := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	t.Run("data before the handshake", func(t *testing.T) {
		e := newEvilClient(t, 4)
		e.send(clientIP, 10000, wire.TCPFields{Seq: 1, Flags: wire.TCPPsh}, get)               // no ACK, no connection
		e.send(clientIP, 10000, wire.TCPFields{Seq: 1, Ack: 77, Flags: wire.TCPAck}, get)      // no connection
		e.send(clientIP, 10001, wire.TCPFields{Seq: 500, Flags: wire.TCPSyn}, nil)             // SYN-RCVD
		e.send(clientIP, 10001, wire.TCPFields{Seq: 501, Ack: 12345, Flags: wire.TCPAck}, get) // wrong ACK
		e.send(clientIP, 10001, wire.TCPFields{Seq: 501, Flags: wire.TCPPsh}, get)             // no ACK
		c := e.s.Counters()
		if c.Served200 != 0 || c.DropNoSocket != 2 || c.DropBadState != 2 || c.SocketsCurrent != 1 {
			t.Fatalf("served %d, no socket %d, bad state %d, current %d; want 0, 2, 2, 1", c.Served200, c.DropNoSocket, c.DropBadState, c.SocketsCurrent)
		}
	})
	t.Run("resets out of sequence", func(t *testing.T) {
		e := newEvilClient(t, 4)
		srv, seq := e.handshake(clientIP, 10000, 1000)
		for _, d := range []int32{-1, 1, 1 << 20, -(1 << 20), 65535} {
			e.send(clientIP, 10000, wire.TCPFields{Seq: seq + uint32(d), Ack: srv, Flags: wire.TCPRst | wire.TCPAck}, nil)
		}
		if c := e.s.Counters(); c.SocketsCurrent != 1 || c.DropBadState != 5 {
			t.Fatalf("after 5 resets out of sequence: current %d, bad state %d; want 1, 5", c.SocketsCurrent, c.DropBadState)
		}
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck}, get)
		if c := e.s.Counters(); c.Served200 != 1 {
			t.Fatalf("the connection does not serve after the resets: %+v", c)
		}
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq + uint32(len(get)), Flags: wire.TCPRst}, nil)
		if c := e.s.Counters(); c.SocketsCurrent != 0 || c.SocketsFailed != 1 {
			t.Fatalf("the reset in sequence: current %d, failed %d; want 0, 1", c.SocketsCurrent, c.SocketsFailed)
		}
	})
	t.Run("no blank line", func(t *testing.T) {
		e := newEvilClient(t, 4)
		srv, seq := e.handshake(clientIP, 10000, 1000)
		line := []byte("GET /" + strings.Repeat("a", 1400))
		for range 1000 { // 1.4 MB, never a blank line
			e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck}, line)
			seq += uint32(len(line))
			line[0] = 'x'
		}
		acks := e.recv()
		if len(acks) == 0 || acks[len(acks)-1].Ack() != seq {
			t.Fatalf("%d ACKs, the last not at %d", len(acks), seq)
		}
		if c := e.s.Counters(); c.Served200+c.Served405 != 0 || c.SocketsCurrent != 1 {
			t.Fatalf("served %d+%d, current %d; want nothing served, the connection open", c.Served200, c.Served405, c.SocketsCurrent)
		}
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck}, []byte("\r\n\r\n"))
		if c := e.s.Counters(); c.Served200 != 1 {
			t.Fatalf("the blank line served %d pages; want 1", c.Served200)
		}
	})
	t.Run("pipelined beyond the bound", func(t *testing.T) {
		e := newEvilClient(t, 4)
		srv, seq := e.handshake(clientIP, 10000, 1000)
		var eight, nine []byte
		for range maxPending {
			eight = append(eight, get...)
		}
		nine = append(append(nine, eight...), get...)
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck}, eight)
		e.now += int64(time.Millisecond)
		for range 100 { // the peer acknowledges what comes
			segs := e.recv()
			if len(segs) == 0 {
				break
			}
			e.send(clientIP, 10000, wire.TCPFields{Seq: seq + uint32(len(eight)), Ack: segs[len(segs)-1].Seq() + uint32(len(segs[len(segs)-1].Payload())), Flags: wire.TCPAck}, nil)
		}
		if c := e.s.Counters(); c.Served200 != maxPending || c.SocketsCurrent != 1 {
			t.Fatalf("%d pipelined: served %d, current %d; want %d, 1", maxPending, c.Served200, c.SocketsCurrent, maxPending)
		}
		srv2, seq2 := e.handshake(clientIP, 10001, 5000)
		e.send(clientIP, 10001, wire.TCPFields{Seq: seq2, Ack: srv2, Flags: wire.TCPAck}, nine)
		segs := e.recv()
		if c := e.s.Counters(); c.SocketsCurrent != 1 || c.SocketsFailed != 1 || len(segs) == 0 || segs[len(segs)-1].Flags()&wire.TCPRst == 0 {
			t.Fatalf("%d pipelined: current %d, failed %d, %d segments; want the connection reset", maxPending+1, c.SocketsCurrent, c.SocketsFailed, len(segs))
		}
	})
}

// TestMalformedSYNKeepsConnection: a SYN with a malformed option list is
// dropped (DropMalformed) before it touches the record: the established
// connection of that tuple stays and serves.
func TestMalformedSYNKeepsConnection(t *testing.T) {
	e := newEvilClient(t, 4)
	srv, seq := e.handshake(clientIP, 10000, 1000)
	f := e.frame(clientIP, 10000, wire.TCPFields{Seq: 9000, Flags: wire.TCPSyn, HasMSS: true, MSS: 1460}, nil)
	// The MSS option's length byte says 1: malformed.
	tcp := f[wire.EthernetLen+wire.IPv4MinLen:]
	tcp[wire.TCPMinLen+1] = 1
	ip, _ := wire.ParseIPv4(f[wire.EthernetLen:])
	wire.SetTCPChecksum(tcp, ip.Src(), ip.Dst())
	e.sendFrame(f)
	if c := e.s.Counters(); c.DropMalformed != 1 || c.SocketsCurrent != 1 || c.SocketsClosed != 0 {
		t.Fatalf("malformed SYN: dropped %d, current %d, closed %d; want 1, 1, 0", c.DropMalformed, c.SocketsCurrent, c.SocketsClosed)
	}
	e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck}, []byte("GET / HTTP/1.1\r\n\r\n"))
	if c := e.s.Counters(); c.Served200 != 1 {
		t.Fatalf("the connection does not serve after the malformed SYN: %+v", c)
	}
}
