package stack

import (
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/link/pipe"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// TestOutOfOrderHeld: a response's segments arrive in a given order
// (indices into its 1000-byte segments, repeats being the peer's
// retransmissions): body bytes beyond one hole are held and counted when
// the hole fills, anything else beyond rcv_nxt is dropped; the response
// counts whole and rcv_nxt (so the ACK) reaches its end.
func TestOutOfOrderHeld(t *testing.T) {
	body := strings.Repeat("0123456789", 500)
	plain := "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + body
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1388\r\n" + body + "\r\n0\r\n\r\n"
	for _, tt := range []struct {
		name       string
		resp       string
		order      []int
		held, drop uint64
		sack       bool // the SYN-ACK permits SACK
		sacks      int  // ACKs with a SACK block, the last one segments 2-5: the held range
	}{
		{"in order", plain, []int{0, 1, 2, 3, 4, 5}, 0, 0, false, 0},
		{"one hole", plain, []int{0, 2, 3, 4, 5, 1}, 4, 0, false, 0},
		{"range grows downwards", plain, []int{0, 3, 2, 1, 4, 5}, 2, 0, false, 0},
		{"duplicate inside the range", plain, []int{0, 2, 3, 2, 1, 4, 5}, 3, 0, false, 0},
		{"second hole dropped", plain, []int{0, 2, 4, 1, 3, 4, 5}, 1, 1, false, 0},
		{"headers never held", plain, []int{1, 0, 1, 2, 3, 4, 5}, 0, 1, false, 0},
		{"chunk data held", chunked, []int{0, 2, 3, 1, 4, 5}, 2, 0, false, 0},
		{"past the chunk dropped", chunked, []int{0, 2, 3, 5, 1, 4, 5}, 2, 1, false, 0},
		{"old segment", plain, []int{0, 1, 0, 2, 3, 4, 5}, 0, 1, false, 0},
		{"one hole with SACK", plain, []int{0, 2, 3, 4, 5, 1}, 4, 0, true, 4},
		{"in order with SACK", plain, []int{0, 1, 2, 3, 4, 5}, 0, 0, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, Config{PortMin: 10000, PortMax: 10000, Hold: true}, Config{PortMin: 10000, PortMax: 10000}, pipe.Config{})
			p.run(t, 100, func() bool { return p.c.Resolved() })
			var segs [][]byte
			e := &evilServer{t: t, c: p.c, end: p.sb, synWin: 65535, sackOK: tt.sack, answer: func(e *evilServer) [][]byte {
				segs = e.data(tt.resp)
				out := make([][]byte, len(tt.order))
				for k, i := range tt.order {
					out[k] = segs[i]
				}
				return out
			}}
			if p.c.Launch(p.now, 1) != 1 {
				t.Fatal("nothing launched")
			}
			for range 20 {
				p.now += step
				p.c.Poll(p.now)
				e.serve()
				p.c.Poll(p.now)
			}
			var st Stats
			p.c.TakeStats(&st)
			c := p.c.Counters()
			check(t, "client", []want{{"HTTP2xx", c.HTTP2xx, 1}, {"HTTPErrors", c.HTTPErrors, 0}, {"ContentBytes", st.Rows[0].ContentBytes, 5000},
				{"OutOfOrderHeld", c.OutOfOrderHeld, tt.held}, {"DropOutOfOrder", c.DropOutOfOrder, tt.drop}})
			if !e.synSACK || e.sacks != tt.sacks {
				t.Errorf("SYN offered SACK %v, %d ACKs with a SACK block; want true, %d", e.synSACK, e.sacks, tt.sacks)
			}
			if tt.sacks > 0 {
				hole := wire.TCP(wire.Ethernet(segs[2])[wire.EthernetLen+wire.IPv4MinLen:])
				if lo := hole.Seq(); e.sack != [2]uint32{lo, e.sndNxt} {
					t.Errorf("last SACK block %#x; want %#x..%#x", e.sack, lo, e.sndNxt)
				}
			}
			if r := &p.c.conns[0]; r.rcvNxt != e.sndNxt || r.oooSeq != r.oooEnd {
				t.Errorf("rcv_nxt %#x, held %#x..%#x; want %#x, the response's end, and nothing held", r.rcvNxt, r.oooSeq, r.oooEnd, e.sndNxt)
			}
		})
	}
}
