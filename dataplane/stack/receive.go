package stack

// The client's receiving side holds one range of out-of-order body bytes
// beyond a hole (issue 17) without a buffer: a receiver that only counts
// body bytes needs their count, not their content. A segment beyond
// rcv_nxt is held (counted in OutOfOrderHeld, a duplicate ACK still sent
// at once so the sender fast-retransmits the hole) when
//
//   - a response is awaited and its parser is inside a Content-Length
//     body or a chunk's data (the bytes would be counted, not parsed),
//   - the segment ends within that body or chunk (every byte between
//     rcv_nxt and its end is then body too), and
//   - it joins or lies inside the held range (one range: a second hole's
//     segments are dropped, counted in DropOutOfOrder, and resent by the
//     peer).
//
// When in-order data reaches the range, rcv_nxt jumps over it and the
// parser counts its bytes (respParser.skip), so the ACK covers it and the
// sender resends only the hole. The client's SYN offers SACK (RFC 2018);
// when the peer's SYN-ACK permits it, every ACK sent while a range is held
// carries it as one SACK block, so the sender resends the whole hole at
// once instead of one segment per round trip (NewReno without SACK).
// Deliberately simpler than a kernel: one range (one SACK block), headers
// and chunk sizes never held.

// holdOutOfOrder holds the n payload bytes at seq beyond rcvNxt of client
// record c if they extend or lie within its held range; it reports whether
// it did.
func (s *Stack) holdOutOfOrder(c *conn, seq, n uint32) bool {
	if n == 0 || c.state != stEstablished || c.flags&fAwait == 0 ||
		(c.http.state != psBody && c.http.state != psChunkData) {
		return false
	}
	off := seq - c.rcvNxt
	if off == 0 || int32(off) < 0 || uint64(off)+uint64(n) > uint64(c.http.remaining) {
		return false
	}
	end := seq + n
	switch {
	case c.oooSeq == c.oooEnd:
		c.oooSeq, c.oooEnd = seq, end
	case seqLE(c.oooSeq, seq) && seqLE(seq, c.oooEnd):
		// Inside, or extending the range upwards.
		if seqLT(c.oooEnd, end) {
			c.oooEnd = end
		}
	case seqLT(seq, c.oooSeq) && seqLE(c.oooSeq, end):
		// Extending it downwards (towards the hole).
		c.oooSeq = seq
		if seqLT(c.oooEnd, end) {
			c.oooEnd = end
		}
	default:
		return false
	}
	s.ctr.OutOfOrderHeld++
	return true
}

// joinHeld moves rcvNxt over the held range once in-order data reached
// it and returns how many of its bytes that made in order (to count in the
// parser); a range wholly overtaken by the data is dropped.
func (c *conn) joinHeld() uint32 {
	if c.oooSeq == c.oooEnd || seqLT(c.rcvNxt, c.oooSeq) {
		return 0
	}
	n := uint32(0)
	if seqLT(c.rcvNxt, c.oooEnd) {
		n = c.oooEnd - c.rcvNxt
		c.rcvNxt = c.oooEnd
	}
	c.oooSeq, c.oooEnd = 0, 0
	return n
}

// skip counts n body bytes held out of order; holdOutOfOrder checked they
// lie within the body or the chunk being read. It reports whether the
// response is complete.
func (p *respParser) skip(n uint32) bool {
	p.remaining -= n
	if p.remaining != 0 {
		return false
	}
	if p.state == psBody {
		p.state = psDone
		return true
	}
	p.state = psChunkCR
	return false
}

// ackT returns the template of an ACK for record c: with the held range as
// a SACK block when the client has one and the peer permits SACK.
func (s *Stack) ackT(c *conn) *template {
	if s.cfg.Mode == Client && c.flags&fSACK != 0 && c.oooSeq != c.oooEnd {
		return &s.tAckSACK
	}
	return &s.tAck
}
