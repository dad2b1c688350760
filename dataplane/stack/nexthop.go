package stack

import "github.com/cicada-load/cicada/dataplane/wire"

// NextHop returns the next hop's MAC and whether it is known (resolved by
// ARP, learnt from the client's frames, or set by SetNextHop).
func (s *Stack) NextHop() (wire.MAC, bool) { return s.nextHop, s.resolved }

// SetNextHop makes m the next hop's MAC, as if it had been resolved: an
// engine resolves on one core (ARP reaches only core 0's socket) and hands
// the MAC to the other cores' stacks with it. Setting the MAC already known
// does nothing; a new one rebuilds the frame templates. It is called on the
// stack's own goroutine, like Poll.
func (s *Stack) SetNextHop(m wire.MAC) { s.setNextHop(m) }
