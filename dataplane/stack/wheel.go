package stack

// The users' waits vary per connection, so they cannot share a FIFO list;
// they go on a hierarchical timer wheel linked through the records like the
// FIFO lists: three levels of 256 slots, of one tick (2^20 ns, about
// 1.05 ms), 256 ticks (about 268 ms) and 65,536 ticks (about 68.7 s), and an
// overflow list for waits beyond 2^24 ticks (about 4.9 hours). A slot is an
// unordered doubly linked list, so arm and disarm are O(1). An entry due at
// tick e sits in the lowest level whose current block holds e; when the
// wheel enters a block of a higher level, that slot's entries move down
// (cascade), so an entry moves at most three times, plus one look every
// 4.9 hours while in the overflow list. Advancing costs one step per tick
// passed (about 1,000 a second), not a scan of the records: a 900 s wait
// across 10,000,000 records costs each record three moves. Timers fire at
// the first tick at or after their time, at most one tick late.
const (
	wheelShift = 20 // one tick is 1<<wheelShift ns
	wheelTick  = int64(1) << wheelShift
	wheelSlots = 256
)

type wheel struct {
	slots    [3][wheelSlots]uint32 // slot heads
	overflow uint32
	now      int64 // ticks up to now have fired
	started  bool
	n        int    // entries
	cnt      [4]int // entries per level (tWheel0..tOverflow)
}

func (w *wheel) init() {
	for l := range w.slots {
		for k := range w.slots[l] {
			w.slots[l][k] = none
		}
	}
	w.overflow = none
}

// head returns the list head of an entry on level l (tWheel0..tOverflow)
// due at tick e.
func (w *wheel) head(l uint8, e int64) *uint32 {
	switch l {
	case tWheel0:
		return &w.slots[0][e&0xff]
	case tWheel1:
		return &w.slots[1][e>>8&0xff]
	case tWheel2:
		return &w.slots[2][e>>16&0xff]
	}
	return &w.overflow
}

// wheelArm puts record i on the wheel, due at at (nanoseconds), now being
// the caller's clock.
func (s *Stack) wheelArm(i uint32, now, at int64) {
	s.disarm(i)
	w := &s.wheel
	if !w.started {
		w.now, w.started = now>>wheelShift, true
	}
	e := (at + wheelTick - 1) >> wheelShift
	s.wheelPlace(i, max(e, w.now+1), w.now+1)
	w.n++
}

// wheelPlace links record i, due at tick e >= base, where base is the first
// tick not yet processed.
func (s *Stack) wheelPlace(i uint32, e, base int64) {
	w := &s.wheel
	var l uint8
	switch {
	case e>>8 == base>>8:
		l = tWheel0
	case e>>16 == base>>16:
		l = tWheel1
	case e>>24 == base>>24:
		l = tWheel2
	default:
		l = tOverflow
	}
	h := w.head(l, e)
	c := &s.conns[i]
	c.list, c.timerAt, c.prev, c.next = l, e, none, *h
	w.cnt[l-tWheel0]++
	if *h != none {
		s.conns[*h].prev = i
	}
	*h = i
}

// wheelUnlink takes record i off its wheel slot without counting it out.
func (s *Stack) wheelUnlink(i uint32) {
	c := &s.conns[i]
	h := s.wheel.head(c.list, c.timerAt)
	s.wheel.cnt[c.list-tWheel0]--
	if c.prev == none {
		*h = c.next
	} else {
		s.conns[c.prev].next = c.next
	}
	if c.next != none {
		s.conns[c.next].prev = c.prev
	}
	c.list, c.next, c.prev = tNone, none, none
}

// wheelRemove takes record i off the wheel.
func (s *Stack) wheelRemove(i uint32) {
	s.wheelUnlink(i)
	s.wheel.n--
}

// cascade moves every entry of list *h down, relative to tick base.
func (s *Stack) cascade(h *uint32, base int64, keepFar bool) {
	i := *h
	for i != none {
		c := &s.conns[i]
		next, e := c.next, c.timerAt
		if keepFar && e>>24 != base>>24 {
			i = next
			continue
		}
		s.wheelUnlink(i)
		s.wheelPlace(i, e, base)
		i = next
	}
}

// wheelAdvance fires every wheel entry due at or before now.
func (s *Stack) wheelAdvance(now int64) {
	w := &s.wheel
	target := now >> wheelShift
	if !w.started {
		w.now, w.started = target, true
		return
	}
	if w.n == 0 {
		w.now = max(w.now, target)
		return
	}
	for w.now < target && w.n > 0 {
		if w.cnt[0] == 0 {
			// Nothing fires before the next block boundary of the
			// lowest level holding entries: jump to just before it.
			next := w.now | 0xffffff
			switch {
			case w.cnt[1] != 0:
				next = w.now | 0xff
			case w.cnt[2] != 0:
				next = w.now | 0xffff
			}
			if next >= target {
				break
			}
			w.now = next
		}
		t := w.now + 1
		if t&0xff == 0 {
			if t&0xffff == 0 {
				if t&0xffffff == 0 {
					s.cascade(&w.overflow, t, true)
				}
				s.cascade(&w.slots[2][t>>16&0xff], t, false)
			}
			s.cascade(&w.slots[1][t>>8&0xff], t, false)
		}
		w.now = t
		h := &w.slots[0][t&0xff]
		for *h != none {
			i := *h
			s.wheelRemove(i)
			s.wheelFire(i, now)
		}
	}
	w.now = max(w.now, target)
}
