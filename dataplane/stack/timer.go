package stack

// Timer lists, dperf's: one FIFO list per fixed timeout, doubly linked by
// table index through the records. Appending with now+timeout keeps each
// list sorted as long as now does not go back, so expiry pops from the head
// and every operation is O(1) without memory beyond the records.
const (
	tNone uint8 = iota
	tRetransmit
	tIdle
	tThink
	nLists
)

type timerList struct {
	head, tail uint32
	timeout    int64
}

// arm moves record i to the tail of list l, expiring at now+timeout.
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

// disarm takes record i off its timer list, if any.
func (s *Stack) disarm(i uint32) {
	c := &s.conns[i]
	if c.list == tNone {
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

// expire runs every timer due at now. A handler may re-arm the record; a
// re-armed record expires no earlier than now plus a positive timeout, so
// each list's loop ends.
func (s *Stack) expire(now int64) {
	for l := tRetransmit; l < nLists; l++ {
		tl := &s.timers[l]
		for tl.head != none && s.conns[tl.head].timerAt <= now {
			i := tl.head
			s.disarm(i)
			s.timeout(i, l, now)
		}
	}
}

func (s *Stack) timeout(i uint32, l uint8, now int64) {
	if s.cfg.Mode == Client {
		s.clientTimeout(i, l, now)
	} else {
		s.serverTimeout(i, l, now)
	}
}
