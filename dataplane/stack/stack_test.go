package stack

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/wire"
)

func TestOneRequest(t *testing.T) {
	var calls, status int
	var rt time.Duration
	onResp := func(st int, d time.Duration) { calls, status, rt = calls+1, st, d }
	p := newPair(t, Config{OnResponse: onResp}, Config{}, pipe.Config{Delay: 2})
	p.run(t, 1000, p.launcher(1, 1, func() bool {
		return p.c.Counters().SocketsClosed == 1 && p.s.Counters().SocketsClosed == 1
	}))
	c, s := p.c.Counters(), p.s.Counters()
	check(t, "client", []want{
		{"PktsOut (ARP, SYN, GET, FIN, ACK)", c.PktsOut, 5}, {"PktsIn", c.PktsIn, 4},
		{"SynOut", c.SynOut, 1}, {"SynIn", c.SynIn, 1}, {"FinOut", c.FinOut, 1}, {"FinIn", c.FinIn, 1},
		{"RstOut", c.RstOut, 0}, {"RstIn", c.RstIn, 0},
		{"HTTPRequests", c.HTTPRequests, 1}, {"HTTP2xx", c.HTTP2xx, 1}, {"HTTPOther", c.HTTPOther, 0},
		{"HTTPErrors", c.HTTPErrors, 0}, {"SocketsOpened", c.SocketsOpened, 1},
		{"SocketsCurrent", c.SocketsCurrent, 0}, {"SocketsFailed", c.SocketsFailed, 0},
		{"ARPOut", c.ARPOut, 1}, {"ARPIn", c.ARPIn, 1},
	})
	check(t, "server", []want{
		{"PktsOut (ARP, SYN-ACK, page, FIN)", s.PktsOut, 4}, {"PktsIn", s.PktsIn, 5},
		{"Served200", s.Served200, 1}, {"SocketsOpened", s.SocketsOpened, 1},
		{"SocketsCurrent", s.SocketsCurrent, 0}, {"RstOut", s.RstOut, 0}, {"RstIn", s.RstIn, 0},
		{"ARPIn", s.ARPIn, 1}, {"ARPOut", s.ARPOut, 1},
	})
	if c.RespTimeSum <= 0 || c.RespTimeMax != c.RespTimeSum {
		t.Errorf("RespTimeSum %d, RespTimeMax %d; want equal and positive", c.RespTimeSum, c.RespTimeMax)
	}
	if calls != 1 || status != 200 || int64(rt) != c.RespTimeSum {
		t.Errorf("OnResponse called %d times with %d, %v; want once with 200, %v", calls, status, rt, time.Duration(c.RespTimeSum))
	}
}

// TestKeepAlive10k holds 10,000 connections open, each after one GET.
func TestKeepAlive10k(t *testing.T) {
	const n = 10000
	p := newPair(t, Config{PortMin: 10000, PortMax: 10000 + n - 1, Hold: true},
		Config{PortMin: 10000, PortMax: 10000 + n - 1}, pipe.Config{})
	p.run(t, 5000, p.launcher(n, 256, func() bool { return p.c.Counters().HTTP2xx == n }))
	c, s := p.c.Counters(), p.s.Counters()
	check(t, "client", []want{
		{"HTTP2xx", c.HTTP2xx, n}, {"SocketsCurrent", c.SocketsCurrent, n}, {"SocketsFailed", c.SocketsFailed, 0},
		{"RstIn", c.RstIn, 0}, {"RstOut", c.RstOut, 0}, {"RetransSyn", c.RetransSyn, 0},
		{"RetransData", c.RetransData, 0}, {"DropNoTxBuffer", c.DropNoTxBuffer, 0},
		{"LaunchSkipped", c.LaunchSkipped, 0},
		// ARP, then SYN, GET and the ACK of the page per connection.
		{"PktsOut", c.PktsOut, 1 + 3*n},
	})
	check(t, "server", []want{
		{"Served200", s.Served200, c.HTTP2xx}, {"SocketsCurrent", s.SocketsCurrent, n},
		{"RstOut", s.RstOut, 0}, {"RetransData", s.RetransData, 0}, {"PktsOut", s.PktsOut, 1 + 2*n},
	})
}

