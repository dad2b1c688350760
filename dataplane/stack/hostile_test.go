package stack

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// Hostile peers: sequences of frames, valid and not, sent to a client stack
// running a Program and to a server stack, with the fake clock advancing,
// and the stacks' invariants checked after every step.

// hostileProgram has three classes with different waits, on_start,
// weighted and sequential tasks, and two stats rows.
func hostileProgram() *Program {
	return &Program{
		Requests: []ProgramRequest{{Raw: get("/a")}, {Raw: get("/b"), Stat: 1}, {Raw: get("/c"), Stat: 1, Accept: []uint16{200, 404}}},
		Classes: []ProgramClass{
			{OnStart: []int{0}, Tasks: []ProgramTask{{Weight: 1, Requests: []int{1}}, {Weight: 3, Requests: []int{0, 2}}},
				Wait: Wait{Kind: WaitConstant, Min: 5 * time.Millisecond}},
			{Tasks: []ProgramTask{{Requests: []int{2}}, {Requests: []int{0, 1, 2}}}, Sequential: true,
				Wait: Wait{Kind: WaitBetween, Min: time.Millisecond, Max: 20 * time.Millisecond}},
			{Tasks: []ProgramTask{{Weight: 1, Requests: []int{1}}},
				Wait: Wait{Kind: WaitConstantPacing, Min: 10 * time.Millisecond}},
		},
	}
}

// hostilePair is a client running hostileProgram over 16 ports and a
// server over the same tuple space, resolved, with short timeouts.
func hostilePair(t testing.TB) *pair {
	t.Helper()
	cc := Config{PortMin: 10000, PortMax: 10015, Program: hostileProgram(), RetransmitTimeout: 5 * time.Millisecond,
		MaxRetransmitTimeout: 40 * time.Millisecond, MaxRetries: 3, IdleTimeout: 200 * time.Millisecond}
	sc := Config{PortMin: 10000, PortMax: 10015, RetransmitTimeout: 5 * time.Millisecond,
		MaxRetransmitTimeout: 40 * time.Millisecond, MaxRetries: 3, IdleTimeout: time.Second}
	p := newPair(t, cc, sc, pipe.Config{Frames: 256})
	for range 4 {
		p.now += step
		p.poll()
	}
	if !p.c.Resolved() {
		t.Fatal("client not resolved")
	}
	return p
}

// Responses a hostile server sends (index by a fuzz byte).
var hostileResponses = []string{
	"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\n",
	"HTTP/1.1 200 OK\r\n\r\nread to close",
	"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffff\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nContent-Le",
	"garbage\r\n\r\n",
	"",
}

// Requests a hostile client sends.
var hostileRequests = []string{
	"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
	"GET / HTTP/1.1\r\n",
	"\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n",
	"GET /xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	"",
}

// tcpFrame builds an Ethernet+IPv4+TCP frame with valid checksums.
func tcpFrame(dst wire.MAC, src, dstIP uint32, f wire.TCPFields, payload []byte) []byte {
	tl := wire.TCPHeaderLen(&f) + len(payload)
	b := make([]byte, wire.EthernetLen+wire.IPv4MinLen+tl)
	_ = wire.PutEthernet(b, dst, wire.MAC{2, 0xee, 0, 0, 0, 1}, wire.EtherTypeIPv4)
	_ = wire.PutIPv4(b[wire.EthernetLen:], wire.IPv4Fields{TotalLen: uint16(wire.IPv4MinLen + tl), TTL: 64,
		Protocol: wire.ProtoTCP, Src: src, Dst: dstIP})
	t := b[wire.EthernetLen+wire.IPv4MinLen:]
	n, _ := wire.PutTCP(t, &f)
	copy(t[n:], payload)
	wire.SetTCPChecksum(t, src, dstIP)
	return b
}

// inject hands f to s as if received now, then sends what it owes.
func inject(s *Stack, f []byte, now int64) {
	s.now = now
	s.input(f, now)
	s.flushAcks()
	s.flush()
}

