package zmtp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
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

// servingModes runs f with the Router's Linux poller (where there is one)
// and with goroutines per connection.
func servingModes(t *testing.T, f func(t *testing.T, o Options)) {
	t.Run("poller", func(t *testing.T) { f(t, testOpts(nil)) })
	t.Run("goroutines", func(t *testing.T) {
		o := testOpts(nil)
		o.noPoller = true
		f(t, o)
	})
}

func TestHandlerGetsEveryMessageInOrder(t *testing.T) {
	servingModes(t, func(t *testing.T, o Options) {
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
	servingModes(t, func(t *testing.T, o Options) {
		r := newRouter(t, o)
		for i := range 3 {
			checkRouterWorks(t, r, fmt.Sprintf("peer-%d", i))
		}
	})
}

// A peer that sends its messages a byte at a time, with a PING between
// them, gets its messages delivered whole and its PONG.
func TestDrippedMessagesAndPing(t *testing.T) {
	servingModes(t, func(t *testing.T, o Options) {
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

// FuzzPollerParse feeds a byte stream, cut into chunks, to the poller's
// parser and checks that it finds the messages, and the error, that the
// goroutine path's frameReader finds in the same stream.
func FuzzPollerParse(f *testing.F) {
	var payloads [][]byte
	for _, s := range locustSeeds {
		payloads = append(payloads, []byte(s))
	}
	msgs := appendMessage(nil, payloads[:1])
	msgs = appendMessage(msgs, [][]byte{payloads[1], []byte("extra")})
	msgs = appendCommand(msgs, "PING", []byte{0, 5, 'x'})
	msgs = appendMessage(msgs, [][]byte{make([]byte, 300)})
	for _, chunk := range []byte{1, 3, 64, 255} {
		f.Add(chunk, msgs)
	}
	f.Add(byte(9), longHeader(0, 3<<30))
	f.Add(byte(9), append(appendMessage(nil, [][]byte{[]byte("a")}), longHeader(flagMore, 1<<50)...))
	f.Add(byte(2), []byte{flagMore, 1, 'a', flagCommand, 5, 4, 'P', 'I', 'N', 'G'})
	f.Add(byte(2), []byte{0x80, 0})
	f.Fuzz(func(t *testing.T, chunk byte, stream []byte) {
		const max = 1 << 20
		n := int(chunk%64) + 1

		// Reference: the goroutine path.
		var want []string
		fr := frameReader{br: bufio.NewReader(bytes.NewReader(stream)), max: max}
		var wantErr error
		ra, rb := net.Pipe()
		defer ra.Close()
		defer rb.Close()
		ref := newConn(ra, peerInfo{})
		for {
			frames, err := fr.readMessage(ref.onCommand)
			if err != nil {
				wantErr = err
				break
			}
			want = append(want, framesKey(frames))
		}

		// The poller's parser, fed chunk by chunk.
		c := &collector{}
		r := &Router{opts: Options{MaxFrameSize: max}.withDefaults(), handler: c, closing: make(chan struct{})}
		pl := &poller{r: r}
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		cn := newConn(a, peerInfo{})
		raw := &rawConn{pl: pl, p: &peer{id: "", c: cn, q: newSendQueue(10, 1<<20)}}
		raw.mu.closed = true // nothing is written
		cn.raw = raw
		var gotErr error
		for off := 0; off < len(stream) && gotErr == nil; off += n {
			piece := stream[off:min(off+n, len(stream))]
			data := piece
			own := false
			if len(raw.pend) > 0 {
				data = append(raw.pend, piece...)
				raw.pend = nil
				own = true
			}
			used, _, donated, err := pl.parse(raw, data, own)
			if donated {
				continue // one whole message, now the receiver's
			}
			if err != nil {
				gotErr = err
				break
			}
			rest := data[used:]
			if len(rest) > 0 {
				raw.pend = append(getBuf(len(rest)), rest...)
			}
			if own {
				putBuf(data)
			}
		}
		got, _ := c.snapshot()
		for i := range got {
			got[i] = got[i][1:] // the empty identity's "|"
		}
		if !slices.Equal(got, want) {
			t.Fatalf("messages differ:\n got %q\nwant %q", got, want)
		}
		// frameReader ends with io.EOF (clean end), io.ErrUnexpectedEOF
		// (a partial message) or a protocol error; the poller's parser has
		// nothing pending, bytes pending, or the same error.
		switch {
		case wantErr.Error() == "EOF":
			if gotErr != nil || len(raw.pend) != 0 {
				t.Fatalf("clean end: poller err %v, %d bytes pending", gotErr, len(raw.pend))
			}
		case wantErr.Error() == "unexpected EOF":
			if gotErr != nil || len(raw.pend) == 0 {
				t.Fatalf("truncated end: poller err %v, %d bytes pending", gotErr, len(raw.pend))
			}
		default:
			if gotErr == nil || gotErr.Error() != wantErr.Error() {
				t.Fatalf("error: poller %v, frameReader %v", gotErr, wantErr)
			}
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