// TestShortConns10k runs 10,000 connect-GET-close connections over a table
// of 1,000 ports, so every port is reused ten times without TIME_WAIT.
func TestShortConns10k(t *testing.T) {
	const n, ports = 10000, 1000
	p := newPair(t, Config{PortMin: 20000, PortMax: 20000 + ports - 1},
		Config{PortMin: 20000, PortMax: 20000 + ports - 1}, pipe.Config{})
	p.run(t, 20000, p.launcher(n, 64, func() bool {
		return p.c.Counters().SocketsClosed == n && p.s.Counters().SocketsClosed == n
	}))
	c, s := p.c.Counters(), p.s.Counters()
	check(t, "client", []want{
		{"HTTP2xx", c.HTTP2xx, n}, {"SocketsOpened", c.SocketsOpened, n}, {"SocketsCurrent", c.SocketsCurrent, 0},
		{"SocketsFailed", c.SocketsFailed, 0}, {"RstIn", c.RstIn, 0}, {"RstOut", c.RstOut, 0},
		{"retransmits", c.RetransSyn + c.RetransData + c.RetransFin, 0},
		{"PktsOut (ARP + SYN, GET, FIN, ACK each)", c.PktsOut, 1 + 4*n},
	})
	check(t, "server", []want{
		{"Served200", s.Served200, c.HTTP2xx}, {"SocketsOpened", s.SocketsOpened, n},
		{"SocketsCurrent", s.SocketsCurrent, 0}, {"RstOut", s.RstOut, 0},
		{"PktsOut (ARP + SYN-ACK, page, FIN each)", s.PktsOut, 1 + 3*n},
	})
}

// TestLargeResponseLossy receives 200 KB pages, with Content-Length and
// chunked, over a pipe that loses 1 %, reorders 2 % and duplicates 1 % of
// frames each way.
func TestLargeResponseLossy(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		t.Run(map[bool]string{false: "content-length", true: "chunked"}[chunked], func(t *testing.T) {
			testLargeResponseLossy(t, chunked)
		})
	}
}

func testLargeResponseLossy(t *testing.T, chunked bool) {
	const conns, reqs = 4, 3
	p := newPair(t, Config{PortMin: 30000, PortMax: 30000 + conns - 1, RequestsPerConn: reqs, WScale: 7, Window: 1 << 20},
		Config{PortMin: 30000, PortMax: 30000 + conns - 1, BodySize: 200 << 10, WScale: 7, MaxRetries: 8, Chunked: chunked},
		pipe.Config{Loss: 0.01, Reorder: 0.02, Duplicate: 0.01, Delay: 1, Seed: 11})
	p.run(t, 200000, p.launcher(conns, conns, func() bool {
		return p.c.Counters().SocketsClosed == conns && p.s.Counters().SocketsClosed == conns
	}))
	c, s := p.c.Counters(), p.s.Counters()
	check(t, "client", []want{
		{"HTTP2xx", c.HTTP2xx, conns * reqs}, {"HTTPErrors", c.HTTPErrors, 0},
		{"SocketsFailed", c.SocketsFailed, 0}, {"RstOut", c.RstOut, 0}, {"RstIn", c.RstIn, 0},
	})
	check(t, "server", []want{{"Served200", s.Served200, conns * reqs}, {"SocketsFailed", s.SocketsFailed, 0}})
	if c.BytesIn < conns*reqs*200<<10 {
		t.Errorf("client BytesIn = %d; want at least %d", c.BytesIn, conns*reqs*200<<10)
	}
	t.Logf("client %+v\nserver %+v\ninjected server→client %+v, client→server %+v", c, s, p.sb.Injected(), p.ca.Injected())
	inj := p.sb.Injected()
	if inj.Lost == 0 || inj.Reordered == 0 || inj.Duplicated == 0 {
		t.Errorf("server-side injections %+v; want some of each", inj)
	}
	if s.RetransData == 0 || s.FastRetransmit == 0 || c.DropOutOfOrder == 0 || c.DupAckOut == 0 {
		t.Errorf("server retransmits %d+%d, client out-of-order drops %d, dup ACKs %d; want all > 0",
			s.RetransData, s.FastRetransmit, c.DropOutOfOrder, c.DupAckOut)
	}
}

