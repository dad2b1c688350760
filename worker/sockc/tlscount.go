package sockc

import (
	"crypto/tls"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// tlsCounts are the completed TLS handshakes of wss:// and tls://
// connections, full and resumed, and their summed time: the counts the
// HTTP client keeps (httpc.TLSCounts), so that a worker's heartbeat
// (protocol.ConnCounters.TLSHandshakes, TLSResumed, TLSHandshakeMicros)
// and the connections CSV's TLS columns cover socket tasks too. Failed
// handshakes are connect errors by kind, as before.
type tlsCounts struct {
	full, resumed, micros atomic.Int64
}

// handshaked counts one completed handshake of state that took d.
func (c *Counters) handshaked(state tls.ConnectionState, d time.Duration) {
	if c == nil {
		return
	}
	if state.DidResume {
		c.tls.resumed.Add(1)
	} else {
		c.tls.full.Add(1)
	}
	c.tls.micros.Add(d.Microseconds())
}

// addTLSTo adds the handshake counts to a heartbeat's counters.
func (c *Counters) addTLSTo(pc *protocol.ConnCounters) {
	pc.TLSHandshakes += c.tls.full.Load()
	pc.TLSResumed += c.tls.resumed.Load()
	pc.TLSHandshakeMicros += c.tls.micros.Load()
}
