package stack

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// wantObject is the kernel target's /bytes/n body.
func wantObject(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// fetch opens a connection from port to the evil client's server, sends
// reqs in one segment and reads the server's byte stream, acknowledging
// every in-order segment with window win (in-order data only: a segment
// beyond the next byte is dropped, as the stack's client does). It stops
// after quiet turns of 1 ms with nothing new, or at max bytes.
func fetch(e *evilClient, port uint16, reqs string, win uint16, max int) []byte {
	e.t.Helper()
	srv, seq := e.handshake(clientIP, port, 1000)
	e.send(clientIP, port, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck, Window: win}, []byte(reqs))
	seq += uint32(len(reqs))
	var got []byte
	next := srv
	for quiet := 0; quiet < 3000 && len(got) < max; {
		segs := e.recv()
		moved := false
		for _, s := range segs {
			if p := s.Payload(); len(p) > 0 && s.Seq() == next {
				got = append(got, p...)
				next += uint32(len(p))
				moved = true
			}
		}
		if moved {
			quiet = 0
			e.send(clientIP, port, wire.TCPFields{Seq: seq, Ack: next, Flags: wire.TCPAck, Window: win}, nil)
			continue
		}
		quiet++
		e.now += int64(time.Millisecond)
		e.s.Poll(e.now)
	}
	return got
}

// readAll parses the responses in stream for the requests' methods.
func readAll(t *testing.T, stream []byte, methods ...string) []*http.Response {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(stream))
	var out []*http.Response
	for _, m := range methods {
		resp, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			t.Fatalf("response %d of %d (%s): %v\nstream %q", len(out)+1, len(methods), m, err, stream[:min(len(stream), 400)])
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("response %d body: %v", len(out)+1, err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		out = append(out, resp)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("%d bytes after the last response: %q", len(rest), rest[:min(len(rest), 100)])
	}
	return out
}

func bodyOf(r *http.Response) []byte { b, _ := io.ReadAll(r.Body); return b }

// TestObjectsWhole: /bytes/<n> objects of every size class arrive whole,
// with the kernel target's headers, through windows from 100 bytes to
// 64 KiB; HEAD gets the headers only; bad sizes get the kernel target's
// 400 and its message; the page still serves other paths.
func TestObjectsWhole(t *testing.T) {
	for _, win := range []uint16{100, 1000, 65535} {
		for _, tt := range []struct {
			path   string
			status int
			size   int // -1: not an object
		}{
			{"/bytes/0", 200, 0}, {"/bytes/1", 200, 1}, {"/bytes/25", 200, 25}, {"/bytes/1460", 200, 1460},
			{"/bytes/65536", 200, 65536}, {"/bytes/300001", 200, 300001},
			{"/bytes/16777217", 400, -1}, {"/bytes/abc", 400, -1}, {"/bytes/", 400, -1}, {"/", 200, -1},
		} {
			if win == 100 && tt.size > 1460 {
				continue // thousands of segments: the 1000-byte window covers the slicing
			}
			t.Run(strconv.Itoa(int(win))+tt.path, func(t *testing.T) {
				e := newEvilClient(t, 4)
				stream := fetch(e, 10000, "GET "+tt.path+" HTTP/1.1\r\nHost: x\r\n\r\n", win, 1<<30)
				r := readAll(t, stream, "GET")[0]
				body := bodyOf(r)
				switch {
				case r.StatusCode != tt.status:
					t.Fatalf("status %d; want %d", r.StatusCode, tt.status)
				case tt.status == 400 && (string(body) != BadObjectSizeBody || r.Header.Get("Content-Type") != "text/plain; charset=utf-8"):
					t.Fatalf("400 body %q, type %q; want the kernel target's", body, r.Header.Get("Content-Type"))
				case tt.size >= 0 && (!bytes.Equal(body, wantObject(tt.size)) || r.Header.Get("Content-Type") != "application/octet-stream"):
					t.Fatalf("object of %d bytes, type %q; want %d bytes of the pattern", len(body), r.Header.Get("Content-Type"), tt.size)
				case tt.path == "/" && len(body) != DefaultBodySize:
					t.Fatalf("page of %d bytes", len(body))
				}
				c := e.s.Counters()
				if c.SocketsFailed != 0 || c.SocketsCurrent != 1 {
					t.Fatalf("failed %d, current %d; want the connection kept alive", c.SocketsFailed, c.SocketsCurrent)
				}
			})
		}
	}
}

