package zmtp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawDial opens a plain TCP connection to the Router.
func rawDial(t testing.TB, r *Router) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", r.Addr().String(), waitShort)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// readAll reads from nc until EOF or error; it fails the test if the
// connection stays open past the deadline.
func readAll(t testing.TB, nc net.Conn, timeout time.Duration) []byte {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(timeout))
	b, err := io.ReadAll(nc)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open after %v (read %d bytes)", timeout, len(b))
	}
	return b
}

// rawHandshake performs a client handshake by hand and returns a reader
// positioned after the server's READY.
func rawHandshake(t testing.TB, nc net.Conn, greeting []byte, socketType, identity string) *bufio.Reader {
	t.Helper()
	nc.SetDeadline(time.Now().Add(waitLong))
	defer nc.SetDeadline(time.Time{})
	if _, err := nc.Write(appendReady(greeting, socketType, identity)); err != nil {
		t.Fatalf("write hello: %v", err)
	}
	br := bufio.NewReader(nc)
	var g [greetingSize]byte
	if _, err := readGreeting(br, &g); err != nil {
		t.Fatalf("server greeting: %v", err)
	}
	fr := frameReader{br: br, max: 1 << 20}
	flags, body, err := fr.readFrame(fr.max)
	if err != nil || flags&flagCommand == 0 {
		t.Fatalf("server READY: flags %#x, %v", flags, err)
	}
	if name, _, _ := parseCommand(body); string(name) != "READY" {
		t.Fatalf("server sent %q; want READY", name)
	}
	return br
}

// checkRouterWorks round-trips one message through a fresh Dealer.
func checkRouterWorks(t testing.TB, r *Router, id string) {
	t.Helper()
	d := newDealer(t, endpointOf(r), id, testOpts(nil))
	defer d.Close()
	if err := d.Send([]byte("ping " + id)); err != nil {
		t.Fatal(err)
	}
	for {
		got, f := routerRecv(t, r)
		if got == id {
			if string(f[0]) != "ping "+id {
				t.Fatalf("router got %q from %s", f, id)
			}
			break
		}
	}
	if err := r.Send(id, []byte("pong")); err != nil {
		t.Fatal(err)
	}
	if f := dealerRecv(t, d); string(f[0]) != "pong" {
		t.Fatalf("dealer got %q", f)
	}
}

func TestHostilePeersRejected(t *testing.T) { servingModes(t, testHostilePeersRejected) }

func testHostilePeersRejected(t *testing.T, m servingMode) {
	prop := func(name, value string) []byte { return appendProperty(nil, name, value) }
	tests := []struct {
		name      string
		send      []byte
		wantErr   error
		wantERROR bool // the Router answers with an ERROR command
	}{
		{"garbage bytes", bytes.Repeat([]byte{0x13, 0x37}, 100), ErrBadGreeting, false},
		{"HTTP request", []byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: curl\r\n\r\n"), ErrBadGreeting, false},
		{"ZMTP 2.0 greeting", []byte{0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 0x01, 0x05, 0x00, 0x00}, ErrVersion, false},
		{"ZMTP 1.0", []byte{0x01, 0x00, 'h', 'i'}, ErrBadGreeting, false},
		{"CURVE mechanism", greetingBytes(3, 0, "CURVE"), ErrMechanism, false},
		{"PUB socket type", clientHello("PUB", ""), ErrSocketType, true},
		{"no socket type", append(appendGreeting(nil), appendCommand(nil, "READY", prop("Identity", "x"))...), ErrSocketType, true},
		{"identity starting with 0x00", clientHello("DEALER", "\x00abcd"), ErrInvalidIdentity, true},
		{"message before READY", append(appendGreeting(nil), appendMessage(nil, strFrames("hi"))...), ErrProtocol, true},
		{"unknown command before READY", append(appendGreeting(nil), appendCommand(nil, "HELLO", nil)...), ErrProtocol, true},
		{"3 GiB command during handshake", append(appendGreeting(nil), longHeader(flagCommand, 3<<30)...), ErrFrameTooLarge, true},
		{"2^50 command during handshake", append(appendGreeting(nil), longHeader(flagCommand, 1<<50)...), ErrFrameTooLarge, true},
		{"ERROR instead of READY", append(appendGreeting(nil), appendError(nil, "no thanks")...), ErrPeerError, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &logCapture{}
			r := newRouter(t, m.opts(log))
			nc := rawDial(t, r)
			if _, err := nc.Write(tt.send); err != nil {
				t.Fatalf("write: %v", err)
			}
			got := readAll(t, nc, waitLong)
			log.waitErr(t, tt.wantErr)
			if len(got) < greetingSize {
				t.Fatalf("server sent %d bytes; want at least its greeting", len(got))
			}
			if tt.wantERROR {
				if !bytes.Contains(got, []byte("\x05ERROR")) {
					t.Fatalf("server did not send an ERROR command: % x", got[greetingSize:])
				}
			}
			if len(r.Peers()) != 0 {
				t.Fatalf("rejected peer registered: %q", r.Peers())
			}
			checkRouterWorks(t, r, "after-"+tt.name)
		})
	}
}