// hostileStep runs one step decoded from b (at least 6 bytes) and returns
// the rest of b.
func hostileStep(p *pair, st *Stats, b []byte) []byte {
	op, a1, a2, a3, a4, a5 := b[0]%8, b[1], b[2], b[3], b[4], b[5]
	b = b[6:]
	switch op {
	case 0: // time passes, the peers talk
		p.now += int64(a1%64+1) * int64(250*time.Microsecond)
		p.poll()
	case 1: // a long silence (up to 25.6 s: timeouts, backoff, wheel cascades), then the peers talk
		if a2&1 == 0 {
			p.now += int64(a1%64+1) * int64(250*time.Microsecond)
		} else {
			p.now += int64(a1) * int64(100*time.Millisecond)
		}
		p.poll()
	case 2: // a segment to a client record, near its sequence numbers
		i := uint32(a1) % uint32(len(p.c.conns))
		c := &p.c.conns[i]
		ip, port := p.c.peer(i)
		f := wire.TCPFields{SrcPort: p.c.cfg.ServerPort, DstPort: port, Seq: c.rcvNxt + uint32(int8(a3)), Ack: c.sndNxt + uint32(int8(a4)),
			Flags: a2 & 0x3f, Window: uint16(a5) << 8}
		if a2&0x40 != 0 { // a SYN-ACK for the record's SYN
			f.Seq, f.Ack, f.Flags = uint32(a3)<<24, c.iss+1, wire.TCPSyn|wire.TCPAck
		}
		inject(p.c, tcpFrame(p.c.mac, serverIP, ip, f, []byte(hostileResponses[int(a5)%len(hostileResponses)])), p.now)
	case 3: // a segment to a server record, near its sequence numbers
		i := uint32(a1) % uint32(len(p.s.conns))
		c := &p.s.conns[i]
		ip, port := p.s.peer(i)
		f := wire.TCPFields{SrcPort: port, DstPort: p.s.cfg.ServerPort, Seq: c.rcvNxt + uint32(int8(a3)), Ack: c.sndNxt + uint32(int8(a4)),
			Flags: a2 & 0x3f, Window: uint16(a5) << 4, HasMSS: a2&0x40 != 0, MSS: uint16(a5)}
		inject(p.s, tcpFrame(p.s.mac, ip, serverIP, f, []byte(hostileRequests[int(a5)%len(hostileRequests)])), p.now)
	case 4:
		p.c.LaunchClass(p.now, int(a1%4), int(a2%6))
	case 5:
		p.c.StopClass(p.now, int(a1%4), int(a2%6))
	case 6:
		if a1%4 == 0 {
			p.c.SecondRound(p.now)
		} else {
			p.c.TakeStats(st)
		}
	case 7: // raw bytes, checksums fixed, to either side
		n := min(len(b), int(a1))
		f := append([]byte(nil), b[:n]...)
		b = b[n:]
		fixChecksums(f)
		s := p.c
		if a2&1 != 0 {
			s = p.s
		}
		inject(s, f, p.now)
	}
	return b
}

