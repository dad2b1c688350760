package stack

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// evilServer is a hand-written TCP peer for one client port: it accepts
// SYNs and answers each request as its scenario says.
type evilServer struct {
	t        *testing.T
	c        *Stack
	end      *pipe.End
	rcvNxt   uint32 // the client's next sequence number
	sndNxt   uint32 // ours
	requests int
	// answer is called for each request (a segment with payload) and
	// returns the frames to send.
	answer func(e *evilServer) [][]byte
	synWin uint16
	// sackOK makes the SYN-ACK permit SACK; synSACK records whether the
	// client's SYN offered it, sacks the client's segments with a SACK
	// block and sack the last block.
	sackOK, synSACK bool
	sacks           int
	sack            [2]uint32
}

func (e *evilServer) seg(flags uint8, payload []byte) []byte {
	ip, port := e.c.peer(0)
	f := tcpFrame(e.c.mac, serverIP, ip, wire.TCPFields{SrcPort: e.c.cfg.ServerPort, DstPort: port, Seq: e.sndNxt,
		Ack: e.rcvNxt, Flags: flags, Window: 65535}, payload)
	e.sndNxt += uint32(len(payload))
	if flags&(wire.TCPSyn|wire.TCPFin) != 0 {
		e.sndNxt++
	}
	return f
}

// data returns s cut into segments of at most 1000 bytes.
func (e *evilServer) data(s string) [][]byte {
	var out [][]byte
	for len(s) > 0 {
		n := min(len(s), 1000)
		out = append(out, e.seg(wire.TCPAck|wire.TCPPsh, []byte(s[:n])))
		s = s[n:]
	}
	return out
}

// serve handles what the client sent.
func (e *evilServer) serve() {
	fr := make([][]byte, 64)
	n := e.end.Receive(fr)
	var out [][]byte
	for _, f := range fr[:n] {
		ipk, err := wire.ParseIPv4(wire.Ethernet(f).Payload())
		if err != nil || ipk.Protocol() != wire.ProtoTCP {
			continue
		}
		s, err := wire.ParseTCP(ipk.Payload())
		if err != nil {
			continue
		}
		if o := s.Options(); len(o) == 12 && o[2] == wire.TCPOptSACK && o[3] == 10 {
			e.sacks++
			if !s.ChecksumValid(ipk.Src(), ipk.Dst()) || !ipk.ChecksumValid() {
				e.t.Errorf("an ACK with a SACK block has a bad checksum")
			}
			e.sack = [2]uint32{binary.BigEndian.Uint32(o[4:]), binary.BigEndian.Uint32(o[8:])}
		}
		switch fl := s.Flags(); {
		case fl&wire.TCPRst != 0:
		case fl&wire.TCPSyn != 0:
			o, _ := wire.ParseTCPOptions(s.Options())
			e.synSACK = o.SACKPermitted
			e.rcvNxt, e.sndNxt = s.Seq()+1, 0x50000000+uint32(e.requests)<<16
			ip, port := e.c.peer(0)
			out = append(out, tcpFrame(e.c.mac, serverIP, ip, wire.TCPFields{SrcPort: e.c.cfg.ServerPort, DstPort: port,
				Seq: e.sndNxt, Ack: e.rcvNxt, Flags: wire.TCPSyn | wire.TCPAck, Window: e.synWin, HasMSS: true, MSS: 1460, SACKPermitted: e.sackOK}, nil))
			e.sndNxt++
		case len(s.Payload()) > 0 && s.Seq() == e.rcvNxt:
			e.rcvNxt += uint32(len(s.Payload()))
			e.requests++
			out = append(out, e.answer(e)...)
		case fl&wire.TCPFin != 0 && s.Seq() == e.rcvNxt:
			e.rcvNxt++
			out = append(out, e.seg(wire.TCPAck|wire.TCPFin, nil))
		}
	}
	for _, f := range out {
		b := e.end.Buffer()
		if b == nil {
			e.t.Fatal("pipe out of buffers")
		}
		k := copy(b, f)
		if e.end.Transmit([][]byte{b[:k]}) != 1 {
			e.t.Fatal("pipe refused a frame")
		}
	}
}