// TestObjectsPipelinedAndHead: requests pipelined in one segment are
// answered in order, HEAD with the GET's headers and no body.
func TestObjectsPipelinedAndHead(t *testing.T) {
	e := newEvilClient(t, 4)
	reqs := "GET /bytes/3000 HTTP/1.1\r\n\r\nHEAD /bytes/5000 HTTP/1.1\r\n\r\nGET /bytes/-1 HTTP/1.1\r\n\r\n" +
		"HEAD / HTTP/1.1\r\n\r\nPUT /bytes/1 HTTP/1.1\r\n\r\nHEAD /bytes/x HTTP/1.1\r\n\r\nGET /bytes/7?q HTTP/1.1\r\n\r\n"
	rs := readAll(t, fetch(e, 10000, reqs, 65535, 1<<30), "GET", "HEAD", "GET", "HEAD", "PUT", "HEAD", "GET")
	for k, w := range []struct {
		status int
		cl     int64
		body   []byte
	}{
		{200, 3000, wantObject(3000)}, {200, 5000, nil}, {400, int64(len(BadObjectSizeBody)), []byte(BadObjectSizeBody)},
		{200, DefaultBodySize, nil}, {405, 0, nil}, {400, int64(len(BadObjectSizeBody)), nil}, {200, 7, wantObject(7)},
	} {
		if b := bodyOf(rs[k]); rs[k].StatusCode != w.status || rs[k].ContentLength != w.cl || !bytes.Equal(b, w.body) && len(b)+len(w.body) > 0 {
			t.Errorf("response %d: %d, Content-Length %d, body %d bytes; want %d, %d, %d", k, rs[k].StatusCode, rs[k].ContentLength, len(b), w.status, w.cl, len(w.body))
		}
	}
	c := e.s.Counters()
	check(t, "server", []want{{"Served200", c.Served200, 4}, {"Served400", c.Served400, 2}, {"Served405", c.Served405, 1}, {"SocketsFailed", c.SocketsFailed, 0}})
}

