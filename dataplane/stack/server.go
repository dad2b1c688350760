package stack

import "github.com/cicada-load/cicada/dataplane/wire"

// maxPending bounds the requests of a connection with no response done
// (the one in flight included); more reset the connection.
const maxPending = 8

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
	wnd := uint32(seg.Window())
	if c.flags&fWScale != 0 {
		wnd <<= c.wscale
	}
	progress := false
	switch {
	case c.state == stSynRcvd:
		if a != c.iss+1 {
			s.ctr.DropBadState++
			return
		}
		c.sndUna, c.retries, c.state, progress = a, 0, stEstablished, true
	case seqLT(c.sndUna, a) && seqLE(a, c.cc().sndMax):
		acked := a - c.sndUna
		c.sndUna, c.retries, c.dupAcks, progress = a, 0, 0, true
		if seqLT(c.sndNxt, a) {
			// The peer held what go-back-N is resending.
			c.sndNxt = a
		}
		s.ccAcked(i, acked)
	case a == c.sndUna && len(payload) == 0 && !fin && c.sndUna != c.cc().sndMax && wnd == c.sndWnd:
		// A duplicate ACK (RFC 5681: no data, same window, data
		// outstanding).
		s.ccDupAck(i, now)
	case a == c.sndUna && wnd > c.sndWnd && c.flags&fResp != 0:
		// A window update: send into it now rather than at the next
		// retransmission timeout.
		progress = true
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
	c.user = user{} // a server record's user holds its requests (srvReqs)
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
	s.ccInit(c)
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

// serverProgress starts the next response, pushes data within the window,
// sends the FIN once the peer's is in and nothing is left, and re-arms the
// timers.
func (s *Stack) serverProgress(i uint32, now int64, ackNeeded bool) {
	c := &s.conns[i]
	q := c.reqs()
	if c.flags&fResp != 0 && c.sndUna == c.respSeq+s.respLen(q.pend[0]) {
		c.flags &^= fResp
		c.pending--
		copy(q.pend[:c.pending], q.pend[1:c.pending+1])
		q.pend[c.pending] = 0
	}
	if c.flags&fResp == 0 && c.pending > 0 {
		c.flags |= fResp
		switch q.pend[0] & kindMask {
		case kindBadMth:
			s.ctr.Served405++
		case kindBadReq:
			s.ctr.Served400++
		default:
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
		c.cc().sndMax = c.sndNxt
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

// push sends the response in flight from sndNxt within sendWindow; it
// reports whether it sent anything. A segment shorter than the MSS goes
// only at the response's end or with nothing in flight (no silly window).
func (s *Stack) push(i uint32) bool {
	c := &s.conns[i]
	cc := c.cc()
	d := c.reqs().pend[0]
	end := c.respSeq + s.respLen(d)
	wnd := s.sendWindow(c)
	sent := false
	for seqLT(c.sndNxt, end) {
		inflight := c.sndNxt - c.sndUna
		if inflight >= wnd {
			break
		}
		left := end - c.sndNxt
		n := min(left, uint32(c.mss), wnd-inflight)
		if n < uint32(c.mss) && n < left && inflight > 0 {
			break
		}
		seg := s.respBytes(d, c.sndNxt-c.respSeq, n)
		if !s.emit(&s.tData, i, c.sndNxt, c.rcvNxt, seg, wire.Sum(seg, 0)) {
			break
		}
		c.sndNxt += n
		if seqLT(cc.sndMax, c.sndNxt) {
			cc.sndMax = c.sndNxt
		}
		sent = true
	}
	return sent
}

// resendHead resends the segment at sndUna of the response in flight (fast
// retransmit, a partial ACK); false when there is none or no buffer.
func (s *Stack) resendHead(i uint32) bool {
	c := &s.conns[i]
	if c.flags&fResp == 0 {
		return false
	}
	d := c.reqs().pend[0]
	end := c.respSeq + s.respLen(d)
	if !seqLT(c.sndUna, end) {
		return false
	}
	n := min(end-c.sndUna, uint32(c.mss), max(c.sndWnd, 1))
	seg := s.respBytes(d, c.sndUna-c.respSeq, n)
	return s.emit(&s.tData, i, c.sndUna, c.rcvNxt, seg, wire.Sum(seg, 0))
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
		// Go back N from sndUna with one segment (congestion.go).
		s.ccTimeout(c)
		c.sndNxt = c.sndUna
		s.push(i)
		s.ctr.RetransData++
	}
	s.armRtx(i, now)
}