// TestRetransmitBound: a server that drops every SYN (wrong port) makes the
// client retry MaxRetries times, then reset and count the socket failed.
func TestRetransmitBound(t *testing.T) {
	p := newPair(t, Config{MaxRetries: 3}, Config{ServerPort: 81}, pipe.Config{})
	p.run(t, 10000, p.launcher(1, 1, func() bool { return p.c.Counters().SocketsClosed == 1 }))
	c, s := p.c.Counters(), p.s.Counters()
	check(t, "client", []want{{"SynOut", c.SynOut, 4}, {"RetransSyn", c.RetransSyn, 3},
		{"SocketsFailed", c.SocketsFailed, 1}, {"SocketsCurrent", c.SocketsCurrent, 0}, {"RstOut", c.RstOut, 1}})
	check(t, "server", []want{{"DropNoSocket", s.DropNoSocket, 5}, {"SocketsOpened", s.SocketsOpened, 0}})
}

func TestConfigRefused(t *testing.T) {
	a, _, _ := pipe.New(pipe.Config{})
	base := func(m Mode) Config { return Config{Mode: m, Link: a, ClientIP: clientIP, ServerIP: serverIP} }
	mod := func(m Mode, f func(*Config)) Config { c := base(m); f(&c); return c }
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no mode", mod(0, func(c *Config) {})},
		{"no link", mod(Client, func(c *Config) { c.Link = nil })},
		{"server in client range", mod(Client, func(c *Config) { c.ClientIPs = 300 })},
		{"ports reversed", mod(Client, func(c *Config) { c.PortMin, c.PortMax = 2000, 1000 })},
		{"table too large", mod(Client, func(c *Config) { c.ClientIPs, c.ServerIP = 1<<20, 0x0b000001 })},
		{"mss above mtu", mod(Client, func(c *Config) { c.MSS = 1461 })},
		{"wscale 15", mod(Client, func(c *Config) { c.WScale = 15 })},
		{"window above scale", mod(Client, func(c *Config) { c.Window = 1 << 20 })},
		{"request above mss", mod(Client, func(c *Config) { c.Request = make([]byte, 1461) })},
		{"max retries 256", mod(Client, func(c *Config) { c.MaxRetries = 256 })},
		{"body size in client", mod(Client, func(c *Config) { c.BodySize = 10 })},
		{"chunked in client", mod(Client, func(c *Config) { c.Chunked = true })},
		{"hold in server", mod(Server, func(c *Config) { c.Hold = true })},
		{"body too large", mod(Server, func(c *Config) { c.BodySize = MaxBodySize + 1 })},
		{"negative think time", mod(Client, func(c *Config) { c.ThinkTime = -1 })},
		{"negative second round window", mod(Client, func(c *Config) { c.SecondRoundWindow = -1; c.Program = roundProgram() })},
		{"second round window above MaxConns", mod(Client, func(c *Config) { c.SecondRoundWindow = MaxConns + 1; c.Program = roundProgram() })},
		{"second round window without Program", mod(Client, func(c *Config) { c.SecondRoundWindow = 8 })},
		{"second round window in server", mod(Server, func(c *Config) { c.SecondRoundWindow = 8 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, ErrConfig) {
				t.Errorf("New(%s) = %v; want ErrConfig", tt.name, err)
			}
		})
	}
}

