package stack

import (
	"time"

	"github.com/cicada-load/cicada/dataplane/wire"
)

// Launch opens up to n new client connections at now, taking the records in
// turn; a record still in use is skipped (counted in LaunchSkipped), as in
// dperf. It returns how many SYNs it sent; none before the next hop is
// resolved or in Server mode. With a Program it is LaunchClass(now, 0, n).
func (s *Stack) Launch(now int64, n int) int {
	if s.classes != nil {
		return s.LaunchClass(now, 0, n)
	}
	if s.cfg.Mode != Client || !s.resolved {
		return 0
	}
	s.now = now
	opened := 0
	for range n {
		i := s.cursor
		s.cursor++
		if s.cursor == uint32(len(s.conns)) {
			s.cursor = 0
		}
		if s.conns[i].state != stClosed {
			s.ctr.LaunchSkipped++
			continue
		}
		s.connect(i, now)
		opened++
	}
	s.flush()
	return opened
}

// connect sends a SYN from closed record i; a user on it stays.
func (s *Stack) connect(i uint32, now int64) {
	c := &s.conns[i]
	last, used, late := c.sndNxt, c.iss != 0, c.flags&fLateAck
	s.reset(c)
	c.flags |= late
	if used {
		// Above everything the port's last incarnation sent, as Linux
		// does when it reuses a TIME_WAIT port: a peer holding that
		// incarnation in TIME_WAIT accepts the SYN as a new connection
		// (RFC 9293 3.10.7.4 / RFC 6191) instead of answering it with an
		// old ACK.
		c.iss = last + 0xffff + 2
	} else {
		c.iss = s.nextISS()
	}
	c.sndUna, c.sndNxt, c.state = c.iss, c.iss+1, stSynSent
	c.sentAt = now
	s.ctr.SocketsOpened++
	s.ctr.SocketsCurrent++
	s.emit(&s.tSyn, i, c.iss, 0, nil, 0)
	s.armRtx(i, now)
}

// lateAckQuiet is how long after a record closed a FIN for it counts as
// crossing the ACK that closed it (see ackLate): below the 200 ms least
// retransmission timeout of Linux peers, above the lab's round trips.
const lateAckQuiet = int64(100 * time.Millisecond)

func (s *Stack) nextISS() uint32 {
	s.issNxt += 0x01000193
	return s.issNxt
}

// reset clears record c for a new connection (it is on no timer list); its
// user stays.
func (s *Stack) reset(c *conn) {
	*c = conn{next: none, prev: none, user: c.user}
}

// close frees record i: no TIME_WAIT, the record is reusable at once. A
// closed record is on no timer, so its timerAt keeps the time it closed
// (ackLate reads it).
func (s *Stack) close(i uint32) {
	s.disarm(i)
	c := &s.conns[i]
	c.state = stClosed
	c.timerAt = s.now
	s.ctr.SocketsClosed++
	s.ctr.SocketsCurrent--
	if c.uflags&uLive != 0 {
		s.userClosed(i)
	}
}

// abort resets the connection (RST to the peer) and counts it failed.
func (s *Stack) abort(i uint32) {
	c := &s.conns[i]
	s.emit(&s.tRst, i, c.sndNxt, c.rcvNxt, nil, 0)
	s.ctr.SocketsFailed++
	s.close(i)
}

// ackLate answers a FIN that reaches a closed or reused record with the ACK
// TIME_WAIT would have sent, so the peer can close; once per incarnation of
// the port: a duplicate (the peer's spurious retransmission) is dropped, as
// a second ACK would reach a peer that already closed and draw its reset.
// If the first ACK was lost, the peer's old incarnation ends when our next
// SYN on the port draws its ACK and our reset (see clientInput).
//
// A FIN reaching a record closed less than lateAckQuiet ago is not answered
// either: it is the peer's retransmission crossing the ACK that closed the
// record (the client was late to read the first FIN, by more than the peer's
// retransmission timeout, as on a loaded machine), and that ACK closes the
// peer. Were that ACK lost, the peer's next retransmission comes at least
// twice its timeout later (Linux's least is 200 ms), past the quiet time,
// and is answered.
func (s *Stack) ackLate(i uint32, seg wire.TCP) {
	c := &s.conns[i]
	if c.flags&fLateAck != 0 {
		return
	}
	if c.state == stClosed && s.now-c.timerAt < lateAckQuiet {
		return
	}
	c.flags |= fLateAck
	s.emit(&s.tAck, i, seg.Ack(), seg.Seq()+uint32(len(seg.Payload()))+1, nil, 0)
}