func TestZMTP30PeerAndPing(t *testing.T) { servingModes(t, testZMTP30PeerAndPing) }

func testZMTP30PeerAndPing(t *testing.T, m servingMode) {
	r := newRouter(t, m.opts(nil))
	nc := rawDial(t, r)
	br := rawHandshake(t, nc, greetingBytes(3, 0, "NULL"), "DEALER", "old-peer")
	ev := waitConnectedID(t, r.Events(), "old-peer")
	if ev.Remote.String() != nc.LocalAddr().String() {
		t.Fatalf("Connected.Remote = %v; want %v", ev.Remote, nc.LocalAddr())
	}
	// PING with TTL and context: the Router answers PONG with the context.
	if _, err := nc.Write(appendCommand(nil, "PING", []byte{0, 100, 'c', 't', 'x'})); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(waitLong))
	fr := frameReader{br: br, max: 1 << 20}
	flags, body, err := fr.readFrame(fr.max)
	if err != nil || flags != flagCommand {
		t.Fatalf("after PING read %#x, %v", flags, err)
	}
	name, data, _ := parseCommand(body)
	if string(name) != "PONG" || string(data) != "ctx" {
		t.Fatalf("got command %q %q; want PONG ctx", name, data)
	}
	// Messages flow both ways with the hand-made peer.
	if _, err := nc.Write(appendMessage(nil, strFrames("a", "b"))); err != nil {
		t.Fatal(err)
	}
	if id, f := routerRecv(t, r); id != "old-peer" || !framesEqual(f, strFrames("a", "b")) {
		t.Fatalf("Recv = %q %q", id, f)
	}
	if err := r.Send("old-peer", []byte("x"), []byte("yz")); err != nil {
		t.Fatal(err)
	}
	f, err := fr.readMessage(func(name, data []byte) error { return nil })
	if err != nil || !framesEqual(f, strFrames("x", "yz")) {
		t.Fatalf("peer read %q, %v", f, err)
	}
}

func TestSilentConnection(t *testing.T) { servingModes(t, testSilentConnection) }

func testSilentConnection(t *testing.T, m servingMode) {
	t.Run("does not block other peers", func(t *testing.T) {
		o := m.opts(nil)
		o.HandshakeTimeout = time.Minute
		r := newRouter(t, o)
		var silent []net.Conn
		for range 5 {
			silent = append(silent, rawDial(t, r))
		}
		half := rawDial(t, r)
		half.Write(appendGreeting(nil)[:20]) // half a greeting, then silence
		checkRouterWorks(t, r, "real-peer")
		// The silent connections are still open: the real peer did not wait
		// for their handshake deadline.
		for _, nc := range append(silent, half) {
			nc.SetReadDeadline(time.Now().Add(waitLong))
			if _, err := io.ReadFull(nc, make([]byte, greetingSize)); err != nil {
				t.Fatalf("silent connection: reading the server greeting: %v", err)
			}
			nc.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			var b [1]byte
			if _, err := nc.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("silent connection closed early: %v", err)
			}
		}
	})
	t.Run("is closed at the handshake deadline", func(t *testing.T) {
		log := &logCapture{}
		o := m.opts(log)
		o.HandshakeTimeout = 200 * time.Millisecond
		r := newRouter(t, o)
		nc := rawDial(t, r)
		start := time.Now()
		readAll(t, nc, waitLong)
		if el := time.Since(start); el < o.HandshakeTimeout/2 {
			t.Fatalf("closed after %v; want about %v", el, o.HandshakeTimeout)
		}
		log.waitErr(t, ErrHandshakeTimeout)
	})
}

func TestHugeFrameHeaderAfterHandshake(t *testing.T) {
	servingModes(t, testHugeFrameHeaderAfterHandshake)
}

