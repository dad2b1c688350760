package stack

import "github.com/cicada-load/cicada/dataplane/wire"

// Server request scan state (conn.reqState): the low 3 bits count matched
// bytes of "GET " (4 = a GET, 7 = another method), the next 3 bits count
// matched bytes of the blank line "\r\n\r\n".
const (
	rqGET   = 4
	rqOther = 7
	rqMask  = 7
	// maxPending bounds pipelined requests waiting for a response; more
	// reset the connection.
	maxPending = 8
)

func (s *Stack) serverInput(i uint32, seg wire.TCP, now int64) {
	c := &s.conns[i]
	fl := seg.Flags()
	if fl&wire.TCPRst != 0 {
		if c.state == stClosed || seg.Seq() != c.rcvNxt {
			s.ctr.DropBadState++
			return
		}
		s.ctr.SocketsFailed++
		s.close(i)
		return
	}
	if fl&wire.TCPSyn != 0 {
		if fl&wire.TCPAck != 0 {
			s.ctr.DropBadState++
			return
		}
		s.accept(i, seg, now)
		return
	}
	if c.state == stClosed {
		s.ctr.DropNoSocket++
		return
	}
	if fl&wire.TCPAck == 0 {
		s.ctr.DropBadState++
		return
	}
	payload, fin := seg.Payload(), fl&wire.TCPFin != 0
	a := seg.Ack()
	progress := false
	switch {
	case c.state == stSynRcvd:
		if a != c.iss+1 {
			s.ctr.DropBadState++
			return
		}
		c.sndUna, c.retries, c.state, progress = a, 0, stEstablished, true
	case seqLT(c.sndUna, a) && seqLE(a, c.sndNxt):
		c.sndUna, c.retries, c.dupAcks, progress = a, 0, 0, true
	case a == c.sndUna && len(payload) == 0 && !fin && c.sndUna != c.sndNxt:
		c.dupAcks++
		if c.dupAcks == 3 {
			s.fastRetransmit(i)
		}
	}
	wnd := uint32(seg.Window())
	if c.flags&fWScale != 0 {
		wnd <<= c.wscale
	}
	c.sndWnd = wnd
	ackNeeded := false
	if len(payload) > 0 || fin {
		if seg.Seq() != c.rcvNxt {
			s.ctr.DropOutOfOrder++
			s.ctr.DupAckOut++
			s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
			if progress {
				s.serverProgress(i, now, false)
			}
			return
		}
		c.rcvNxt += uint32(len(payload))
		if fin {
			c.rcvNxt++
			c.flags |= fFinRcvd
		}
		if !s.scanRequests(c, payload) {
			s.abort(i)
			return
		}
		ackNeeded = true
	}
	if progress || ackNeeded {
		s.serverProgress(i, now, ackNeeded)
	}
}

// accept takes a SYN: a new connection, a retransmitted SYN, or a new
// incarnation of the client port (the client keeps no TIME_WAIT).
func (s *Stack) accept(i uint32, seg wire.TCP, now int64) {
	c := &s.conns[i]
	if c.state != stClosed && seg.Seq() == c.irs {
		// The same SYN again: resend the SYN-ACK while it is unanswered;
		// once established, a late duplicate only gets an ACK.
		if c.state == stSynRcvd {
			s.synAck(i)
			s.ctr.RetransSyn++
			return
		}
		s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
		s.ctr.DropBadState++
		return
	}
	// A malformed SYN is dropped before it can end the tuple's
	// connection.
	opts, err := wire.ParseTCPOptions(seg.Options())
	if err != nil {
		s.ctr.DropMalformed++
		return
	}
	if c.state != stClosed {
		s.close(i)
	}
	s.reset(c)
	c.iss = s.nextISS()
	c.irs = seg.Seq()
	c.sndUna, c.sndNxt, c.rcvNxt, c.state = c.iss, c.iss+1, c.irs+1, stSynRcvd
	c.mss = s.cfg.MSS
	if opts.MSS == 0 {
		c.mss = min(c.mss, 536)
	} else {
		c.mss = min(c.mss, max(opts.MSS, 64))
	}
	if opts.HasWScale && s.cfg.WScale != 0 {
		c.flags |= fWScale
		c.wscale = opts.WScale
	}
	c.sndWnd = uint32(seg.Window())
	s.ctr.SocketsOpened++
	s.ctr.SocketsCurrent++
	s.synAck(i)
	s.armRtx(i, now)
}

func (s *Stack) synAck(i uint32) {
	c := &s.conns[i]
	t := &s.tSynAck
	if c.flags&fWScale != 0 {
		t = &s.tSynAckWS
	}
	s.emit(t, i, c.iss, c.rcvNxt, nil, 0)
}