// reqOf returns the request record i sends: the Program step it is at, or
// the one Request.
func (s *Stack) reqOf(i uint32) *progRequest {
	if s.classes == nil {
		return &s.reqs[0]
	}
	c := &s.conns[i]
	return &s.reqs[s.classes[c.class].steps[c.pos]]
}

func (s *Stack) sendRequest(i uint32, now int64) {
	c := &s.conns[i]
	r := s.reqOf(i)
	s.emit(&s.tData, i, c.sndNxt, c.rcvNxt, r.raw, r.sum)
	c.sndNxt += uint32(len(r.raw))
	c.sentAt = now
	c.http = respParser{head: r.head}
	c.flags |= fAwait
	c.retries = 0
	s.ctr.HTTPRequests++
	s.armRtx(i, now)
}

// resendRequest retransmits the request in flight.
func (s *Stack) resendRequest(i uint32) {
	c := &s.conns[i]
	r := s.reqOf(i)
	s.emit(&s.tData, i, c.sndNxt-uint32(len(r.raw)), c.rcvNxt, r.raw, r.sum)
	s.ctr.RetransData++
}

// sendFin closes the sending side of established record i.
func (s *Stack) sendFin(i uint32, now int64) {
	c := &s.conns[i]
	s.emit(&s.tFin, i, c.sndNxt, c.rcvNxt, nil, 0)
	c.sndNxt++
	c.state = stFinWait1
	c.retries = 0
	s.armRtx(i, now)
}

// reqFailed counts a failed request of record i (kind failConnect while
// connecting, or any kind while a response is awaited) in its stats row and
// tells its user; other failures (closing, idle, the connect of a user
// stopped while connecting) are no request's.
func (s *Stack) reqFailed(i uint32, now int64, kind uint8) {
	c := &s.conns[i]
	if kind != failConnect && c.flags&fAwait == 0 {
		return
	}
	if kind == failConnect && c.uflags&uStop != 0 {
		return // stopped while connecting: it would have sent nothing
	}
	c.flags &^= fAwait
	row := &s.rows[s.reqOf(i).stat]
	row.sample(now - c.sentAt)
	row.fail(kind)
	if c.uflags&uLive != 0 {
		s.userFailed(i, now)
	}
}

