package stack

import (
	"time"

	"github.com/cicada-load/cicada/dataplane/wire"
)

// Launch opens up to n new client connections at now, taking the records in
// turn; a record still in use is skipped (counted in LaunchSkipped), as in
// dperf. It returns how many SYNs it sent; none before the next hop is
// resolved or in Server mode.
func (s *Stack) Launch(now int64, n int) int {
	if s.cfg.Mode != Client || !s.resolved {
		return 0
	}
	opened := 0
	for range n {
		i := s.cursor
		s.cursor++
		if s.cursor == uint32(len(s.conns)) {
			s.cursor = 0
		}
		c := &s.conns[i]
		if c.state != stClosed {
			s.ctr.LaunchSkipped++
			continue
		}
		s.reset(c)
		c.iss = s.nextISS()
		c.sndUna, c.sndNxt, c.state = c.iss, c.iss+1, stSynSent
		s.ctr.SocketsOpened++
		s.ctr.SocketsCurrent++
		s.emit(&s.tSyn, i, c.iss, 0, nil, 0)
		s.arm(i, tRetransmit, now)
		opened++
	}
	s.flush()
	return opened
}

func (s *Stack) nextISS() uint32 {
	s.issNxt += 0x01000193
	return s.issNxt
}

// reset clears record c for a new connection (it is on no timer list).
func (s *Stack) reset(c *conn) {
	*c = conn{next: none, prev: none}
}

// close frees record i: no TIME_WAIT, the record is reusable at once.
func (s *Stack) close(i uint32) {
	s.disarm(i)
	s.conns[i].state = stClosed
	s.ctr.SocketsClosed++
	s.ctr.SocketsCurrent--
}

// abort resets the connection (RST to the peer) and counts it failed.
func (s *Stack) abort(i uint32) {
	c := &s.conns[i]
	s.emit(&s.tRst, i, c.sndNxt, c.rcvNxt, nil, 0)
	s.ctr.SocketsFailed++
	s.close(i)
}

// ackLate answers a FIN that reaches a closed or reused record with the ACK
// TIME_WAIT would have sent, so the peer can close.
func (s *Stack) ackLate(i uint32, seg wire.TCP) {
	s.emit(&s.tAck, i, seg.Ack(), seg.Seq()+uint32(len(seg.Payload()))+1, nil, 0)
}

func (s *Stack) sendRequest(i uint32, now int64) {
	c := &s.conns[i]
	s.emit(&s.tData, i, c.sndNxt, c.rcvNxt, s.cfg.Request, s.reqSum)
	c.sndNxt += uint32(len(s.cfg.Request))
	c.sentAt = now
	c.http = respParser{}
	c.flags |= fAwait
	c.retries = 0
	s.ctr.HTTPRequests++
	s.arm(i, tRetransmit, now)
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
			if fl&(wire.TCPFin|wire.TCPSyn) == wire.TCPFin {
				s.ackLate(i, seg)
			}
			s.ctr.DropBadState++
			return
		}
		if o, err := wire.ParseTCPOptions(seg.Options()); err == nil && o.HasWScale && s.cfg.WScale != 0 {
			c.flags |= fWScale
			c.wscale = o.WScale
		}
		c.rcvNxt, c.sndUna, c.state = seg.Seq()+1, c.iss+1, stEstablished
		s.sendRequest(i, now)
		return
	}
	if fl&wire.TCPSyn != 0 {
		// A retransmitted SYN-ACK: our ACK was lost; the request (or an
		// ACK) answers it.
		if c.state == stEstablished && seg.Seq()+1 == c.rcvNxt && c.sndUna != c.sndNxt {
			s.emit(&s.tData, i, c.sndNxt-uint32(len(s.cfg.Request)), c.rcvNxt, s.cfg.Request, s.reqSum)
			s.ctr.RetransData++
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
	if len(payload) > 0 || fin {
		if seg.Seq() != c.rcvNxt {
			s.ctr.DropOutOfOrder++
			s.ctr.DupAckOut++
			s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
			if progress {
				s.clientProgress(i, now)
			}
			return
		}
		c.rcvNxt += uint32(len(payload))
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
		if err != nil || (done && n != len(payload)) {
			s.ctr.HTTPErrors++
			s.abort(i)
			return
		}
		if done {
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
		s.arm(i, tRetransmit, now)
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
	if c.http.status >= 200 && c.http.status < 300 {
		s.ctr.HTTP2xx++
	} else {
		s.ctr.HTTPOther++
	}
	if s.cfg.OnResponse != nil {
		s.cfg.OnResponse(int(c.http.status), time.Duration(rt))
	}
	switch {
	case int(c.done) < s.cfg.RequestsPerConn && s.cfg.ThinkTime > 0:
		s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
		s.arm(i, tThink, now)
	case int(c.done) < s.cfg.RequestsPerConn:
		s.sendRequest(i, now)
	case s.cfg.Hold:
		s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
		s.disarm(i)
	default:
		s.emit(&s.tFin, i, c.sndNxt, c.rcvNxt, nil, 0)
		c.sndNxt++
		c.state = stFinWait1
		s.arm(i, tRetransmit, now)
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
		}
		s.emit(&s.tFin, i, c.sndNxt, c.rcvNxt, nil, 0)
		c.sndNxt++
		c.state = stLastAck
		s.arm(i, tRetransmit, now)
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
		s.abort(i)
		return
	}
	c.retries++
	if int(c.retries) > s.cfg.MaxRetries {
		s.abort(i)
		return
	}
	switch c.state {
	case stSynSent:
		s.emit(&s.tSyn, i, c.iss, 0, nil, 0)
		s.ctr.RetransSyn++
	case stEstablished:
		s.emit(&s.tData, i, c.sndNxt-uint32(len(s.cfg.Request)), c.rcvNxt, s.cfg.Request, s.reqSum)
		s.ctr.RetransData++
	default:
		s.emit(&s.tFin, i, c.sndNxt-1, c.rcvNxt, nil, 0)
		s.ctr.RetransFin++
	}
	s.arm(i, tRetransmit, now)
}
