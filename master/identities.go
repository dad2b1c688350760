package master

// Bounds on what the master remembers of workers that are gone. Every
// identity ever seen used to be kept (its index, last spawn timestamp,
// stop and quit marks, connection row, warnings): 150,000 churned
// identities added 52 MB. An identity that leaves st.reg.nodes, or that the
// master only heard from without registering it, is now queued as gone
// and forgotten once it has been gone for goneTicks heartbeat ticks (the
// time a missing worker is kept, plus the stop timeout), or at once when more than maxGone
// identities are queued, oldest first. An identity that registers again
// before that keeps what the master knew.

// defaultMaxGone bounds the gone identities remembered (goneIDs.max):
// about 350 bytes each.
const defaultMaxGone = 10_000

// maxWarnKinds bounds the kinds of warning kept per worker.
const maxWarnKinds = 16

// maxWarnings bounds the load generator warnings kept for the outputs
// (each worker warns once per kind); later ones are only counted.
const maxWarnings = 1000

// goneIDs is the queue of gone identities, oldest first.
type goneIDs struct {
	since map[string]int // identity → liveness tick when it was queued
	queue []string       // identities in since, oldest first (may repeat ids no longer in since)
	head  int
	ticks int // liveness ticks so far
	max   int // if zero, defaultMaxGone (tests lower it)
}

// noteGone queues id to be forgotten unless it is (again) a node.
// Precondition: loop.
func (s *loopState) noteGone(id string) {
	g := &s.reg.gone
	if _, ok := s.reg.nodes[id]; ok {
		return
	}
	if g.since == nil {
		g.since = make(map[string]int)
	}
	if _, ok := g.since[id]; ok {
		return
	}
	g.since[id] = g.ticks
	g.queue = append(g.queue, id)
}

// goneTicks is how many liveness ticks a gone identity is remembered:
// DeadTicks, plus the stop timeout (a worker that sent client_stopped may
// heartbeat that long and must not be adopted meanwhile).
func (m *Master) goneTicks() int {
	return m.opts.DeadTicks + int((m.opts.StopTimeout+m.opts.HeartbeatInterval-1)/m.opts.HeartbeatInterval)
}

// forgetGone forgets the identities gone for more than deadTicks ticks,
// and the oldest ones beyond maxGone. Precondition: loop.
func (m *Master) forgetGone(deadTicks int) {
	st := &m.st
	g := &st.reg.gone
	maxGone := g.max
	if maxGone == 0 {
		maxGone = defaultMaxGone
	}
	for g.head < len(g.queue) {
		id := g.queue[g.head]
		at, queued := g.since[id]
		if queued && g.ticks-at <= deadTicks && len(g.since) <= maxGone {
			break
		}
		g.queue[g.head] = ""
		g.head++
		if !queued {
			continue
		}
		delete(g.since, id)
		if _, back := st.reg.nodes[id]; back {
			continue // registered again: a node; queued again when it leaves
		}
		m.forgetIdentity(id)
	}
	if g.head > len(g.queue)/2 && g.head > 64 { // compact the consumed front
		g.queue = append(g.queue[:0], g.queue[g.head:]...)
		g.head = 0
	}
}

// forgetIdentity drops every per-identity table entry of a gone worker.
// Its connection counters are folded into the row of forgotten workers,
// so the connection totals stay whole. Precondition: loop; id is not a
// node.
func (m *Master) forgetIdentity(id string) {
	st := &m.st
	delete(st.reg.indexes, id)
	delete(st.reg.lastTS, id)
	delete(st.reg.stopped, id)
	delete(st.reg.quitted, id)
	delete(st.conn.warned, id)
	if r, ok := st.conn.rows[id]; ok {
		st.conn.forgotten.fold(r)
		delete(st.conn.rows, id)
		st.conn.unsorted = true // order is filtered when next sorted
	}
}
