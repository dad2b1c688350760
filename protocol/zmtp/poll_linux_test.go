//go:build linux

package zmtp

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"
)

// A Router with a PollInterval polls while messages come, blocks in
// epoll_wait after a quiet spell, and still delivers at once from there.
func TestPollerQuietThenBlocking(t *testing.T) {
	c := &collector{}
	o := testOpts(nil)
	o.Handler = c
	o.PollInterval = time.Millisecond
	r := newRouter(t, o)
	if r.poll == nil {
		t.Fatal("no poller on Linux")
	}
	d := newDealer(t, endpointOf(r), "q", testOpts(nil))
	defer d.Close()
	for i := range 3 {
		if err := d.Send([]byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, waitLong, "message", func() bool { got, _ := c.snapshot(); return len(got) == i+1 })
		// Quiet: after pollQuietRounds empty rounds the poller blocks.
		waitFor(t, waitLong, "poller blocking", r.poll.blocking.Load)
	}
	got, _ := c.snapshot()
	if len(got) != 3 || got[2] != `q|["c"]` {
		t.Fatalf("got %q", got)
	}
}

// When more peers are ready than one epoll_wait returns, the poller reads
// the rest at once instead of an interval later.
func TestPollerFullBatchReadsOnAtOnce(t *testing.T) {
	defer func(n int) { pollEvents = n }(pollEvents)
	pollEvents = 4
	c := &collector{}
	o := testOpts(nil)
	o.Handler = c
	const interval = time.Second
	o.PollInterval = interval
	r := newRouter(t, o)
	const peers = 20
	var ds []*Dealer
	for i := range peers {
		d := newDealer(t, endpointOf(r), fmt.Sprintf("p%d", i), testOpts(nil))
		defer d.Close()
		ds = append(ds, d)
	}
	waitFor(t, waitLong, "peers connected", func() bool { return len(r.Peers()) == peers })
	for _, d := range ds {
		if err := d.Send([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, waitLong, "first message", func() bool { got, _ := c.snapshot(); return len(got) > 0 })
	first := time.Now()
	// One interval after the round that read the first message, the next
	// round reads every other message (five batches of four); reading one
	// batch per interval would take four intervals.
	waitFor(t, waitLong, "all messages", func() bool { got, _ := c.snapshot(); return len(got) == peers })
	if took := time.Since(first); took > interval*3/2 {
		t.Fatalf("the last message came %v after the first; want under %v", took, interval*3/2)
	}
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