// TestConnRecord checks the record's size and that it holds no pointers,
// so a table of them is never scanned by the garbage collector.
func TestConnRecord(t *testing.T) {
	if sz := unsafe.Sizeof(conn{}); sz > 128 || sz < 64 {
		t.Errorf("unsafe.Sizeof(conn{}) = %d; want 64..128", sz)
	}
	var walk func(reflect.Type) bool
	walk = func(ty reflect.Type) bool {
		switch ty.Kind() {
		case reflect.Struct:
			for i := range ty.NumField() {
				if !walk(ty.Field(i).Type) {
					return false
				}
			}
			return true
		case reflect.Array:
			return walk(ty.Elem())
		case reflect.Bool, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return true
		}
		return false
	}
	if !walk(reflect.TypeOf(conn{})) {
		t.Errorf("conn holds a pointer-bearing field; want plain integers only")
	}
}

// TestSteadyStateAllocatesNothing: polling and launching short connections
// allocates nothing once the tables exist.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	p := newPair(t, Config{PortMin: 20000, PortMax: 20999}, Config{PortMin: 20000, PortMax: 20999}, pipe.Config{})
	p.run(t, 100, func() bool { return p.c.Resolved() })
	allocs := testing.AllocsPerRun(200, func() {
		p.now += step
		p.c.Launch(p.now, 8)
		p.c.Poll(p.now)
		p.s.Poll(p.now)
	})
	if allocs != 0 {
		t.Errorf("allocs per turn = %v; want 0", allocs)
	}
	if c := p.c.Counters(); c.HTTP2xx == 0 {
		t.Errorf("HTTP2xx = 0 after the measured turns; want some")
	}
}

// TestLateFINAcked: with no TIME_WAIT, a FIN retransmitted by the server
// after the client closed the record is answered with the ACK TIME_WAIT
// would have sent, so the server can close too.
func TestLateFINAcked(t *testing.T) {
	p := newPair(t, Config{PortMin: 10000, PortMax: 10000}, Config{PortMin: 10000, PortMax: 10000}, pipe.Config{})
	p.run(t, 1000, p.launcher(1, 1, func() bool { return p.c.Counters().SocketsClosed == 1 && p.s.Counters().SocketsClosed == 1 }))
	before := p.c.Counters()
	p.now += lateAckQuiet // not a retransmission crossing the closing ACK
	const seq, ack = 5000, 7000
	p.s.emit(&p.s.tFin, 0, seq, ack, nil, 0)
	p.s.flush()
	p.c.Poll(p.now)
	got := rawPeer{t, p.sb}.recv()
	if len(got) != 1 {
		t.Fatalf("client frames = %d; want 1 ACK", len(got))
	}
	ip, _ := wire.ParseIPv4(wire.Ethernet(got[0]).Payload())
	seg, _ := wire.ParseTCP(ip.Payload())
	if seg.Flags() != wire.TCPAck || seg.Seq() != ack || seg.Ack() != seq+1 || !seg.ChecksumValid(ip.Src(), ip.Dst()) {
		t.Errorf("answer flags %#x seq %d ack %d; want ACK seq %d ack %d with a valid checksum", seg.Flags(), seg.Seq(), seg.Ack(), ack, seq+1)
	}
	c := p.c.Counters()
	check(t, "client", []want{{"DropNoSocket", c.DropNoSocket, before.DropNoSocket + 1},
		{"SocketsOpened", c.SocketsOpened, 1}, {"RstOut", c.RstOut, 0}})
}

// TestWindowScaleNegotiated: a window is scaled only when both SYNs carry
// the option; otherwise the window field is sent unscaled.
func TestWindowScaleNegotiated(t *testing.T) {
	tests := []struct {
		name            string
		clientWS, srvWS uint8
		window          uint32
		wantSrvWnd      uint32 // the server's view of the client's window
	}{
		{"both scale", 7, 7, 1 << 20, 1 << 20},
		{"server does not", 7, 0, 1 << 20, 65535},
		{"client does not", 0, 7, 65535, 65535},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, Config{PortMin: 10000, PortMax: 10000, WScale: tt.clientWS, Window: tt.window, Hold: true},
				Config{PortMin: 10000, PortMax: 10000, WScale: tt.srvWS}, pipe.Config{})
			p.run(t, 1000, p.launcher(1, 1, func() bool { return p.c.Counters().HTTP2xx == 1 }))
			if got := p.s.conns[0].sndWnd; got != tt.wantSrvWnd {
				t.Errorf("server's window for the client = %d; want %d", got, tt.wantSrvWnd)
			}
			if c := p.s.Counters(); c.DropChecksum != 0 {
				t.Errorf("server DropChecksum = %d; want 0 (window patched with its checksum)", c.DropChecksum)
			}
		})
	}
}

