package stack

// On-demand users: an open-loop driver (capacity/dpprobe's TPS trial)
// holds users that wait "forever" between tasks and starts each one's next
// task when an arrival is due, on whichever user is idle. SetOnTaskEnd
// tells it which records went idle; Wake ends one's wait now. Both are
// O(1) and allocate nothing.

// SetOnTaskEnd sets fn (nil: none), called in the polling goroutine when a
// user's phase ends and its wait begins: after the last response of its
// task (or of its OnStart requests), ok when that response's status was
// accepted, or after a request of it failed (ok false; its connection may
// be closing). rec is the user's record, for Wake. fn must not call the
// Stack: it runs inside Poll (or Wake), before the user's wait is armed.
// A second-round request ends no phase and does not call fn.
func (s *Stack) SetOnTaskEnd(fn func(rec uint32, now int64, ok bool)) {
	s.onTaskEnd = fn
}

func (s *Stack) taskEnded(i uint32, now int64, ok bool) {
	if s.onTaskEnd != nil {
		s.onTaskEnd(i, now, ok)
	}
}

// Wake ends the wait of record rec's user at now: its next task starts now
// on the connection it holds, or from a new connection (counted in
// Counters.Reconnects; the request is timed from the SYN) if its last one
// closed, or, if that connection is still closing, from a new one as soon
// as it has closed. It reports false, doing nothing, for a record that
// holds no user waiting between tasks (none, stopping, in a second round,
// or busy), and in a stack without a Program.
func (s *Stack) Wake(now int64, rec uint32) bool {
	if s.classes == nil || uint64(rec) >= uint64(len(s.conns)) {
		return false
	}
	c := &s.conns[rec]
	if c.uflags&(uLive|uStop|uWaiting|uRound|uSecond|uResume) != uLive|uWaiting || c.flags&fAwait != 0 {
		return false
	}
	s.now = now
	switch c.state {
	case stClosed, stEstablished:
		s.disarm(rec)
		s.userWake(rec, now)
		s.flush()
	default: // closing: userClosed arms the wheel at wakeAt, now
		c.wakeAt = now
	}
	return true
}