func testHugeFrameHeaderAfterHandshake(t *testing.T, m servingMode) {
	for _, size := range []uint64{3 << 30, 1 << 50} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			log := &logCapture{}
			r := newRouter(t, m.opts(log))
			nc := rawDial(t, r)
			rawHandshake(t, nc, appendGreeting(nil), "DEALER", "huge")
			waitConnectedID(t, r.Events(), "huge")
			if _, err := nc.Write(longHeader(0, size)); err != nil {
				t.Fatal(err)
			}
			ev := waitEvent(t, r.Events(), Disconnected, waitLong)
			if !errors.Is(ev.Err, ErrFrameTooLarge) {
				t.Fatalf("Disconnected.Err = %v; want ErrFrameTooLarge", ev.Err)
			}
			readAll(t, nc, waitLong)
			log.waitErr(t, ErrFrameTooLarge)
			checkRouterWorks(t, r, "after")
		})
	}
}

// fdCount returns the number of open file descriptors of this process.
func fdCount(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

func TestFailedHandshakesLeakNoFD(t *testing.T) { servingModes(t, testFailedHandshakesLeakNoFD) }

func testFailedHandshakesLeakNoFD(t *testing.T, m servingMode) {
	o := m.opts(nil)
	o.HandshakeTimeout = 2 * time.Second
	r := newRouter(t, o)
	checkRouterWorks(t, r, "warmup")
	base := fdCount(t)
	probes := [][]byte{
		nil, // connect and close
		[]byte("GET / HTTP/1.0\r\n\r\n"),
		appendGreeting(nil)[:30],
		{0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 1, 5},
		clientHello("PUB", ""),
		append(clientHello("DEALER", "probe"), longHeader(0, 1<<50)...),
	}
	const n = 300
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			nc, err := net.DialTimeout("tcp", r.Addr().String(), waitShort)
			if err != nil {
				t.Errorf("probe %d: %v", i, err)
				return
			}
			if p := probes[i%len(probes)]; p != nil {
				nc.Write(p)
			}
			nc.Close()
		}()
	}
	wg.Wait()
	waitFor(t, waitLong, "fd count back to baseline", func() bool { return fdCount(t) <= base+2 })
	waitFor(t, waitLong, "connection goroutines gone", func() bool { return r.g.running() == r.baseGoroutines() })
	// A probe that completed its handshake is a peer until the poller
	// reads its close: the fd count can be back before that.
	waitFor(t, waitLong, "no peers after the probes", func() bool { return len(r.Peers()) == 0 })
	checkRouterWorks(t, r, "after-probes")
}

func TestFrozenPeerDoesNotStallOthers(t *testing.T) {
	servingModes(t, testFrozenPeerDoesNotStallOthers)
}

func testFrozenPeerDoesNotStallOthers(t *testing.T, m servingMode) {
	o := m.opts(nil)
	o.WriteTimeout = 500 * time.Millisecond
	o.SendQueue = 1000 // more than the test sends: the healthy queue never fills
	r := newRouter(t, o)
	frozen := rawDial(t, r)
	frozen.(*net.TCPConn).SetReadBuffer(4096)
	rawHandshake(t, frozen, appendGreeting(nil), "DEALER", "frozen")
	waitConnectedID(t, r.Events(), "frozen")
	healthy := newDealer(t, endpointOf(r), "healthy", m.opts(nil))
	waitConnectedID(t, r.Events(), "healthy")

	big := make([]byte, 64<<10)
	const n = 300
	var slowest time.Duration
	done := make(chan error, 1)
	go func() {
		for i := range n {
			f, err := healthy.Recv(t.Context())
			if err != nil || string(f[0]) != fmt.Sprint(i) {
				done <- fmt.Errorf("healthy message %d: %q, %w", i, f, err)
				return
			}
		}
		done <- nil
	}()
	for i := range n {
		start := time.Now()
		err := r.Send("frozen", big)
		if err != nil && !errors.Is(err, ErrQueueFull) && !errors.Is(err, ErrUnknownPeer) {
			t.Fatalf("Send(frozen) = %v", err)
		}
		if err := r.Send("healthy", []byte(fmt.Sprint(i))); err != nil {
			t.Fatalf("Send(healthy) = %v", err)
		}
		slowest = max(slowest, time.Since(start))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLong):
		t.Fatal("healthy peer stalled behind the frozen one")
	}
	if slowest > 2*time.Second {
		t.Fatalf("Send blocked for %v", slowest)
	}
	ev := waitEvent(t, r.Events(), Disconnected, waitLong)
	if ev.Identity != "frozen" || !errors.Is(ev.Err, ErrWriteTimeout) {
		t.Fatalf("Disconnected = %q %v; want frozen, ErrWriteTimeout", ev.Identity, ev.Err)
	}
	if err := r.Send("frozen", []byte("x")); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("Send to dropped peer = %v; want ErrUnknownPeer", err)
	}
}