// checkInvariants returns the first broken invariant of s: the timer lists
// and wheel are consistent, no record is on two lists, the socket counts
// agree with the table, the class lists agree with Users, every user and
// every open connection is on a timer (so none waits forever), and the
// stats rows add up.
func checkInvariants(s *Stack) error {
	seen := make([]bool, len(s.conns))
	visit := func(i uint32, l uint8, prev uint32) error {
		if int(i) >= len(s.conns) {
			return fmt.Errorf("list %d: index %d outside the table", l, i)
		}
		if seen[i] {
			return fmt.Errorf("record %d on two timer lists (or twice on %d)", i, l)
		}
		seen[i] = true
		if c := &s.conns[i]; c.list != l || c.prev != prev {
			return fmt.Errorf("record %d on list %d says list %d prev %d, want prev %d", i, l, c.list, c.prev, prev)
		}
		return nil
	}
	onTimers := 0
	for l := tIdle; l < nLists; l++ {
		if !isFIFO(l) {
			continue
		}
		tl := &s.timers[l]
		prev, last := none, int64(0)
		for i := tl.head; i != none; i = s.conns[i].next {
			if err := visit(i, l, prev); err != nil {
				return err
			}
			if at := s.conns[i].timerAt; at < last {
				return fmt.Errorf("FIFO list %d out of order at record %d", l, i)
			} else {
				last = at
			}
			prev = i
			onTimers++
		}
		if tl.tail != prev {
			return fmt.Errorf("FIFO list %d: tail %d, last walked %d", l, tl.tail, prev)
		}
	}
	w := &s.wheel
	var cnt [4]int
	walkSlot := func(h uint32, l uint8) error {
		prev := none
		for i := h; i != none; i = s.conns[i].next {
			if err := visit(i, l, prev); err != nil {
				return err
			}
			if c := &s.conns[i]; w.head(l, c.timerAt) == nil || *w.head(l, c.timerAt) != h {
				return fmt.Errorf("record %d in the wrong wheel slot", i)
			}
			if s.conns[i].timerAt <= w.now {
				return fmt.Errorf("record %d due at tick %d, wheel at %d: missed", i, s.conns[i].timerAt, w.now)
			}
			prev = i
			cnt[l-tWheel0]++
		}
		return nil
	}
	for lv := range w.slots {
		for k := range w.slots[lv] {
			if err := walkSlot(w.slots[lv][k], tWheel0+uint8(lv)); err != nil {
				return err
			}
		}
	}
	if err := walkSlot(w.overflow, tOverflow); err != nil {
		return err
	}
	if cnt != w.cnt || w.n != cnt[0]+cnt[1]+cnt[2]+cnt[3] {
		return fmt.Errorf("wheel counts %v n %d, walked %v", w.cnt, w.n, cnt)
	}
	open, live := 0, make([]int, len(s.classes))
	for i := range s.conns {
		c := &s.conns[i]
		if c.list != tNone && !seen[i] {
			return fmt.Errorf("record %d says list %d but is not on it", i, c.list)
		}
		if c.state != stClosed {
			open++
			if c.list == tNone && (s.cfg.Mode == Server || c.uflags&uLive != 0) {
				return fmt.Errorf("record %d open in state %d with no timer: it waits forever", i, c.state)
			}
		}
		if s.classes == nil {
			continue
		}
		if c.state != stClosed && c.uflags&uLive == 0 {
			return fmt.Errorf("record %d open without a user", i)
		}
		if c.uflags&uLive == 0 {
			continue
		}
		if c.state == stClosed && c.uflags&uStop != 0 {
			return fmt.Errorf("record %d: a stopped user outlives its connection", i)
		}
		if c.state == stClosed && c.list == tNone {
			return fmt.Errorf("record %d: user with no connection and no timer: it waits forever", i)
		}
		if c.uflags&uStop == 0 {
			live[c.class]++
		}
	}
	ctr := &s.ctr
	if ctr.SocketsCurrent != ctr.SocketsOpened-ctr.SocketsClosed || ctr.SocketsCurrent != uint64(open) {
		return fmt.Errorf("SocketsCurrent %d, opened %d - closed %d, open records %d", ctr.SocketsCurrent,
			ctr.SocketsOpened, ctr.SocketsClosed, open)
	}
	for k := range s.classes {
		n, prev := 0, none
		for i := s.classes[k].head; i != none; i = s.conns[i].cnext {
			c := &s.conns[i]
			if c.uflags&(uLive|uStop) != uLive || int(c.class) != k || c.cprev != prev {
				return fmt.Errorf("class %d list: record %d flags %#x class %d cprev %d", k, i, c.uflags, c.class, c.cprev)
			}
			if n++; n > len(s.conns) {
				return fmt.Errorf("class %d list loops", k)
			}
			prev = i
		}
		if n != s.Users(k) || n != live[k] {
			return fmt.Errorf("class %d: Users %d, list %d, live records %d", k, s.Users(k), n, live[k])
		}
	}
	for k := range s.rows {
		if err := checkRow(&s.rows[k]); err != nil {
			return fmt.Errorf("row %d: %w", k, err)
		}
	}
	return nil
}

func checkRow(r *StatsRow) error {
	f := r.FailTimeout + r.FailReset + r.FailConnect + r.FailMalformed + r.FailStatusOther
	for _, sc := range r.FailStatus[:r.FailStatusN] {
		f += sc.Count
	}
	var h uint64
	for _, n := range r.Hist {
		h += n
	}
	if f != r.Failures || r.Failures > r.Requests || h != r.Requests {
		return fmt.Errorf("failures %d (kinds %d), requests %d, histogram %d", r.Failures, f, r.Requests, h)
	}
	return nil
}

// settle stops every user and runs the pair until both tables are empty:
// nothing hangs.
func settle(t testing.TB, p *pair) {
	t.Helper()
	for k := range p.c.Classes() {
		p.c.StopClass(p.now, k, len(p.c.conns))
	}
	for turn := 0; turn < 4000; turn++ {
		p.now += 2 * step
		p.poll()
		done := p.c.ctr.SocketsCurrent == 0 && p.s.ctr.SocketsCurrent == 0 && p.c.wheel.n == 0
		if done || turn%64 == 0 {
			if err := checkInvariants(p.c); err != nil {
				t.Fatalf("client, settling: %v", err)
			}
			if err := checkInvariants(p.s); err != nil {
				t.Fatalf("server, settling: %v", err)
			}
		}
		if done {
			return
		}
	}
	t.Fatalf("not settled after 8 s of fake time: client %+v\nserver %+v", p.c.Counters(), p.s.Counters())
}

