package stack

// Timers. A record is on at most one timer at a time, linked by table index
// through the record (next, prev, timerAt, list), so timers cost no memory
// beyond the records and every arm and disarm is O(1).
//
// Fixed timeouts use dperf's FIFO lists: one list per timeout, appending
// with now+timeout keeps each list sorted as long as now does not go back,
// so expiry pops from the head. Retransmission backs off without an RTT
// estimator by one FIFO list per backoff level: level k waits
// RetransmitTimeout<<k, the last level (and any above) MaxRetransmitTimeout.
//
// The users' waits vary per connection, so they go on a hierarchical timer
// wheel (see wheel.go) instead.
const (
	tNone uint8 = iota
	tIdle
	tThink
	tWheel0 // wheel levels 0..2 and the overflow list (wheel.go)
	tWheel1
	tWheel2
	tOverflow
	tRetransmit // backoff level 0; level k is tRetransmit+k
)

// nBackoff is the number of retransmission backoff levels.
const nBackoff = 16

const nLists = tRetransmit + nBackoff

type timerList struct {
	head, tail uint32
	timeout    int64
}

// isFIFO reports whether list l is a FIFO list (not the wheel).
func isFIFO(l uint8) bool { return l != tNone && (l < tWheel0 || l > tOverflow) }

// initTimers sets up the FIFO lists and the wheel.
func (s *Stack) initTimers() {
	for l := range s.timers {
		s.timers[l].head, s.timers[l].tail = none, none
	}
	s.timers[tIdle].timeout = int64(s.cfg.IdleTimeout)
	s.timers[tThink].timeout = int64(s.cfg.ThinkTime)
	rto, top := int64(s.cfg.RetransmitTimeout), int64(s.cfg.MaxRetransmitTimeout)
	for k := range nBackoff {
		d := top
		if k < nBackoff-1 && rto < top>>k {
			d = rto << k
		}
		s.timers[tRetransmit+uint8(k)].timeout = d
	}
	s.wheel.init()
}

// armRtx arms the retransmission timer of record i at the backoff level of
// its retry count.
func (s *Stack) armRtx(i uint32, now int64) {
	s.arm(i, tRetransmit+uint8(min(int(s.conns[i].retries), nBackoff-1)), now)
}

// arm moves record i to the tail of FIFO list l, expiring at now+timeout.
func (s *Stack) arm(i uint32, l uint8, now int64) {
	s.disarm(i)
	c := &s.conns[i]
	tl := &s.timers[l]
	c.list, c.timerAt, c.next, c.prev = l, now+tl.timeout, none, tl.tail
	if tl.tail == none {
		tl.head = i
	} else {
		s.conns[tl.tail].next = i
	}
	tl.tail = i
}

// disarm takes record i off its timer, if any.
func (s *Stack) disarm(i uint32) {
	c := &s.conns[i]
	switch {
	case c.list == tNone:
		return
	case !isFIFO(c.list):
		s.wheelRemove(i)
		return
	}
	tl := &s.timers[c.list]
	if c.prev == none {
		tl.head = c.next
	} else {
		s.conns[c.prev].next = c.next
	}
	if c.next == none {
		tl.tail = c.prev
	} else {
		s.conns[c.next].prev = c.prev
	}
	c.list, c.next, c.prev = tNone, none, none
}

// isRtx reports whether list l is a retransmission list.
func isRtx(l uint8) bool { return l >= tRetransmit }

// expire runs every timer due at now. A handler may re-arm the record; a
// re-armed record expires no earlier than now plus a positive timeout, so
// each list's loop ends.
func (s *Stack) expire(now int64) {
	for l := tIdle; l < nLists; l++ {
		if !isFIFO(l) {
			continue
		}
		tl := &s.timers[l]
		for tl.head != none && s.conns[tl.head].timerAt <= now {
			i := tl.head
			s.disarm(i)
			s.timeout(i, l, now)
		}
	}
	s.wheelAdvance(now)
}

func (s *Stack) timeout(i uint32, l uint8, now int64) {
	if s.cfg.Mode == Client {
		s.clientTimeout(i, l, now)
	} else {
		s.serverTimeout(i, l, now)
	}
}
