package cluster

// maxNodes bounds the worker identities a Controller keeps (a variable so
// that tests can lower it).
var maxNodes = 10000

// evictGone makes room for a new identity when maxNodes are kept: it
// forgets one identity that is gone and was never picked (a client that
// registered and left, perhaps one of a flood of reconnections), so that
// such a flood cannot lock the real workers out. False when every kept
// identity is live or picked. c.mu held.
func (c *Controller) evictGone() bool {
	for id, n := range c.nodes {
		if n.gone != "" && n.name == "" {
			delete(c.nodes, id)
			return true
		}
	}
	return false
}
