package zmtp

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// collector is a Handler that keeps copies of what it receives.
type collector struct {
	mu      sync.Mutex
	msgs    []string // identity + "|" + frames joined by "/"
	flushes int
	inCall  bool
	overlap bool
}

func (c *collector) HandleMessage(id string, frames [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inCall {
		c.overlap = true
	}
	parts := make([]string, len(frames))
	for i, f := range frames {
		parts[i] = string(f)
	}
	c.msgs = append(c.msgs, id+"|"+joinFrames(parts))
}

func (c *collector) FlushMessages() {
	c.mu.Lock()
	c.flushes++
	c.mu.Unlock()
}

func (c *collector) snapshot() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.msgs), c.flushes
}

func joinFrames(parts []string) string { return fmt.Sprintf("%q", parts) }

// servingMode is one of the Router's two ways of serving established
// connections: the Linux poller (where there is one) or a reader and a
// writer goroutine per connection.
type servingMode struct{ noPoller bool }

// opts is testOpts for a Router serving in mode m (Dealers ignore the
// mode, so tests may use it for every endpoint).
func (m servingMode) opts(log *logCapture) Options {
	o := testOpts(log)
	o.noPoller = m.noPoller
	return o
}

// servingModes runs f once per serving mode, as subtests "poller" and
// "goroutines". Every test that starts a Router runs through it.
func servingModes(t *testing.T, f func(t *testing.T, m servingMode)) {
	t.Run("poller", func(t *testing.T) { f(t, servingMode{}) })
	t.Run("goroutines", func(t *testing.T) { f(t, servingMode{noPoller: true}) })
}

func TestHandlerGetsEveryMessageInOrder(t *testing.T) {
	servingModes(t, func(t *testing.T, m servingMode) {
		o := m.opts(nil)
		c := &collector{}
		o.Handler = c
		o.PollInterval = time.Millisecond
		r := newRouter(t, o)
		const n = 600
		var want []string
		var dealers []*Dealer
		for w := range 3 {
			id := fmt.Sprintf("w%d", w)
			d := newDealer(t, endpointOf(r), id, testOpts(nil))
			defer d.Close()
			dealers = append(dealers, d)
			_ = id
		}
		for i := range n {
			w := i % 3
			id := fmt.Sprintf("w%d", w)
			// Sizes across the shared read buffer: small, 255/256 (the
			// long-header switch), and 100 KiB multi-frame messages.
			var frames [][]byte
			switch i % 5 {
			case 0:
				frames = [][]byte{[]byte(fmt.Sprintf("m%d", i))}
			case 1:
				frames = [][]byte{bytes.Repeat([]byte{'a' + byte(i%26)}, 255), []byte(fmt.Sprint(i))}
			case 2:
				frames = [][]byte{bytes.Repeat([]byte{'b'}, 256), {}, []byte(fmt.Sprint(i))}
			case 3:
				frames = [][]byte{bytes.Repeat([]byte{'c' + byte(i%20)}, 100<<10), []byte(fmt.Sprint(i))}
			default:
				frames = [][]byte{[]byte(fmt.Sprint(i))}
			}
			if err := dealers[w].Send(frames...); err != nil {
				t.Fatal(err)
			}
			parts := make([]string, len(frames))
			for j, f := range frames {
				parts[j] = string(f)
			}
			want = append(want, id+"|"+joinFrames(parts))
		}
		waitFor(t, waitLong, "all messages", func() bool { got, _ := c.snapshot(); return len(got) >= n })
		got, flushes := c.snapshot()
		// Per sender, order is kept; across senders it is not defined.
		for w := range 3 {
			prefix := fmt.Sprintf("w%d|", w)
			var g, wnt []string
			for _, m := range got {
				if len(m) >= len(prefix) && m[:len(prefix)] == prefix {
					g = append(g, m)
				}
			}
			for _, m := range want {
				if m[:len(prefix)] == prefix {
					wnt = append(wnt, m)
				}
			}
			if !slices.Equal(g, wnt) {
				t.Fatalf("sender %d: got %d messages, want %d (first difference matters)", w, len(g), len(wnt))
			}
		}
		if flushes < 1 || flushes > n {
			t.Fatalf("FlushMessages called %d times for %d messages", flushes, n)
		}
		if c.overlap {
			t.Fatal("Handler calls overlapped")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, _, err := r.Recv(ctx); err == nil {
			t.Fatal("Recv returned a message although a Handler is set")
		}
	})
}

func TestRouterServesBothWays(t *testing.T) {
	servingModes(t, func(t *testing.T, m servingMode) {
		o := m.opts(nil)
		r := newRouter(t, o)
		for i := range 3 {
			checkRouterWorks(t, r, fmt.Sprintf("peer-%d", i))
		}
	})
}

// A peer that sends its messages a byte at a time, with a PING between
// them, gets its messages delivered whole and its PONG.
func TestDrippedMessagesAndPing(t *testing.T) {
	servingModes(t, func(t *testing.T, m servingMode) {
		o := m.opts(nil)
		r := newRouter(t, o)
		nc := rawDial(t, r)
		defer nc.Close()
		br := rawHandshake(t, nc, appendGreeting(nil), "DEALER", "drip")
		var stream []byte
		stream = appendMessage(stream, [][]byte{[]byte("first"), bytes.Repeat([]byte{'x'}, 300)})
		stream = appendCommand(stream, "PING", []byte{0, 10, 'c', 't', 'x'})
		stream = appendMessage(stream, [][]byte{[]byte("second")})
		for i := range stream {
			if _, err := nc.Write(stream[i : i+1]); err != nil {
				t.Fatal(err)
			}
		}
		id, f := routerRecv(t, r)
		if id != "drip" || len(f) != 2 || string(f[0]) != "first" || len(f[1]) != 300 {
			t.Fatalf("first message: %q %d frames", id, len(f))
		}
		if _, f = routerRecv(t, r); string(f[0]) != "second" {
			t.Fatalf("second message %q", f)
		}
		nc.SetReadDeadline(time.Now().Add(waitLong))
		fr := frameReader{br: br, max: DefaultMaxFrameSize}
		flags, body, err := fr.readFrame(DefaultMaxFrameSize)
		if err != nil {
			t.Fatal(err)
		}
		name, data, _ := parseCommand(body)
		if flags&flagCommand == 0 || string(name) != "PONG" || string(data) != "ctx" {
			t.Fatalf("got flags %x %q %q; want PONG ctx", flags, name, data)
		}
	})
}

func framesKey(frames [][]byte) string {
	parts := make([]string, len(frames))
	for i, f := range frames {
		parts[i] = string(f)
	}
	return joinFrames(parts)
}