// TestHostileServers: a user meets a server that answers badly. Every
// request it sends ends as exactly the right failure, none counts as a
// success, and the user goes on (reconnecting when the connection broke):
// no hang.
func TestHostileServers(t *testing.T) {
	resp := func(s string, fin bool) func(e *evilServer) [][]byte {
		return func(e *evilServer) [][]byte {
			out := e.data(s)
			if fin {
				out = append(out, e.seg(wire.TCPAck|wire.TCPFin, nil))
			}
			return out
		}
	}
	big := "HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n" + strings.Repeat("x", 200000)
	tests := []struct {
		name   string
		answer func(e *evilServer) [][]byte
		synWin uint16
		kind   func(r *StatsRow) uint64 // the failure every request ends in; nil: success
	}{
		{"interim 1xx skipped", resp("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false), 65535, nil},
		{"endless 1xx", resp(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 20), false), 65535, malformed},
		{"read to close", resp("HTTP/1.1 200 OK\r\n\r\nbody until the FIN", true), 65535, malformed},
		{"length of 20 digits", resp("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nx", false), 65535, malformed},
		{"negative length", resp("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", false), 65535, malformed},
		{"lengths disagree", resp("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 4\r\n\r\nabcd", false), 65535, malformed},
		{"chunk size overflow", resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffff\r\n", false), 65535, malformed},
		{"FIN mid-response", resp("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true), 65535, reset},
		{"RST storm", func(e *evilServer) [][]byte {
			var out [][]byte
			base := e.sndNxt
			for k := -20; k <= 20; k++ { // one of them in sequence
				e.sndNxt = base + uint32(k)
				out = append(out, e.seg(wire.TCPRst|wire.TCPAck, nil))
			}
			return out
		}, 65535, reset},
		{"acked, never answered", func(e *evilServer) [][]byte { return [][]byte{e.seg(wire.TCPAck, nil)} }, 65535, timeout},
		{"never acked", func(*evilServer) [][]byte { return nil }, 65535, timeout},
		{"response beyond the window", resp(big, false), 65535, nil},
		{"zero window", resp("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", false), 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := oneClass(ProgramClass{Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}},
				Wait: Wait{Kind: WaitConstant, Min: 10 * time.Millisecond}})
			cc := Config{PortMin: 10000, PortMax: 10000, Program: prog, RetransmitTimeout: 20 * time.Millisecond,
				MaxRetransmitTimeout: 40 * time.Millisecond, MaxRetries: 2, IdleTimeout: 300 * time.Millisecond}
			p := usersPair(t, prog, 1, cc, Config{PortMin: 10000, PortMax: 10000}, pipe.Config{})
			p.run(t, 100, func() bool { return p.c.Resolved() })
			e := &evilServer{t: t, c: p.c, end: p.sb, answer: tt.answer, synWin: tt.synWin}
			if p.c.LaunchClass(p.now, 0, 1) != 1 {
				t.Fatal("no user launched")
			}
			var st Stats
			const want = 3
			for turn := 0; ; turn++ {
				if turn > 20000 {
					t.Fatalf("%d requests after %v of fake time: the user hangs\n%+v", st.Rows[0].Requests, time.Duration(p.now), p.c.Counters())
				}
				p.now += step
				p.c.Poll(p.now)
				e.serve()
				p.c.Poll(p.now)
				p.c.TakeStats(&st)
				if err := checkInvariants(p.c); err != nil {
					t.Fatal(err)
				}
				if len(st.Rows) > 0 && st.Rows[0].Requests >= want {
					break
				}
			}
			r := &st.Rows[0]
			if tt.kind == nil {
				if r.Failures != 0 || r.Requests != want {
					t.Fatalf("requests %d, failures %d; want %d, 0\n%+v", r.Requests, r.Failures, want, *r)
				}
				return
			}
			if got := tt.kind(r); got != r.Requests || r.Failures != r.Requests {
				t.Fatalf("requests %d, failures %d, of the expected kind %d: want all of one kind\n%+v", r.Requests, r.Failures, got, *r)
			}
			if c := p.c.Counters(); c.Reconnects < want-1 || c.HTTP2xx != 0 {
				t.Errorf("reconnects %d, 2xx %d; want >= %d, 0", c.Reconnects, c.HTTP2xx, want-1)
			}
		})
	}
}

func malformed(r *StatsRow) uint64 { return r.FailMalformed }
func reset(r *StatsRow) uint64     { return r.FailReset }
func timeout(r *StatsRow) uint64   { return r.FailTimeout }

// TestStoppedUserConnectFails: a user stopped while its SYN goes
// unanswered ends when the connect fails without counting a request: it
// would never have sent one.
func TestStoppedUserConnectFails(t *testing.T) {
	for _, how := range []string{"no answer", "reset"} {
		t.Run(how, func(t *testing.T) {
			prog := oneClass(ProgramClass{Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}, Wait: Wait{Kind: WaitConstant, Min: time.Second}})
			cc := Config{PortMin: 10000, PortMax: 10003, Program: prog, RetransmitTimeout: 10 * time.Millisecond,
				MaxRetransmitTimeout: 20 * time.Millisecond, MaxRetries: 2}
			p := usersPair(t, prog, 4, cc, Config{PortMin: 10000, PortMax: 10003}, pipe.Config{})
			p.run(t, 100, func() bool { return p.c.Resolved() })
			if n := p.c.LaunchClass(p.now, 0, 4); n != 4 {
				t.Fatalf("launched %d", n)
			}
			syns := rawPeer{t, p.sb}.recv() // the server never sees them
			if p.c.StopClass(p.now, 0, 4) != 4 || p.c.Users(0) != 0 {
				t.Fatal("not stopped")
			}
			if how == "reset" {
				for _, f := range syns {
					ip, _ := wire.ParseIPv4(wire.Ethernet(f).Payload())
					seg, _ := wire.ParseTCP(ip.Payload())
					inject(p.c, tcpFrame(p.c.mac, serverIP, ip.Src(), wire.TCPFields{SrcPort: 80, DstPort: seg.SrcPort(),
						Ack: seg.Seq() + 1, Flags: wire.TCPRst | wire.TCPAck}, nil), p.now)
				}
			}
			for range 200 {
				p.now += step
				p.c.Poll(p.now)
				rawPeer{t, p.sb}.recv()
			}
			var st Stats
			p.c.TakeStats(&st)
			if c := p.c.Counters(); c.SocketsCurrent != 0 || st.Rows[0].Requests != 0 || st.Rows[0].FailConnect != 0 {
				t.Fatalf("open %d, requests %d, connect failures %d; want 0, 0, 0", c.SocketsCurrent, st.Rows[0].Requests, st.Rows[0].FailConnect)
			}
			if err := checkInvariants(p.c); err != nil {
				t.Fatal(err)
			}
			for i := range p.c.conns {
				if p.c.conns[i].uflags != 0 {
					t.Fatalf("record %d still holds a user (flags %#x)", i, p.c.conns[i].uflags)
				}
			}
		})
	}
}