func (s *Stack) clientInput(i uint32, seg wire.TCP, now int64) {
	c := &s.conns[i]
	fl := seg.Flags()
	if fl&wire.TCPRst != 0 {
		switch {
		case c.state == stClosed:
			s.ctr.DropNoSocket++
		case c.state == stSynSent && (fl&wire.TCPAck == 0 || seg.Ack() != c.sndNxt):
			s.ctr.DropBadState++
		case c.state != stSynSent && seg.Seq() != c.rcvNxt:
			s.ctr.DropOutOfOrder++
		default:
			s.ctr.SocketsFailed++
			if c.state == stSynSent {
				s.reqFailed(i, now, failConnect)
			} else {
				s.reqFailed(i, now, failReset)
			}
			s.close(i)
		}
		return
	}
	switch c.state {
	case stClosed:
		if fl&wire.TCPFin != 0 {
			s.ackLate(i, seg)
		}
		s.ctr.DropNoSocket++
		return
	case stSynSent:
		if fl&(wire.TCPSyn|wire.TCPAck) != wire.TCPSyn|wire.TCPAck || seg.Ack() != c.iss+1 {
			switch {
			case fl&(wire.TCPFin|wire.TCPSyn) == wire.TCPFin:
				// The peer's old incarnation retransmits its FIN: the
				// ACK TIME_WAIT would have sent lets it close.
				s.ackLate(i, seg)
			case fl&wire.TCPAck != 0:
				// An ACK of another incarnation: <SEQ=SEG.ACK><CTL=RST>
				// (RFC 9293 3.10.7.3) makes the peer drop it; our SYN's
				// retransmission then opens the new one.
				s.emit(&s.tRstNoAck, i, seg.Ack(), 0, nil, 0)
				s.ctr.StaleAckRst++
			}
			s.ctr.DropBadState++
			return
		}
		if o, err := wire.ParseTCPOptions(seg.Options()); err == nil {
			if o.HasWScale && s.cfg.WScale != 0 {
				c.flags |= fWScale
				c.wscale = o.WScale
			}
			if o.SACKPermitted {
				c.flags |= fSACK
			}
		}
		c.rcvNxt, c.sndUna, c.state, c.retries = seg.Seq()+1, c.iss+1, stEstablished, 0
		c.flags &^= fLateAck
		if c.uflags&uLive != 0 {
			s.userConnected(i, now)
			return
		}
		s.sendRequest(i, now)
		return
	}
	if fl&wire.TCPSyn != 0 {
		// A retransmitted SYN-ACK: our ACK was lost; the request (or an
		// ACK) answers it.
		if c.state == stEstablished && seg.Seq()+1 == c.rcvNxt && c.sndUna != c.sndNxt && c.flags&fAwait != 0 {
			s.resendRequest(i)
			return
		}
		s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
		s.ctr.DropBadState++
		return
	}
	if fl&wire.TCPAck == 0 {
		s.ctr.DropBadState++
		return
	}
	progress := false
	if a := seg.Ack(); seqLT(c.sndUna, a) && seqLE(a, c.sndNxt) {
		c.sndUna, c.retries, progress = a, 0, true
	}
	payload, fin := seg.Payload(), fl&wire.TCPFin != 0
	extra := uint32(0) // bytes of the held range the segment makes in order
	if len(payload) > 0 || fin {
		if seg.Seq() != c.rcvNxt {
			if fin || !s.holdOutOfOrder(c, seg.Seq(), uint32(len(payload))) {
				s.ctr.DropOutOfOrder++
			}
			s.ctr.DupAckOut++
			s.emit(s.ackT(c), i, c.sndNxt, c.rcvNxt, nil, 0)
			if progress {
				s.clientProgress(i, now)
			}
			return
		}
		c.rcvNxt += uint32(len(payload))
		extra = c.joinHeld()
		if fin {
			c.rcvNxt++
		}
	}
	if len(payload) > 0 {
		if c.state != stEstablished || c.flags&fAwait == 0 {
			s.ctr.HTTPErrors++
			s.abort(i)
			return
		}
		n, done, err := c.http.feed(payload)
		if err == nil && extra > 0 {
			if done {
				err = errHTTP // the held bytes lay past the response's end
			} else {
				done = c.http.skip(extra)
			}
		}
		if err != nil || (done && n != len(payload)) {
			s.ctr.HTTPErrors++
			s.reqFailed(i, now, failMalformed)
			s.abort(i)
			return
		}
		if done {
			if fin {
				c.flags |= fPeerFin
			}
			s.responseDone(i, now)
			if fin {
				s.clientFin(i, now)
			}
			return
		}
		if !fin && !progress && c.sndUna == c.sndNxt {
			// The response is arriving: the idle timeout bounds silence.
			s.arm(i, tIdle, now)
		}
	}
	if fin {
		s.clientFin(i, now)
		return
	}
	if progress {
		s.clientProgress(i, now)
	}
	if len(payload) > 0 {
		s.ackLater(i)
	}
}