// TestObjectsHostilePeers: a closed window is probed one byte at a time
// and the connection ends after MaxRetries; a peer that never
// acknowledges gets the initial window, then MaxRetries retransmissions,
// then a reset; a reset mid-object ends it with nothing more sent.
func TestObjectsHostilePeers(t *testing.T) {
	get := []byte("GET /bytes/1000000 HTTP/1.1\r\n\r\n")
	t.Run("closed window", func(t *testing.T) {
		e := newEvilClient(t, 4)
		srv, seq := e.handshake(clientIP, 10000, 1000)
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck, Window: 1}, get)
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq + uint32(len(get)), Ack: srv, Flags: wire.TCPAck, Window: 1}, nil)
		sent := 0
		for range 600 { // 600 s of fake time: 8 backed-off retries of a 1 s timeout end well before
			for _, s := range e.recv() {
				if n := len(s.Payload()); n > 1 {
					t.Fatalf("a %d-byte segment into a 1-byte window", n)
				}
				sent += len(s.Payload())
			}
			e.now += int64(time.Second)
			e.s.Poll(e.now)
		}
		c := e.s.Counters()
		if c.SocketsCurrent != 0 || c.SocketsFailed != 1 || sent > 1+e.s.cfg.MaxRetries {
			t.Fatalf("current %d, failed %d, %d bytes sent; want the connection reset after at most %d one-byte probes",
				c.SocketsCurrent, c.SocketsFailed, sent, 1+e.s.cfg.MaxRetries)
		}
	})
	t.Run("window reopens", func(t *testing.T) {
		e := newEvilClient(t, 4)
		srv, seq := e.handshake(clientIP, 10000, 1000)
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck, Window: 1}, get)
		seq += uint32(len(get))
		// The window closes: the probe byte is dropped and answered with
		// the same ACK and a closed window.
		e.recv()
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck, Window: 1}, nil)
		e.recv()
		// The window reopens: data goes at once, not at the next timeout.
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck, Window: 65535}, nil)
		if segs := e.recv(); len(segs) == 0 || len(segs[0].Payload()) <= 1 {
			t.Fatalf("the window update drew %d segments; want full ones at once", len(segs))
		}
	})
	t.Run("never acknowledges", func(t *testing.T) {
		e := newEvilClient(t, 4)
		srv, seq := e.handshake(clientIP, 10000, 1000)
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck}, get)
		segs := 0
		for range 600 {
			segs += len(e.recv())
			e.now += int64(time.Second)
			e.s.Poll(e.now)
		}
		c := e.s.Counters()
		// The initial window (10 segments), one segment per retry, the reset.
		if c.SocketsCurrent != 0 || c.SocketsFailed != 1 || segs > initialWindow+e.s.cfg.MaxRetries+1 || c.RetransData != uint64(e.s.cfg.MaxRetries) {
			t.Fatalf("current %d, failed %d, %d segments, %d retransmissions; want a reset after %d retransmissions of one segment",
				c.SocketsCurrent, c.SocketsFailed, segs, c.RetransData, e.s.cfg.MaxRetries)
		}
	})
	t.Run("reset mid-object", func(t *testing.T) {
		e := newEvilClient(t, 4)
		srv, seq := e.handshake(clientIP, 10000, 1000)
		seq2 := seq + uint32(len(get))
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: srv, Flags: wire.TCPAck}, get)
		var got uint32
		for _, s := range e.recv() {
			got += uint32(len(s.Payload()))
		}
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq2, Ack: srv + got, Flags: wire.TCPAck}, nil)
		e.recv()
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq2, Flags: wire.TCPRst}, nil)
		for range 100 {
			e.now += int64(time.Second)
			e.s.Poll(e.now)
		}
		c := e.s.Counters()
		if segs := e.recv(); len(segs) != 0 || c.SocketsCurrent != 0 || c.SocketsFailed != 1 {
			t.Fatalf("%d segments after the reset, current %d, failed %d; want none, 0, 1", len(segs), c.SocketsCurrent, c.SocketsFailed)
		}
	})
}