// scanRequests counts the complete requests in p (ended by a blank line)
// and whether each is a GET (badMask bit k: the k-th pending request is
// not); false when more than maxPending are pending.
func (s *Stack) scanRequests(c *conn, p []byte) bool {
	const blank = "\r\n\r\n"
	for _, b := range p {
		m, t := c.reqState&rqMask, c.reqState>>3
		if m < rqGET {
			if b == "GET "[m] {
				m++
			} else {
				m = rqOther
			}
		}
		switch b {
		case blank[t]:
			t++
		case '\r':
			t = 1
		default:
			t = 0
		}
		if t == 4 {
			if c.pending >= maxPending {
				return false
			}
			if m != rqGET {
				c.badMask |= 1 << c.pending
			}
			c.pending++
			m, t = 0, 0
		}
		c.reqState = t<<3 | m
	}
	return true
}

// serverProgress starts the next response, pushes data within the window,
// sends the FIN once the peer's is in and nothing is left, and re-arms the
// timers.
func (s *Stack) serverProgress(i uint32, now int64, ackNeeded bool) {
	c := &s.conns[i]
	if c.flags&fResp != 0 && c.sndUna == c.respSeq+uint32(len(s.page(c))) {
		c.flags &^= fResp | fBadReq
	}
	if c.flags&fResp == 0 && c.pending > 0 {
		bad := c.badMask&1 != 0
		c.pending--
		c.badMask >>= 1
		c.flags |= fResp
		if bad {
			c.flags |= fBadReq
			s.ctr.Served405++
		} else {
			s.ctr.Served200++
		}
		c.respSeq = c.sndNxt
	}
	sent := false
	if c.flags&fResp != 0 {
		sent = s.push(i)
	}
	if c.flags&fFinRcvd != 0 && c.flags&fResp == 0 && c.pending == 0 && c.state == stEstablished {
		s.emit(&s.tFin, i, c.sndNxt, c.rcvNxt, nil, 0)
		c.sndNxt++
		c.state = stLastAck
		sent = true
	}
	if c.state == stLastAck && c.sndUna == c.sndNxt {
		s.close(i)
		return
	}
	if ackNeeded && !sent {
		s.ackLater(i)
	}
	switch {
	case c.sndUna != c.sndNxt:
		if !isRtx(c.list) || c.retries == 0 {
			s.armRtx(i, now)
		}
	default:
		s.arm(i, tIdle, now)
	}
}

func (s *Stack) page(c *conn) []byte {
	if c.flags&fBadReq != 0 {
		return s.pages[1]
	}
	return s.pages[0]
}

// push sends the response from sndNxt while the fixed window allows; it
// reports whether it sent anything. A closed peer window is treated as one
// segment (no persist timer).
func (s *Stack) push(i uint32) bool {
	c := &s.conns[i]
	page := s.page(c)
	end := c.respSeq + uint32(len(page))
	wnd := max(min(c.sndWnd, s.cfg.SendWindow), uint32(c.mss))
	sent := false
	for seqLT(c.sndNxt, end) {
		inflight := c.sndNxt - c.sndUna
		if inflight >= wnd {
			break
		}
		n := min(end-c.sndNxt, uint32(c.mss), wnd-inflight)
		off := c.sndNxt - c.respSeq
		seg := page[off : off+n]
		if !s.emit(&s.tData, i, c.sndNxt, c.rcvNxt, seg, wire.Sum(seg, 0)) {
			break
		}
		c.sndNxt += n
		sent = true
	}
	return sent
}

// fastRetransmit resends the one segment at sndUna after 3 duplicate ACKs.
func (s *Stack) fastRetransmit(i uint32) {
	c := &s.conns[i]
	if c.flags&fResp == 0 {
		return
	}
	page := s.page(c)
	end := c.respSeq + uint32(len(page))
	if !seqLT(c.sndUna, end) {
		return
	}
	off := c.sndUna - c.respSeq
	n := min(end-c.sndUna, uint32(c.mss))
	seg := page[off : off+n]
	s.emit(&s.tData, i, c.sndUna, c.rcvNxt, seg, wire.Sum(seg, 0))
	s.ctr.FastRetransmit++
}

func (s *Stack) serverTimeout(i uint32, l uint8, now int64) {
	c := &s.conns[i]
	if l == tIdle {
		s.abort(i)
		return
	}
	c.retries++
	if int(c.retries) > s.cfg.MaxRetries {
		s.abort(i)
		return
	}
	switch {
	case c.state == stSynRcvd:
		s.synAck(i)
		s.ctr.RetransSyn++
	case c.state == stLastAck:
		s.emit(&s.tFin, i, c.sndNxt-1, c.rcvNxt, nil, 0)
		s.ctr.RetransFin++
	case c.flags&fResp != 0:
		// Go back N: resend the window from sndUna.
		c.sndNxt = c.sndUna
		s.push(i)
		s.ctr.RetransData++
	}
	s.armRtx(i, now)
}