// clientProgress moves timers and states after the ACK advanced.
func (s *Stack) clientProgress(i uint32, now int64) {
	c := &s.conns[i]
	if c.sndUna != c.sndNxt {
		s.armRtx(i, now)
		return
	}
	switch c.state {
	case stEstablished:
		if c.flags&fAwait != 0 {
			s.arm(i, tIdle, now)
		}
	case stFinWait1:
		c.state = stFinWait2
		s.arm(i, tIdle, now)
	case stClosing, stLastAck:
		s.close(i)
	}
}

// responseDone counts a complete response and starts what comes next: the
// next request (now or after ThinkTime), holding the connection, or FIN.
func (s *Stack) responseDone(i uint32, now int64) {
	c := &s.conns[i]
	c.flags &^= fAwait
	c.done++
	rt := now - c.sentAt
	s.ctr.RespTimeSum += rt
	s.ctr.RespTimeMax = max(s.ctr.RespTimeMax, rt)
	st := c.http.status
	if st >= 200 && st < 300 {
		s.ctr.HTTP2xx++
	} else {
		s.ctr.HTTPOther++
	}
	r := s.reqOf(i)
	row := &s.rows[r.stat]
	row.sample(rt)
	row.ContentBytes += uint64(c.http.body)
	ok := r.accepts(st)
	if !ok {
		row.Failures++
		row.failStatus(st, 1)
	}
	if s.cfg.OnResponse != nil {
		s.cfg.OnResponse(int(st), time.Duration(rt))
	}
	if c.uflags&uLive != 0 {
		s.userResponse(i, now, ok)
		return
	}
	if c.flags&fPeerFin != 0 {
		c.flags &^= fPeerFin
		return // clientFin follows and closes
	}
	switch {
	case c.http.flags&pfClose != 0:
		s.sendFin(i, now)
	case int(c.done) < s.cfg.RequestsPerConn && s.cfg.ThinkTime > 0:
		s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
		s.arm(i, tThink, now)
	case int(c.done) < s.cfg.RequestsPerConn:
		s.sendRequest(i, now)
	case s.cfg.Hold:
		s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
		s.disarm(i)
	default:
		s.sendFin(i, now)
	}
}

// clientFin handles the peer's FIN (already counted into rcvNxt).
func (s *Stack) clientFin(i uint32, now int64) {
	c := &s.conns[i]
	switch c.state {
	case stEstablished:
		if c.flags&fAwait != 0 {
			s.ctr.HTTPErrors++
			s.ctr.SocketsFailed++
			s.reqFailed(i, now, failReset)
		}
		s.emit(&s.tFin, i, c.sndNxt, c.rcvNxt, nil, 0)
		c.sndNxt++
		c.state = stLastAck
		c.retries = 0
		s.armRtx(i, now)
	case stFinWait1:
		s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
		if c.sndUna == c.sndNxt {
			s.close(i)
			return
		}
		c.state = stClosing
	case stFinWait2:
		s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
		s.close(i)
	default:
		s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
	}
}

func (s *Stack) clientTimeout(i uint32, l uint8, now int64) {
	c := &s.conns[i]
	switch l {
	case tThink:
		s.sendRequest(i, now)
		return
	case tIdle:
		if c.state == stFinWait2 {
			s.close(i)
			return
		}
		s.ctr.HTTPErrors++
		s.reqFailed(i, now, failTimeout)
		s.abort(i)
		return
	}
	c.retries++
	if int(c.retries) > s.cfg.MaxRetries {
		if c.state == stSynSent {
			s.reqFailed(i, now, failConnect)
		} else {
			s.reqFailed(i, now, failTimeout)
		}
		s.abort(i)
		return
	}
	switch c.state {
	case stSynSent:
		s.emit(&s.tSyn, i, c.iss, 0, nil, 0)
		s.ctr.RetransSyn++
	case stEstablished:
		s.resendRequest(i)
	default:
		s.emit(&s.tFin, i, c.sndNxt-1, c.rcvNxt, nil, 0)
		s.ctr.RetransFin++
	}
	s.armRtx(i, now)
}
