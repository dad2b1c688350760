package cluster

import "time"

// malformedEvery is how often, at most, the controller warns of malformed
// messages: a peer that floods its port with them must not flood its log
// too. The warning says how many were dropped since the last one.
const malformedEvery = time.Second

// malformedLog rate-limits the malformed-message warning (guarded by
// Controller.mu).
type malformedLog struct {
	last    time.Time
	dropped int64
}

// warnMalformed logs a malformed message from id, at most once per
// malformedEvery; c.mu held.
func (c *Controller) warnMalformed(id string, err error) {
	m := &c.malformed
	m.dropped++
	now := time.Now()
	if !m.last.IsZero() && now.Sub(m.last) < malformedEvery {
		return
	}
	c.log.Warn("malformed message from a worker: dropped", "worker", printable(id), "error", printable(err.Error()), "dropped", m.dropped)
	m.last, m.dropped = now, 0
}