// fakeServer accepts connections and runs serve for each until Close.
type fakeServer struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	cons []net.Conn
}

func newFakeServer(t testing.TB, serve func(nc net.Conn)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.cons = append(s.cons, nc)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				serve(nc)
			}()
		}
	}()
	t.Cleanup(s.Close)
	return s
}

func (s *fakeServer) endpoint() string { return "tcp://" + s.ln.Addr().String() }

func (s *fakeServer) Close() {
	s.ln.Close()
	s.mu.Lock()
	for _, nc := range s.cons {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// serverHandshake completes a handshake as a ROUTER on nc.
func serverHandshake(nc net.Conn) (*bufio.Reader, error) {
	br := bufio.NewReader(nc)
	nc.SetDeadline(time.Now().Add(waitLong))
	_, err := handshake(br, nc, socketRouter, "", 1<<20)
	nc.SetDeadline(time.Time{})
	return br, err
}

func reset(nc net.Conn) {
	nc.(*net.TCPConn).SetLinger(0)
	nc.Close()
}

func TestDealerRejectsHugeFrame(t *testing.T) {
	var conns atomic.Int32
	s := newFakeServer(t, func(nc net.Conn) {
		if _, err := serverHandshake(nc); err != nil {
			return
		}
		conns.Add(1)
		nc.Write(longHeader(0, 1<<50))
		io.Copy(io.Discard, nc)
	})
	d := newDealer(t, s.endpoint(), "d", testOpts(nil))
	waitEvent(t, d.Events(), Connected, waitLong)
	ev := waitEvent(t, d.Events(), Disconnected, waitLong)
	if !errors.Is(ev.Err, ErrFrameTooLarge) {
		t.Fatalf("Disconnected.Err = %v; want ErrFrameTooLarge", ev.Err)
	}
	waitEvent(t, d.Events(), Connected, waitLong) // and it reconnects
}

func TestDealerRejectsIncompatiblePeer(t *testing.T) {
	log := &logCapture{}
	s := newFakeServer(t, func(nc net.Conn) {
		br := bufio.NewReader(nc)
		nc.SetDeadline(time.Now().Add(waitLong))
		handshake(br, nc, "PUB", "", 1<<20)
		nc.Close()
	})
	d := newDealer(t, s.endpoint(), "d", testOpts(log))
	log.waitErr(t, ErrSocketType)
	d.Close()
}

func TestResettingPeerDuringFlood(t *testing.T) { servingModes(t, testResettingPeerDuringFlood) }

func testResettingPeerDuringFlood(t *testing.T, m servingMode) {
	t.Run("dealer", func(t *testing.T) {
		var conns atomic.Int32
		s := newFakeServer(t, func(nc net.Conn) {
			n := conns.Add(1)
			if n%3 == 0 { // sometimes reset before the handshake
				reset(nc)
				return
			}
			if _, err := serverHandshake(nc); err != nil {
				reset(nc)
				return
			}
			nc.Read(make([]byte, 4096*int(n%4+1)))
			reset(nc)
		})
		d := newDealer(t, s.endpoint(), "flooder", m.opts(nil))
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				payload := make([]byte, 2000)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := d.Send(payload); errors.Is(err, ErrClosed) {
						return
					}
				}
			}()
		}
		waitFor(t, waitLong, "20 reset connections", func() bool { return conns.Load() >= 20 })
		closed := make(chan error)
		go func() { closed <- d.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
		case <-time.After(waitLong):
			t.Fatal("Dealer.Close deadlocked during a reset flood")
		}
		close(stop)
		wg.Wait()
	})
	t.Run("router", func(t *testing.T) {
		r := newRouter(t, m.opts(nil))
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // flood every peer the router knows
			defer wg.Done()
			payload := make([]byte, 2000)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, id := range r.Peers() {
					if !strings.HasPrefix(id, "resetter") {
						continue
					}
					r.Send(id, payload)
				}
				time.Sleep(100 * time.Microsecond)
			}
		}()
		for i := range 50 {
			nc := rawDial(t, r)
			rawHandshake(t, nc, appendGreeting(nil), "DEALER", fmt.Sprintf("resetter-%d", i%5))
			nc.Write(appendMessage(nil, strFrames("x")))
			nc.Read(make([]byte, 1000))
			reset(nc)
		}
		checkRouterWorks(t, r, "healthy")
		close(stop)
		wg.Wait()
		closed := make(chan error)
		go func() { closed <- r.Close() }()
		select {
		case <-closed:
		case <-time.After(waitLong):
			t.Fatal("Router.Close deadlocked after a reset flood")
		}
	})
}

