package stack

// Users: a client stack with Config.Program runs one Locust user per
// connection record (see Program). The user's state lives in the record
// (type user) and outlives its connections: a connection that breaks ends
// the user's task, the user waits as after any task, then reconnects from
// the same record (counted in Counters.Reconnects) and keeps its class.
// Each class keeps its live users in a list linked through the records, so
// StopClass and Users never scan the table.

// LaunchClass opens up to n users of class at now, taking the records in
// turn as Launch does (a record in use, or holding a live user, is skipped
// and counted in LaunchSkipped). It returns how many SYNs it sent: none
// before the next hop is resolved, in Server mode, or for a class outside
// the Program (without a Program, only class 0 exists and LaunchClass(now,
// 0, n) is Launch(now, n)).
func (s *Stack) LaunchClass(now int64, class, n int) int {
	if s.classes == nil {
		if class != 0 {
			return 0
		}
		return s.Launch(now, n)
	}
	if s.cfg.Mode != Client || !s.resolved || class < 0 || class >= len(s.classes) {
		return 0
	}
	s.now = now
	cl := &s.classes[class]
	opened := 0
	for range n {
		i := s.cursor
		s.cursor++
		if s.cursor == uint32(len(s.conns)) {
			s.cursor = 0
		}
		c := &s.conns[i]
		if c.state != stClosed || c.uflags&uLive != 0 {
			s.ctr.LaunchSkipped++
			continue
		}
		c.user = user{cnext: cl.head, cprev: none, class: uint16(class), task: ^uint16(0), uflags: uLive}
		if cl.head != none {
			s.conns[cl.head].cprev = i
		}
		cl.head = i
		cl.users++
		if cl.nOnStart > 0 {
			c.uflags |= uOnStart
			c.taskAt = now
		} else {
			s.pickTask(i, now)
		}
		s.connect(i, now)
		opened++
	}
	s.flush()
	return opened
}

// StopClass stops up to n running users of class at now, the most recently
// launched first: a user waiting between tasks sends its FIN now; one
// awaiting a response finishes that response (bounded by IdleTimeout), then
// sends its FIN; one still connecting sends its FIN once connected; one
// waiting to reconnect is freed at once. It returns how many users it
// marked. The cost is O(n): each class keeps its live users in a list linked
// through the records, so the table is never scanned.
func (s *Stack) StopClass(now int64, class, n int) int {
	if s.classes == nil || class < 0 || class >= len(s.classes) {
		return 0
	}
	s.now = now
	cl := &s.classes[class]
	stopped := 0
	for stopped < n && cl.head != none {
		i := cl.head
		s.unlinkUser(i)
		c := &s.conns[i]
		c.uflags |= uStop
		stopped++
		if s.unmark(i) {
			s.roundLost()
		}
		switch {
		case c.state == stClosed:
			s.disarm(i)
			s.freeUser(i)
		case c.state == stEstablished && c.flags&fAwait == 0 && c.uflags&uWaiting != 0:
			s.disarm(i)
			s.sendFin(i, now)
		}
	}
	s.flush()
	return stopped
}

// Classes returns the number of user classes: len(Program.Classes), or 1
// without a Program in client mode (0 in server mode).
func (s *Stack) Classes() int {
	switch {
	case s.classes != nil:
		return len(s.classes)
	case s.cfg.Mode == Client:
		return 1
	}
	return 0
}

// Users returns the live users of class not yet stopping: connected,
// connecting, or waiting to reconnect after their connection closed (0 for
// a class outside the Program). O(1).
func (s *Stack) Users(class int) int {
	if class < 0 || class >= len(s.classes) {
		return 0
	}
	return s.classes[class].users
}