// TestFastRecovery: three duplicate ACKs resend the segment at snd_una
// once and halve the window; a partial ACK resends the next hole at once;
// the ACK of everything ends recovery at ssthresh.
func TestFastRecovery(t *testing.T) {
	e := newEvilClient(t, 4)
	srv, seq := e.handshake(clientIP, 10000, 1000)
	get := []byte("GET /bytes/1000000 HTTP/1.1\r\n\r\n")
	seq += uint32(len(get))
	e.send(clientIP, 10000, wire.TCPFields{Seq: seq - uint32(len(get)), Ack: srv, Flags: wire.TCPAck}, get)
	first := e.recv()
	if len(first) != initialWindow {
		t.Fatalf("%d segments in the initial window; want %d", len(first), initialWindow)
	}
	ack := func(a uint32) []wire.TCP {
		e.send(clientIP, 10000, wire.TCPFields{Seq: seq, Ack: a, Flags: wire.TCPAck}, nil)
		return e.recv()
	}
	// Segment 0 arrived, 1 was lost: three duplicates of the ACK of 0.
	a1 := first[1].Seq()
	ack(a1)
	rc := &e.s.conns[0]
	for k := range 3 {
		out := ack(a1)
		if k < 2 && (len(out) != 0 || rc.flags&fRecovery != 0) {
			t.Fatalf("duplicate %d drew %d segments, recovery %v", k+1, len(out), rc.flags&fRecovery != 0)
		}
		if k == 2 && (len(out) == 0 || out[0].Seq() != a1) {
			t.Fatalf("the third duplicate drew %d segments, the first at %d; want the one at %d", len(out), seqOf(out), a1)
		}
	}
	cc := rc.cc()
	if rc.flags&fRecovery == 0 || cc.ssthresh != max((cc.recover-a1)/2, 2*uint32(rc.mss)) {
		t.Fatalf("recovery %v, ssthresh %d, recover %d", rc.flags&fRecovery != 0, cc.ssthresh, cc.recover)
	}
	// The resent segment and 2 more arrive, 4 was lost too: a partial ACK.
	a4 := first[4].Seq()
	if out := ack(a4); len(out) == 0 || out[0].Seq() != a4 {
		t.Fatalf("the partial ACK drew %d segments, the first at %d; want the one at %d", len(out), seqOf(out), a4)
	}
	ack(cc.recover)
	if rc.flags&fRecovery != 0 || cc.cwnd != cc.ssthresh {
		t.Fatalf("after the full ACK: recovery %v, cwnd %d, ssthresh %d", rc.flags&fRecovery != 0, cc.cwnd, cc.ssthresh)
	}
	if c := e.s.Counters(); c.FastRetransmit != 1 || c.CwndReductions != 1 {
		t.Fatalf("FastRetransmit %d, CwndReductions %d; want 1, 1", c.FastRetransmit, c.CwndReductions)
	}
}

func seqOf(s []wire.TCP) uint32 {
	if len(s) == 0 {
		return 0
	}
	return s[0].Seq()
}

// TestObjectsLossyPipe: client and server stacks, objects of 200 KB over a
// lossy, reordering pipe: every body byte counted, the server's window
// cut by losses, nothing failed.
func TestObjectsLossyPipe(t *testing.T) {
	const conns, reqs, size = 4, 3, 200000
	p := newPair(t, Config{PortMin: 30000, PortMax: 30000 + conns - 1, RequestsPerConn: reqs,
		Request: BuildRequest("GET", "/bytes/"+strconv.Itoa(size), "x", nil)},
		Config{PortMin: 30000, PortMax: 30000 + conns - 1, MaxRetries: 8},
		pipe.Config{Loss: 0.01, Reorder: 0.02, Duplicate: 0.01, Delay: 1, Seed: 17})
	p.run(t, 200000, p.launcher(conns, conns, func() bool {
		return p.c.Counters().SocketsClosed == conns && p.s.Counters().SocketsClosed == conns
	}))
	var st Stats
	p.c.TakeStats(&st)
	c, s := p.c.Counters(), p.s.Counters()
	check(t, "client", []want{{"HTTP2xx", c.HTTP2xx, conns * reqs}, {"SocketsFailed", c.SocketsFailed, 0},
		{"ContentBytes", st.Rows[0].ContentBytes, conns * reqs * size}})
	check(t, "server", []want{{"Served200", s.Served200, conns * reqs}, {"SocketsFailed", s.SocketsFailed, 0}})
	t.Logf("client %+v\nserver %+v", c, s)
	if s.CwndReductions == 0 || s.FastRetransmit == 0 {
		t.Errorf("server CwndReductions %d, FastRetransmit %d; want both > 0 under 1 %% loss", s.CwndReductions, s.FastRetransmit)
	}
}