func TestRouterRestartUnderDealers(t *testing.T) { servingModes(t, testRouterRestartUnderDealers) }

func testRouterRestartUnderDealers(t *testing.T, m servingMode) {
	r1, err := Listen("tcp://127.0.0.1:0", m.opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	addr := r1.Addr().String()
	const n = 5
	var dealers []*Dealer
	for i := range n {
		d := newDealer(t, "tcp://"+addr, fmt.Sprintf("w%d", i), m.opts(nil))
		waitEvent(t, d.Events(), Connected, waitLong)
		dealers = append(dealers, d)
	}
	if err := r1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, d := range dealers {
		waitEvent(t, d.Events(), Disconnected, waitLong)
		// Sent while the router is down: queued, delivered after reconnecting.
		if err := d.Send([]byte(fmt.Sprintf("queued-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	r2, err := Listen("tcp://"+addr, m.opts(nil))
	if err != nil {
		t.Fatalf("Listen on the same port again: %v", err)
	}
	t.Cleanup(func() { r2.Close() })
	for _, d := range dealers {
		waitEvent(t, d.Events(), Connected, waitLong)
	}
	got := map[string]string{}
	for range n {
		id, f := routerRecv(t, r2)
		got[id] = string(f[0])
	}
	for i := range n {
		if id := fmt.Sprintf("w%d", i); got[id] != fmt.Sprintf("queued-%d", i) {
			t.Fatalf("restarted router got %q from %s; want queued-%d (all: %q)", got[id], id, i, got)
		}
	}
}

func TestManyDealersAtOnce(t *testing.T) { servingModes(t, testManyDealersAtOnce) }

func testManyDealersAtOnce(t *testing.T, m servingMode) {
	r := newRouter(t, m.opts(nil))
	const n = 200
	dealers := make([]*Dealer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Dial(endpointOf(r), fmt.Sprintf("many-%d", i), m.opts(nil))
			if err != nil {
				t.Error(err)
				return
			}
			dealers[i] = d
			d.Send([]byte(fmt.Sprintf("hello-%d", i)))
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, d := range dealers {
			if d != nil {
				d.Close()
			}
		}
	})
	if t.Failed() {
		return
	}
	seen := map[string]bool{}
	for len(seen) < n {
		id, f := routerRecv(t, r)
		if string(f[0]) != "hello-"+id[len("many-"):] || seen[id] {
			t.Fatalf("got %q from %q", f[0], id)
		}
		seen[id] = true
		if err := r.Send(id, []byte("welcome")); err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range dealers {
		if f := dealerRecv(t, d); string(f[0]) != "welcome" {
			t.Fatalf("dealer %d got %q", i, f)
		}
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) { servingModes(t, testCloseLeavesNoGoroutines) }

func testCloseLeavesNoGoroutines(t *testing.T, m servingMode) {
	r, err := Listen("tcp://127.0.0.1:0", m.opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	var dealers []*Dealer
	for i := range 10 {
		d, err := Dial(endpointOf(r), fmt.Sprint(i), m.opts(nil))
		if err != nil {
			t.Fatal(err)
		}
		dealers = append(dealers, d)
		d.Send([]byte("x"))
	}
	for range 10 {
		id, _ := routerRecv(t, r)
		r.Send(id, []byte("y"))
	}
	silent := rawDial(t, r) // a connection in handshake
	_ = silent
	undialable, _ := Dial("tcp://127.0.0.1:1", "nowhere", m.opts(nil)) // a dealer in backoff
	dealers = append(dealers, undialable)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dealers {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if n := d.g.running(); n != 0 {
			t.Fatalf("Dealer goroutines after Close = %d", n)
		}
		if _, ok := <-d.Events(); ok {
			for range d.Events() {
			}
		}
	}
	if n := r.g.running(); n != 0 {
		t.Fatalf("Router goroutines after Close = %d", n)
	}
	if err := checkNoLeakedGoroutines(waitShort); err != nil {
		t.Fatal(err)
	}
}