// SecondRound makes every live user not stopping take part in a second
// round (RFC 3511 5.2): send its last request again on the connection it
// holds (no new SYN). A user established and waiting between tasks is
// ready at once; one not there yet (SYN sent, running on_start or a task,
// a request in flight) is marked and is ready as soon as its task ends,
// before its wait. Ready users send their round's request at most
// Config.SecondRoundWindow in flight at a time, in the order they became
// ready: the others queue (holding their wait, no timer armed) and Poll
// sends the next ones as responses come back, so that one round of
// millions of users never overflows the peer's or its own receive rings.
// A user without a connection (waiting to reconnect, or closing after the
// peer's Connection: close) counts as lost at once, as does a marked or
// queued user whose connection fails or closes, or that is stopped, before
// its request goes. After the round's response the user goes on waiting
// until its wait ends (at once if it ended while queued). A user already
// in a round (marked, queued or its request in flight) is left out of
// another. It returns how many users it took in: sent now, pending
// (marked or queued), and lost at once; Counters.SecondRoundSent, OK,
// Failed, Lost and Pending count them, and the round is over when OK +
// Failed grew by that number. The cost is one walk of the live users'
// lists, O(users), with no allocation; each later release is O(1).
func (s *Stack) SecondRound(now int64) int {
	s.now = now
	taken := 0
	for k := range s.classes {
		for i := s.classes[k].head; i != none; i = s.conns[i].cnext {
			c := &s.conns[i]
			if c.uflags&(uRound|uSecond) != 0 {
				continue
			}
			taken++
			switch {
			case c.state == stEstablished && c.uflags&uWaiting != 0 && c.flags&fAwait == 0:
				if !s.roundSendable(i) {
					s.roundLost()
					continue
				}
				s.disarm(i)
				c.uflags |= uRound
				s.ctr.SecondRoundPending++
				s.roundReady(i, now)
			case c.state == stSynSent || c.state == stEstablished:
				c.uflags |= uRound
				s.ctr.SecondRoundPending++
			default:
				s.roundLost()
			}
		}
	}
	s.flush()
	return taken
}

// roundSendable reports whether record i's user, established and waiting
// between tasks, can send its last request again.
func (s *Stack) roundSendable(i uint32) bool {
	c := &s.conns[i]
	return c.sndUna == c.sndNxt && c.pos != 0 && c.uflags&uResume == 0
}

// roundReady sends the round's request of record i's marked user, idle
// between tasks with no timer armed, if the window has room and no user
// queued before it; otherwise it queues the user, still marked. It
// reports whether the request went.
func (s *Stack) roundReady(i uint32, now int64) bool {
	if s.rqHead == 0 && s.roundInFlight < s.cfg.SecondRoundWindow {
		s.unmark(i)
		s.sendRound(i, now)
		return true
	}
	c := &s.conns[i]
	c.qprev, c.qnext = s.rqTail, 0
	if s.rqTail == 0 {
		s.rqHead = i + 1
	} else {
		s.conns[s.rqTail-1].qnext = i + 1
	}
	s.rqTail = i + 1
	return false
}

// dequeue takes record i's user off the round's queue, if it is on it.
func (s *Stack) dequeue(i uint32) {
	c := &s.conns[i]
	if c.qprev == 0 && s.rqHead != i+1 {
		return
	}
	if c.qprev == 0 {
		s.rqHead = c.qnext
	} else {
		s.conns[c.qprev-1].qnext = c.qnext
	}
	if c.qnext == 0 {
		s.rqTail = c.qprev
	} else {
		s.conns[c.qnext-1].qprev = c.qprev
	}
	c.qnext, c.qprev = 0, 0
}

// releaseRound sends the requests of queued users while the window has
// room: O(1) per request, nothing when the queue is empty.
func (s *Stack) releaseRound(now int64) {
	for s.rqHead != 0 && s.roundInFlight < s.cfg.SecondRoundWindow {
		i := s.rqHead - 1
		s.unmark(i) // dequeues it
		c := &s.conns[i]
		if c.state != stEstablished || c.flags&fAwait != 0 || !s.roundSendable(i) {
			s.roundLost() // not reached: a queued user's connection is idle
			continue
		}
		s.sendRound(i, now)
	}
}

// sendRound sends the second-round request of record i's user, whose
// task just ended: its last request again.
func (s *Stack) sendRound(i uint32, now int64) {
	c := &s.conns[i]
	c.pos--
	c.uflags |= uSecond
	s.roundInFlight++
	s.sendRequest(i, now)
	s.ctr.SecondRoundSent++
}

