package zmtp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) { servingModes(t, testRoundTrip) }

func testRoundTrip(t *testing.T, m servingMode) {
	r := newRouter(t, m.opts(nil))
	d := newDealer(t, endpointOf(r), "worker-1", m.opts(nil))
	waitEvent(t, d.Events(), Connected, waitLong)
	ev := waitEvent(t, r.Events(), Connected, waitLong)
	if ev.Identity != "worker-1" {
		t.Fatalf("Connected identity = %q; want worker-1", ev.Identity)
	}
	tests := []struct {
		name   string
		frames [][]byte
	}{
		{"single", strFrames("hello")},
		{"empty frame", [][]byte{{}}},
		{"multi-part", strFrames("a", "", "ccc")},
		{"255 bytes", [][]byte{bytes.Repeat([]byte("x"), 255)}},
		{"256 bytes", [][]byte{bytes.Repeat([]byte("y"), 256)}},
		{"4 MB", [][]byte{bytes.Repeat([]byte("0123456789abcdef"), 4<<20/16)}},
		{"4 MB multi-part", [][]byte{[]byte("head"), bytes.Repeat([]byte{7}, 4<<20), []byte("tail")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := d.Send(tt.frames...); err != nil {
				t.Fatalf("Dealer.Send: %v", err)
			}
			id, got := routerRecv(t, r)
			if id != "worker-1" || !framesEqual(got, tt.frames) {
				t.Fatalf("Router.Recv = %q, %d frames; want worker-1, %d frames", id, len(got), len(tt.frames))
			}
			if err := r.Send(id, tt.frames...); err != nil {
				t.Fatalf("Router.Send: %v", err)
			}
			if got := dealerRecv(t, d); !framesEqual(got, tt.frames) {
				t.Fatalf("Dealer.Recv = %d frames; want %d", len(got), len(tt.frames))
			}
		})
	}
}

func TestSendErrors(t *testing.T) { servingModes(t, testSendErrors) }

