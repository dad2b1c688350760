package master

// registry is the loop's view of the workers: the nodes and what outlives
// them (indexes, spawn timestamps, stop and quit marks), kept until the
// identity is forgotten (see noteGone). Precondition: loop.
type registry struct {
	nodes   map[string]*node   // add and delete through addNode and deleteNode
	users   int64              // users reported by all nodes
	indexes map[string]int     // worker index by id (see Master.index); forgotten with gone ids
	nextIdx int                // the next worker index
	gone    goneIDs            // identities to forget (see noteGone)
	lastTS  map[string]float64 // last spawn timestamp per worker id (never reset, as the worker's); see spawnedTo
	stopped map[string]bool    // sent client_stopped, not yet client_ready: not adopted
	quitted map[string]bool    // sent quit: not adopted
}