// roundAnswered ends the round's request in flight of record i's user,
// answered or failed; Poll sends the next queued ones.
func (s *Stack) roundAnswered(i uint32) {
	s.conns[i].uflags &^= uSecond
	s.roundInFlight--
}

// roundLost counts a user of the round whose request cannot go.
func (s *Stack) roundLost() {
	s.ctr.SecondRoundLost++
	s.ctr.SecondRoundFailed++
}

// unmark takes record i's user out of the round's pending users (and off
// the queue); it reports whether it was marked.
func (s *Stack) unmark(i uint32) bool {
	c := &s.conns[i]
	if c.uflags&uRound == 0 {
		return false
	}
	c.uflags &^= uRound
	s.ctr.SecondRoundPending--
	s.dequeue(i)
	return true
}

// unlinkUser takes record i's user off its class list.
func (s *Stack) unlinkUser(i uint32) {
	c := &s.conns[i]
	cl := &s.classes[c.class]
	if c.cprev == none {
		cl.head = c.cnext
	} else {
		s.conns[c.cprev].cnext = c.cnext
	}
	if c.cnext != none {
		s.conns[c.cnext].cprev = c.cprev
	}
	c.cnext, c.cprev = none, none
	cl.users--
}

// freeUser ends the stopped user of record i; the record is free once
// closed.
func (s *Stack) freeUser(i uint32) {
	s.conns[i].user = user{cnext: none, cprev: none}
}

func (s *Stack) rand() uint64 {
	x := s.rng
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	s.rng = x
	return x
}