// TestHeadResponseHasNoBody: a HEAD request's response carries the GET's
// Content-Length and no body (RFC 9110 9.3.2); it completes at the blank
// line, as a success, without waiting for the body until the idle timeout.
func TestHeadResponseHasNoBody(t *testing.T) {
	for _, tt := range []struct {
		name string
		prog *Program
		cfg  Config
	}{
		{"program", &Program{Requests: []ProgramRequest{{Raw: BuildRequest("HEAD", "/", "10.0.1.1", nil)}},
			Classes: []ProgramClass{{Tasks: []ProgramTask{{Weight: 1, Requests: []int{0}}}, Wait: Wait{Kind: WaitConstant, Min: 10 * time.Millisecond}}}}, Config{}},
		{"request", nil, Config{Request: BuildRequest("HEAD", "/", "10.0.1.1", nil), RequestsPerConn: 3, Hold: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cc := tt.cfg
			cc.PortMin, cc.PortMax, cc.Program, cc.IdleTimeout = 10000, 10000, tt.prog, time.Second
			p := newPair(t, cc, Config{PortMin: 10000, PortMax: 10000}, pipe.Config{})
			p.run(t, 100, func() bool { return p.c.Resolved() })
			e := &evilServer{t: t, c: p.c, end: p.sb, synWin: 65535, answer: func(e *evilServer) [][]byte {
				return e.data("HTTP/1.1 200 OK\r\nContent-Length: 612\r\nContent-Type: text/html\r\n\r\n")
			}}
			if p.c.LaunchClass(p.now, 0, 1) != 1 {
				t.Fatal("nothing launched")
			}
			for range 200 { // 200 ms, a fifth of the idle timeout
				p.now += step
				p.c.Poll(p.now)
				e.serve()
				p.c.Poll(p.now)
			}
			var st Stats
			p.c.TakeStats(&st)
			if r := st.Rows[0]; r.Requests < 3 || r.Failures != 0 || r.ContentBytes != 0 {
				t.Fatalf("requests %d, failures %d (timeouts %d), body bytes %d; want >= 3, 0, 0", r.Requests, r.Failures, r.FailTimeout, r.ContentBytes)
			}
		})
	}
}