func testSendErrors(t *testing.T, m servingMode) {
	r := newRouter(t, m.opts(nil))
	if err := r.Send("nobody", []byte("x")); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("Send(unknown) = %v; want ErrUnknownPeer", err)
	}
	if err := r.Send("nobody"); !errors.Is(err, ErrEmptyMessage) {
		t.Fatalf("Send() = %v; want ErrEmptyMessage", err)
	}
	// A Dealer that never connects queues up to SendQueue messages.
	o := m.opts(nil)
	o.SendQueue = 3
	d := newDealer(t, "tcp://127.0.0.1:1", "q", o)
	for i := range 3 {
		if err := d.Send([]byte{byte(i)}); err != nil {
			t.Fatalf("Send #%d: %v", i, err)
		}
	}
	if err := d.Send([]byte("x")); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Send beyond SendQueue = %v; want ErrQueueFull", err)
	}
	if err := d.Send(); !errors.Is(err, ErrEmptyMessage) {
		t.Fatalf("Send() = %v; want ErrEmptyMessage", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v; want ErrClosed", err)
	}
	if err := d.Send([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close = %v; want ErrClosed", err)
	}
	if _, err := d.Recv(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recv after Close = %v; want ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Router.Close: %v", err)
	}
	if err := r.Send("x", []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Router.Send after Close = %v; want ErrClosed", err)
	}
	if _, _, err := r.Recv(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Router.Recv after Close = %v; want ErrClosed", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r2 := newRouter(t, m.opts(nil))
	if _, _, err := r2.Recv(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv(canceled) = %v; want context.Canceled", err)
	}
}

func TestAnonymousDealerGetsGeneratedIdentity(t *testing.T) {
	servingModes(t, testAnonymousDealerGetsGeneratedIdentity)
}

func testAnonymousDealerGetsGeneratedIdentity(t *testing.T, m servingMode) {
	r := newRouter(t, m.opts(nil))
	d := newDealer(t, endpointOf(r), "", m.opts(nil))
	if err := d.Send([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	id, _ := routerRecv(t, r)
	if len(id) != 5 || id[0] != 0 {
		t.Fatalf("generated identity = % x; want 5 bytes starting with 0x00", id)
	}
	if err := r.Send(id, []byte("back")); err != nil {
		t.Fatal(err)
	}
	if got := dealerRecv(t, d); string(got[0]) != "back" {
		t.Fatalf("Dealer.Recv = %q; want back", got)
	}
}

func TestDuplicateIdentityNewestWins(t *testing.T) { servingModes(t, testDuplicateIdentityNewestWins) }

func testDuplicateIdentityNewestWins(t *testing.T, m servingMode) {
	log := &logCapture{}
	r := newRouter(t, m.opts(log))
	slow := m.opts(nil)
	slow.ReconnectMin = time.Minute // once replaced, d1 stays away
	slow.ReconnectMax = time.Minute
	d1 := newDealer(t, endpointOf(r), "dup", slow)
	waitConnectedID(t, r.Events(), "dup")
	waitEvent(t, d1.Events(), Connected, waitLong)
	d2 := newDealer(t, endpointOf(r), "dup", m.opts(nil))
	ev := waitEvent(t, r.Events(), Disconnected, waitLong)
	if !errors.Is(ev.Err, ErrDuplicateIdentity) {
		t.Fatalf("old connection Disconnected.Err = %v; want ErrDuplicateIdentity", ev.Err)
	}
	waitConnectedID(t, r.Events(), "dup")
	waitEvent(t, d2.Events(), Connected, waitLong)
	if err := r.Send("dup", []byte("to newest")); err != nil {
		t.Fatal(err)
	}
	if got := dealerRecv(t, d2); string(got[0]) != "to newest" {
		t.Fatalf("newest dealer got %q", got)
	}
	waitFor(t, waitShort, "duplicate identity log", func() bool {
		for _, m := range log.messages() {
			if m == "zmtp: duplicate identity, newest connection wins; closing the old one" {
				return true
			}
		}
		return false
	})
}

func TestDealerReconnect(t *testing.T) { servingModes(t, testDealerReconnect) }

func testDealerReconnect(t *testing.T, m servingMode) {
	r := newRouter(t, m.opts(nil))
	d := newDealer(t, endpointOf(r), "rc", m.opts(nil))
	waitEvent(t, d.Events(), Connected, waitLong)
	waitConnectedID(t, r.Events(), "rc")
	d.Reconnect()
	ev := waitEvent(t, d.Events(), Disconnected, waitLong)
	if !errors.Is(ev.Err, errReconnect) {
		t.Fatalf("Disconnected.Err = %v; want errReconnect", ev.Err)
	}
	waitEvent(t, d.Events(), Connected, waitLong)
	if err := d.Send([]byte("after")); err != nil {
		t.Fatal(err)
	}
	id, f := routerRecv(t, r)
	if id != "rc" || string(f[0]) != "after" {
		t.Fatalf("Recv = %q %q", id, f)
	}
}

func TestManyDealersOrdered(t *testing.T) { servingModes(t, testManyDealersOrdered) }

func testManyDealersOrdered(t *testing.T, m servingMode) {
	r := newRouter(t, m.opts(nil))
	const dealers, msgs = 4, 500
	for i := range dealers {
		d := newDealer(t, endpointOf(r), fmt.Sprintf("d%d", i), m.opts(nil))
		go func() {
			for j := range msgs {
				for err := d.Send([]byte(fmt.Sprint(j))); err != nil; err = d.Send([]byte(fmt.Sprint(j))) {
					if !errors.Is(err, ErrQueueFull) {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	next := map[string]int{}
	for range dealers * msgs {
		id, f := routerRecv(t, r)
		if string(f[0]) != fmt.Sprint(next[id]) {
			t.Fatalf("from %s got %s; want %d", id, f[0], next[id])
		}
		next[id]++
	}
}

func TestCloseFlushesQueuedMessages(t *testing.T) { servingModes(t, testCloseFlushesQueuedMessages) }

func testCloseFlushesQueuedMessages(t *testing.T, m servingMode) {
	o := m.opts(nil)
	o.Linger = waitShort
	r, err := Listen("tcp://127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	d := newDealer(t, endpointOf(r), "w", o)
	waitConnectedID(t, r.Events(), "w")
	big := make([]byte, 1<<20)
	for range 20 { // more than the socket buffers hold
		if err := r.Send("w", big); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Send("w", []byte("quit")); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	for range 20 {
		dealerRecv(t, d)
	}
	if f := dealerRecv(t, d); string(f[0]) != "quit" {
		t.Fatalf("last message = %q; want quit", f[0])
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}

	// And a Dealer's Close flushes what it queued.
	r2 := newRouter(t, o)
	d2, err := Dial(endpointOf(r2), "w2", o)
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, d2.Events(), Connected, waitLong)
	for range 20 {
		d2.Send(big)
	}
	d2.Send([]byte("bye"))
	go func() { closed <- d2.Close() }()
	for range 20 {
		routerRecv(t, r2)
	}
	if _, f := routerRecv(t, r2); string(f[0]) != "bye" {
		t.Fatalf("last message = %q; want bye", f[0])
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

func TestIPv6Loopback(t *testing.T) { servingModes(t, testIPv6Loopback) }

func testIPv6Loopback(t *testing.T, m servingMode) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ln.Close()
	r, err := Listen("tcp://[::1]:0", m.opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ep := "tcp://" + r.Addr().String()
	if !strings.HasPrefix(ep, "tcp://[::1]:") {
		t.Fatalf("Addr = %v", r.Addr())
	}
	d := newDealer(t, ep, "v6", m.opts(nil))
	d.Send([]byte("over v6"))
	if id, f := routerRecv(t, r); id != "v6" || string(f[0]) != "over v6" {
		t.Fatalf("Recv = %q %q", id, f)
	}
}

func TestListenErrors(t *testing.T) { servingModes(t, testListenErrors) }

func testListenErrors(t *testing.T, m servingMode) {
	for _, ep := range []string{"tcp://127.0.0.1", "udp://127.0.0.1:0", "tcp://127.0.0.1:99999", "tcp://:0"} {
		if _, err := Listen(ep, Options{}); !errors.Is(err, ErrEndpoint) {
			t.Errorf("Listen(%q) = %v; want ErrEndpoint", ep, err)
		}
	}
	r := newRouter(t, m.opts(nil))
	if _, err := Listen(endpointOf(r), Options{}); err == nil || errors.Is(err, ErrEndpoint) {
		t.Errorf("Listen on a busy port = %v; want a listen error", err)
	}
	if _, err := Dial("tcp://*:5557", "x", Options{}); !errors.Is(err, ErrEndpoint) {
		t.Errorf("Dial(tcp://*:5557) = %v; want ErrEndpoint", err)
	}
}

func TestBackoff(t *testing.T) {
	lo, hi := 100*time.Millisecond, 5*time.Second
	d := lo
	var seq []time.Duration
	for range 8 {
		seq = append(seq, d)
		d = nextBackoff(d, hi)
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for i := range want {
		if seq[i] != want[i]*time.Millisecond {
			t.Fatalf("backoff sequence = %v; want %v ms", seq, want)
		}
	}
	for range 1000 {
		if j := jitter(time.Second); j < 500*time.Millisecond || j > time.Second {
			t.Fatalf("jitter(1s) = %v; want within [500ms, 1s]", j)
		}
	}
}