// pickTask starts the next task of record i's user: by weight from the
// cumulative table, or the next in turn for a sequential class.
func (s *Stack) pickTask(i uint32, now int64) {
	c := &s.conns[i]
	cl := &s.classes[c.class]
	n := uint16(len(cl.cum))
	if cl.seq {
		c.task++ // ^0 (none yet) wraps to 0
		if c.task >= n {
			c.task = 0
		}
	} else {
		r := uint32(s.rand() % uint64(cl.cum[n-1]))
		lo, hi := uint16(0), n-1
		for lo < hi {
			mid := (lo + hi) / 2
			if cl.cum[mid] > r {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		c.task = lo
	}
	c.pos = cl.taskStart[c.task]
	c.taskAt = now
	c.uflags &^= uOnStart
}

// waitFor returns the wait after the task of record i's user that ends at
// now, with Locust's semantics.
func (s *Stack) waitFor(i uint32, now int64) int64 {
	c := &s.conns[i]
	cl := &s.classes[c.class]
	w := cl.wait
	switch w.Kind {
	case WaitConstant:
		return int64(w.Min)
	case WaitBetween:
		span := uint64(w.Max - w.Min)
		if span == 0 {
			return int64(w.Min)
		}
		return int64(w.Min) + int64(s.rand()%span)
	}
	if c.uflags&uPaced == 0 {
		c.uflags |= uPaced
		return cl.pace
	}
	return max(0, cl.pace-(now-c.taskAt))
}

// phaseEnd returns the step after the last of the phase record i's user
// is in: its OnStart or its task.
func (s *Stack) phaseEnd(i uint32) uint16 {
	c := &s.conns[i]
	cl := &s.classes[c.class]
	if c.uflags&uOnStart != 0 {
		return cl.nOnStart
	}
	return cl.taskStart[c.task+1]
}

// userConnected runs a user whose connection just opened: its current
// request (timed from the SYN), or its FIN when stopping.
func (s *Stack) userConnected(i uint32, now int64) {
	c := &s.conns[i]
	if c.uflags&uStop != 0 {
		s.sendFin(i, now)
		return
	}
	// Like Locust's HTTP client, a request that opened its connection is
	// timed from the first SYN.
	syn := c.sentAt
	s.sendRequest(i, now)
	c.sentAt = syn
}

// userResponse moves record i's user on after a complete response: the
// next request of its phase, or its wait, or its FIN when stopping. When
// the peer closes after this response (its FIN, or Connection: close), the
// connection closes and the user goes on from a new one: with the rest of
// its phase at once, or after its wait.
func (s *Stack) userResponse(i uint32, now int64, ok bool) {
	c := &s.conns[i]
	closing := c.flags&fPeerFin != 0 || c.http.flags&pfClose != 0
	c.pos++
	switch {
	case c.uflags&uSecond != 0:
		s.roundAnswered(i)
		s.countSecond(ok)
	case c.uflags&uStop == 0 && c.pos < s.phaseEnd(i):
		if !closing {
			s.sendRequest(i, now)
			return
		}
		c.uflags |= uResume
	default:
		c.uflags |= uWaiting
		c.wakeAt = now + s.waitFor(i, now)
		s.taskEnded(i, now, ok)
	}
	if c.uflags&(uRound|uWaiting) == uRound|uWaiting {
		if c.flags&fPeerFin != 0 || closing {
			s.unmark(i)
			s.roundLost() // the connection ends with this response
		} else {
			if !s.roundReady(i, now) { // queued: no timer, the response ACKed now
				s.disarm(i)
				s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
			}
			return
		}
	}
	switch {
	case c.flags&fPeerFin != 0:
		c.flags &^= fPeerFin // clientFin follows, then userClosed
	case c.uflags&uStop != 0 || closing:
		s.sendFin(i, now)
	case c.wakeAt <= now:
		s.userWake(i, now)
	default:
		s.emit(&s.tAck, i, c.sndNxt, c.rcvNxt, nil, 0)
		s.wheelArm(i, now, c.wakeAt)
	}
}

func (s *Stack) countSecond(ok bool) {
	if ok {
		s.ctr.SecondRoundOK++
	} else {
		s.ctr.SecondRoundFailed++
	}
}

// userFailed ends the task of record i's user whose request failed: it
// waits as after a task, then goes on (reconnecting if its connection is
// gone by then). A failed second-round request keeps the wait it was in.
func (s *Stack) userFailed(i uint32, now int64) {
	c := &s.conns[i]
	if c.uflags&uSecond != 0 {
		s.roundAnswered(i)
		c.pos++
		s.ctr.SecondRoundFailed++
		return
	}
	if s.unmark(i) {
		s.roundLost()
	}
	c.uflags &^= uResume
	if c.uflags&uWaiting == 0 {
		c.uflags |= uWaiting
		c.wakeAt = now + s.waitFor(i, now)
		s.taskEnded(i, now, false)
	}
}

// userClosed handles the close of record i's connection: a stopping user
// ends; one resuming its phase reconnects at the next wheel tick; any other
// waits (at least one wheel tick) and reconnects.
func (s *Stack) userClosed(i uint32) {
	c := &s.conns[i]
	if s.unmark(i) {
		s.roundLost()
	}
	switch {
	case c.uflags&uStop != 0:
		s.freeUser(i)
	case c.uflags&uResume != 0:
		s.wheelArm(i, s.now, s.now)
	default:
		if c.uflags&uWaiting == 0 {
			c.uflags |= uWaiting
			c.wakeAt = s.now + s.waitFor(i, s.now)
		}
		s.wheelArm(i, s.now, c.wakeAt)
	}
}

// wheelFire runs a user whose wait ended.
func (s *Stack) wheelFire(i uint32, now int64) {
	if s.wheelFn != nil {
		s.wheelFn(i, now)
		return
	}
	if s.conns[i].uflags&uLive == 0 {
		return
	}
	s.userWake(i, now)
}

// userWake starts record i's user's next task (or the rest of its phase
// after a Connection: close): on its connection, or on a new one when the
// last broke or was closed by the peer.
func (s *Stack) userWake(i uint32, now int64) {
	c := &s.conns[i]
	c.uflags &^= uWaiting
	if c.uflags&uResume != 0 {
		c.uflags &^= uResume
	} else {
		s.pickTask(i, now)
	}
	if c.state == stClosed {
		s.ctr.Reconnects++
		s.connect(i, now)
		return
	}
	s.sendRequest(i, now)
}
