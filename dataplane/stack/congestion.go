package stack

// Congestion control of the server's sending side (issue 17), after RFC
// 5681 and RFC 6582 (NewReno), without an RTT estimator: a server
// connection sends at most min(peer's window, SendWindow, cwnd) bytes
// unacknowledged.
//
//   - cwnd starts at 10 segments (RFC 6928); slow start adds the bytes
//     acknowledged, at most 2 segments an ACK (RFC 3465), below ssthresh;
//     above it, congestion avoidance adds mss*mss/cwnd an ACK.
//   - Three duplicate ACKs: ssthresh = max(flight/2, 2 segments), the
//     segment at snd_una is resent, cwnd = ssthresh + 3 segments and
//     grows by one per further duplicate (fast recovery) until an ACK
//     covers recover (snd_nxt when it began), sending new data as the
//     duplicates inflate it; a partial ACK resends the
//     next segment at once (NewReno) and deflates cwnd by what it acked.
//   - A retransmission timeout: ssthresh as above, cwnd one segment, and
//     go-back-N from snd_una (sndNxt is moved back; sndMax keeps the
//     highest byte sent, so an ACK of data the peer held out of order
//     moves sndNxt forward instead of being refused).
//
// Deliberately simpler than a kernel: no SACK, no RTT measurement (the
// timeout is Config's, doubling per retry), no pacing, ACK counting rather
// than byte counting in congestion avoidance.

// initialWindow is RFC 6928's initial window in segments.
const initialWindow = 10

// ccInit starts a server connection's congestion state after accept.
func (s *Stack) ccInit(c *conn) {
	cc := c.cc()
	cc.cwnd = initialWindow * uint32(c.mss)
	cc.ssthresh = s.cfg.SendWindow
	cc.recover = c.sndNxt
	cc.sndMax = c.sndNxt
}

// ccAcked grows the window for acked new bytes (sndUna already moved) and
// handles the ends of fast recovery. It reports whether the segment at
// sndUna was resent (a partial ACK).
func (s *Stack) ccAcked(i uint32, acked uint32) bool {
	c := &s.conns[i]
	cc := c.cc()
	mss := uint32(c.mss)
	if c.flags&fRecovery != 0 {
		if seqLT(c.sndUna, cc.recover) {
			// Partial ACK: the next hole is at sndUna.
			cc.cwnd = max(cc.cwnd-min(acked, cc.cwnd), mss) + mss
			s.resendHead(i)
			return true
		}
		c.flags &^= fRecovery
		cc.cwnd = cc.ssthresh
		return false
	}
	if cc.cwnd < cc.ssthresh {
		cc.cwnd += min(acked, 2*mss)
	} else {
		cc.cwnd += max(mss*mss/cc.cwnd, 1)
	}
	cc.cwnd = min(cc.cwnd, s.cfg.SendWindow)
	return false
}

// ccDupAck counts a duplicate ACK: the third starts fast recovery, later
// ones inflate the window.
func (s *Stack) ccDupAck(i uint32, now int64) {
	c := &s.conns[i]
	cc := c.cc()
	mss := uint32(c.mss)
	if c.flags&fRecovery != 0 {
		// Each duplicate is a segment that left the network: the
		// inflated window may send a new one.
		cc.cwnd = min(cc.cwnd+mss, s.cfg.SendWindow+3*mss)
		if c.flags&fResp != 0 && s.push(i) && !isRtx(c.list) {
			s.armRtx(i, now)
		}
		return
	}
	if c.dupAcks < 3 {
		c.dupAcks++
	}
	if c.dupAcks != 3 || seqLT(c.sndUna, cc.recover) {
		// Not yet, or duplicates of what a timeout's go-back-N resent
		// (RFC 6582 4.1): no second reduction for one loss.
		return
	}
	cc.ssthresh = max((cc.sndMax-c.sndUna)/2, 2*mss)
	cc.recover = cc.sndMax
	cc.cwnd = cc.ssthresh + 3*mss
	c.flags |= fRecovery
	s.ctr.CwndReductions++
	if s.resendHead(i) {
		s.ctr.FastRetransmit++
	}
}

// ccTimeout collapses the window after a retransmission timeout.
func (s *Stack) ccTimeout(c *conn) {
	cc := c.cc()
	mss := uint32(c.mss)
	if c.retries == 1 {
		// Only the first timeout of a segment halves (RFC 5681 eq. 4).
		cc.ssthresh = max((cc.sndMax-c.sndUna)/2, 2*mss)
		s.ctr.CwndReductions++
	}
	cc.cwnd = mss
	cc.recover = cc.sndMax
	c.flags &^= fRecovery
	c.dupAcks = 0
}

// sendWindow returns how many bytes connection c may have unacknowledged:
// the peer's window, SendWindow and cwnd; at least one byte, so that a
// closed peer window is probed by a one-byte segment (its retransmissions
// bound a peer that never opens it).
func (s *Stack) sendWindow(c *conn) uint32 {
	return max(min(c.sndWnd, s.cfg.SendWindow, c.cc().cwnd), 1)
}