// TestSlowResponseNotTimedOut: the idle timeout bounds silence, not the
// whole response: a 2 MB page that takes longer than IdleTimeout but keeps
// arriving completes.
func TestSlowResponseNotTimedOut(t *testing.T) {
	p := newPair(t, Config{IdleTimeout: 20 * time.Millisecond}, Config{BodySize: 2 << 20}, pipe.Config{Delay: 3})
	p.run(t, 10000, p.launcher(1, 1, func() bool { return p.c.Counters().SocketsClosed == 1 && p.s.Counters().SocketsClosed == 1 }))
	c := p.c.Counters()
	check(t, "client", []want{{"HTTP2xx", c.HTTP2xx, 1}, {"HTTPErrors", c.HTTPErrors, 0}, {"SocketsFailed", c.SocketsFailed, 0}})
	if c.RespTimeMax <= int64(20*time.Millisecond) {
		t.Errorf("response time %v; want above the 20ms idle timeout for the test to mean anything", time.Duration(c.RespTimeMax))
	}
}

// TestLateDuplicateSYN: a copy of the client's SYN arriving after the
// connection is established gets an ACK and leaves the connection alone;
// a SYN with a new sequence number on the same port is a new incarnation.
func TestLateDuplicateSYN(t *testing.T) {
	p := newPair(t, Config{PortMin: 10000, PortMax: 10000, Hold: true}, Config{PortMin: 10000, PortMax: 10000}, pipe.Config{})
	p.run(t, 1000, p.launcher(1, 1, func() bool { return p.c.Counters().HTTP2xx == 1 }))
	p.c.emit(&p.c.tSyn, 0, p.c.conns[0].iss, 0, nil, 0)
	p.c.flush()
	p.poll()
	s := p.s.Counters()
	check(t, "server after duplicate", []want{{"SocketsOpened", s.SocketsOpened, 1}, {"SocketsCurrent", s.SocketsCurrent, 1},
		{"SocketsClosed", s.SocketsClosed, 0}, {"RstOut", s.RstOut, 0}})
	if st := p.s.conns[0].state; st != stEstablished {
		t.Errorf("server record state = %d; want established (%d)", st, stEstablished)
	}
	p.c.emit(&p.c.tSyn, 0, p.c.conns[0].iss+100000, 0, nil, 0)
	p.c.flush()
	p.poll()
	s = p.s.Counters()
	check(t, "server after new SYN", []want{{"SocketsOpened", s.SocketsOpened, 2}, {"SocketsClosed", s.SocketsClosed, 1}})
}

// TestAcksBatchedPerBurst: the client acknowledges a 200 KB page once per
// receive burst, not once per segment.
func TestAcksBatchedPerBurst(t *testing.T) {
	p := newPair(t, Config{}, Config{BodySize: 200 << 10}, pipe.Config{})
	p.run(t, 1000, p.launcher(1, 1, func() bool { return p.c.Counters().SocketsClosed == 1 && p.s.Counters().SocketsClosed == 1 }))
	c, s := p.c.Counters(), p.s.Counters()
	segs := (uint64(len(serverResponse(200<<10))) + 1459) / 1460
	check(t, "server", []want{{"PktsOut (ARP, SYN-ACK, page, FIN)", s.PktsOut, 3 + segs}})
	// ARP, SYN, GET, FIN, last ACK, and the batched ACKs: one per burst
	// of up to 64 segments, i.e. at least ceil(segs/64).
	if acks := c.PktsOut - 5; acks < (segs+63)/64 || acks > segs/8 {
		t.Errorf("client pure ACKs = %d for %d segments; want between %d and %d", acks, segs, (segs+63)/64, segs/8)
	}
	check(t, "client", []want{{"HTTP2xx", c.HTTP2xx, 1}, {"DupAckOut", c.DupAckOut, 0}})
}