// FuzzScanRequests: the streaming scan of any bytes, fed in two pieces,
// queues what a reference parser of the whole requests finds.
func FuzzScanRequests(f *testing.F) {
	for _, s := range []string{"GET /bytes/12 HTTP/1.1\r\n\r\n", "HEAD /bytes/0?x HTTP/1.1\r\nA: b\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"GET /bytes/16777217 HTTP/1.1\r\n\r\n", "POST /bytes/1\r\n\r\n", "GET /bytes/\r\n\r\n", "\r\n\r\r\n\r\n"} {
		f.Add([]byte(s), uint8(5))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		k := min(int(cut), len(b))
		var c conn
		s := &Stack{}
		ok := s.scanRequests(&c, b[:k]) && s.scanRequests(&c, b[k:])
		want := refScan(b)
		if !ok {
			if len(want) <= maxPending {
				t.Fatalf("refused with %d requests", len(want))
			}
			want = want[:maxPending]
		}
		got := c.reqs().pend[:c.pending]
		if len(got) != len(want) {
			t.Fatalf("%d requests; want %d (%#x)", len(got), len(want), want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("request %d: %#x; want %#x", i, got[i], want[i])
			}
		}
	})
}

// refScan splits b into requests at each blank line and parses each
// whole, as the kernel target's routes read them.
func refScan(b []byte) []uint32 {
	var out []uint32
	start, t := 0, 0
	for i, c := range b {
		switch {
		case c == "\r\n\r\n"[t]:
			t++
		case c == '\r':
			t = 1
		default:
			t = 0
		}
		if t < 4 {
			continue
		}
		req := string(b[start : i+1])
		start, t = i+1, 0
		var d uint32
		switch {
		case strings.HasPrefix(req, "GET "):
			req = req[4:]
		case strings.HasPrefix(req, "HEAD "):
			req, d = req[5:], descHead
		default:
			out = append(out, kindBadMth)
			continue
		}
		if end := strings.IndexAny(req, " ?\r\n"); end >= 0 {
			req = req[:end]
		}
		if size, found := strings.CutPrefix(req, objectPrefix); found {
			n, err := strconv.Atoi(size)
			if err != nil || len(size) > 9 || n > MaxObjectSize || strings.ContainsAny(size, "+-") {
				d |= kindBadReq
			} else {
				d |= kindObject | uint32(n)
			}
		}
		out = append(out, d)
	}
	return out
}

// BenchmarkObjects: 64 KiB objects on 16 keep-alive connections, client
// and server stacks on one goroutine over the pipe.
func BenchmarkObjects(b *testing.B) {
	const conns, size = 16, 64 << 10
	p := newPair(b, Config{PortMin: 30000, PortMax: 30000 + conns - 1, RequestsPerConn: 65535, Hold: true,
		Request: BuildRequest("GET", "/bytes/"+strconv.Itoa(size), "x", nil)},
		Config{PortMin: 30000, PortMax: 30000 + conns - 1}, pipe.Config{Frames: 4096})
	p.run(b, 1000, p.launcher(conns, conns, func() bool { return p.c.Counters().HTTP2xx >= conns }))
	b.ReportAllocs()
	b.ResetTimer()
	start, n0 := time.Now(), p.c.Counters().HTTP2xx
	for p.c.Counters().HTTP2xx-n0 < uint64(b.N) {
		p.now += step
		p.poll()
	}
	el := time.Since(start)
	b.ReportMetric(float64(b.N)*size*8/1e6/el.Seconds(), "Mbit/s")
	b.ReportMetric(float64(b.N)/el.Seconds(), "objects/s")
}

// BenchmarkRespBytes: one MSS of an object's body, the server's per-segment
// work before the checksum.
func BenchmarkRespBytes(b *testing.B) {
	s := &Stack{cfg: Config{MSS: 1460}, pages: [2][]byte{serverResponse(128), badMethodResponse}}
	s.initObjects()
	d := uint32(kindObject | 1<<20)
	b.ReportAllocs()
	b.ResetTimer()
	var n int
	for i := range b.N {
		n += len(s.respBytes(d, uint32(i%700)*1460, 1460))
	}
	if n != b.N*1460 {
		b.Fatal(n)
	}
}