// hostileSeed is a run that goes deep: users of every class launched,
// handshakes and responses through the pipe, then a few injected frames.
func hostileSeed() []byte {
	var b []byte
	b = append(b, 4, 0, 5, 0, 0, 0, 4, 1, 5, 0, 0, 0, 4, 2, 5, 0, 0, 0)
	for range 10 {
		b = append(b, 0, 3, 0, 0, 0, 0)
	}
	b = append(b, 2, 1, byte(wire.TCPAck|wire.TCPPsh), 0, 0, 9, 3, 2, byte(wire.TCPAck|wire.TCPPsh), 0, 0, 0)
	b = append(b, 6, 0, 0, 0, 0, 0, 5, 1, 2, 0, 0, 0)
	for range 10 {
		b = append(b, 1, 40, 0, 0, 0, 0)
	}
	return b
}

// FuzzHostileSequence drives a client running a Program and a server with
// sequences of steps (time passing with the peers talking, segments
// forged near each record's sequence numbers, launches, stops, second
// rounds, raw frames) and checks the invariants after each, then stops
// everything and checks that both tables empty.
func FuzzHostileSequence(f *testing.F) {
	f.Add(hostileSeed())
	seed := hostileSeed()
	for k := 9; k < 24; k++ { // each hostile response in the seed's flow
		s := append([]byte(nil), seed...)
		s = append(s, 2, byte(k), byte(wire.TCPAck|wire.TCPPsh), 0, 0, byte(k%len(hostileResponses)), 0, 20, 0, 0, 0, 0)
		f.Add(s)
	}
	f.Add(append(hostileSeed(), 1, 255, 1, 0, 0, 0, 0, 5, 0, 0, 0, 0, 1, 100, 1, 0, 0, 0, 4, 1, 5, 0, 0, 0, 1, 200, 1, 0, 0, 0))
	f.Add(append(hostileSeed(), 3, 0, byte(wire.TCPAck|wire.TCPPsh), 0, 0, 3, 3, 1, byte(wire.TCPRst), 5, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 6*80 {
			return
		}
		// A hang is a defect too: the worker dies with the input recorded.
		dog := time.AfterFunc(20*time.Second, func() { panic(fmt.Sprintf("hostile sequence hangs: %x", b)) })
		defer dog.Stop()
		runHostile(t, b)
	})
}

// runHostile runs the steps of b with the invariants checked after each,
// then settles.
func runHostile(t *testing.T, b []byte) {
	t.Helper()
	p := hostilePair(t)
	var st Stats
	for step := 0; len(b) >= 6; step++ {
		b = hostileStep(p, &st, b)
		if err := checkInvariants(p.c); err != nil {
			t.Fatalf("client, step %d: %v", step, err)
		}
		if err := checkInvariants(p.s); err != nil {
			t.Fatalf("server, step %d: %v", step, err)
		}
	}
	settle(t, p)
}

// TestHostileSequenceRandom runs 300 seeded random sequences of 200 steps
// (about a second): the fuzz target's checks without the fuzzing engine.
func TestHostileSequenceRandom(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for k := range 300 {
		b := make([]byte, 6*200)
		r.Read(b)
		t.Run(fmt.Sprint(k), func(t *testing.T) { runHostile(t, b) })
	}
}

// TestHostileSequenceSeed runs the fuzz seed's deep flow under the
// checker and asserts it reaches responses, so the fuzz target starts deep.
func TestHostileSequenceSeed(t *testing.T) {
	p := hostilePair(t)
	var st Stats
	b := hostileSeed()
	for len(b) >= 6 {
		b = hostileStep(p, &st, b)
		if err := checkInvariants(p.c); err != nil {
			t.Fatal(err)
		}
	}
	p.c.TakeStats(&st)
	if req, _ := rowTotals(&st); req == 0 || p.s.ctr.Served200 == 0 {
		t.Fatalf("the seed reached no response: requests %d, served %d", req, p.s.ctr.Served200)
	}
	settle(t, p)
}