// TestShortConnsLossy: 2,000 short connections over 200 reused ports with
// 2 % loss, reordering and duplication each way: every one completes, and
// the handshake and close paths recover without resets.
func TestShortConnsLossy(t *testing.T) {
	const n, ports = 2000, 200
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			p := newPair(t, Config{PortMin: 20000, PortMax: 20000 + ports - 1, MaxRetries: 10},
				Config{PortMin: 20000, PortMax: 20000 + ports - 1, MaxRetries: 10},
				pipe.Config{Loss: 0.02, Reorder: 0.02, Duplicate: 0.02, Delay: 1, Seed: seed})
			p.run(t, 200000, p.launcher(n, 16, func() bool {
				return p.c.Counters().SocketsClosed == n && p.s.Counters().SocketsCurrent == 0
			}))
			c, s := p.c.Counters(), p.s.Counters()
			check(t, "client", []want{{"HTTP2xx", c.HTTP2xx, n}, {"SocketsFailed", c.SocketsFailed, 0},
				{"HTTPErrors", c.HTTPErrors, 0}, {"RstOut", c.RstOut, 0}, {"RstIn", c.RstIn, 0}})
			check(t, "server", []want{{"Served200", s.Served200, c.HTTP2xx}, {"SocketsClosed", s.SocketsClosed, n},
				{"SocketsFailed", s.SocketsFailed, 0}, {"RstOut", s.RstOut, 0}})
			if c.RetransSyn == 0 || c.RetransData == 0 || c.RetransFin == 0 || s.RetransSyn == 0 || s.RetransFin == 0 {
				t.Errorf("retransmits client SYN %d data %d FIN %d, server SYN-ACK %d FIN %d; want every kind > 0",
					c.RetransSyn, c.RetransData, c.RetransFin, s.RetransSyn, s.RetransFin)
			}
		})
	}
}

// TestTupleArithmetic: several client IPs, each with its own ports: every
// record's tuple maps back to it, tuples outside the space map to none, and
// connections from all IPs are held on both sides.
func TestTupleArithmetic(t *testing.T) {
	const ips, ports = 3, 10
	p := newPair(t, Config{ClientIPs: ips, PortMin: 40000, PortMax: 40000 + ports - 1, Hold: true},
		Config{ClientIPs: ips, PortMin: 40000, PortMax: 40000 + ports - 1}, pipe.Config{})
	for i := uint32(0); i < ips*ports; i++ {
		ip, port := p.c.peer(i)
		if got, ok := p.c.index(ip, port); !ok || got != i {
			t.Errorf("index(peer(%d) = %#x:%d) = %d, %v; want %d, true", i, ip, port, got, ok, i)
		}
	}
	for _, tu := range []struct {
		ip   uint32
		port uint16
	}{{clientIP - 1, 40000}, {clientIP + ips, 40000}, {clientIP, 39999}, {clientIP, 40000 + ports}} {
		if got, ok := p.c.index(tu.ip, tu.port); ok {
			t.Errorf("index(%#x:%d) = %d, true; want false", tu.ip, tu.port, got)
		}
	}
	p.run(t, 1000, p.launcher(ips*ports, 8, func() bool { return p.c.Counters().HTTP2xx == ips*ports }))
	for i := range p.s.conns {
		if p.s.conns[i].state != stEstablished || p.c.conns[i].state != stEstablished {
			t.Errorf("record %d: server state %d, client state %d; want both established", i, p.s.conns[i].state, p.c.conns[i].state)
		}
	}
	check(t, "server", []want{{"SocketsCurrent", p.s.Counters().SocketsCurrent, ips * ports}})
}
