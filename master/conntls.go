package master

import (
	"fmt"
	"strings"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// tlsRate follows a worker's TLS handshake count between heartbeats
// (issue 16): handshakes per second, full and resumed together.
type tlsRate struct {
	rate float64
	prev int64
}

// note records the counters of a heartbeat dt seconds after the previous
// one (had: there was a previous one).
func (r *tlsRate) note(had bool, dt float64, c *protocol.ConnCounters) {
	n := c.TLSHandshakes + c.TLSResumed
	if had && dt > 0 {
		r.rate = max(float64(n-r.prev)/dt, 0)
	}
	r.prev = n
}

// addTLS adds r's TLS and HTTP/2 counts to t.
func (t *connRow) addTLS(r connRow) {
	t.c.TLSHandshakes += r.c.TLSHandshakes
	t.c.TLSResumed += r.c.TLSResumed
	t.c.TLSHandshakeMicros += r.c.TLSHandshakeMicros
	t.c.H2GoAways += r.c.H2GoAways
	t.c.H2ResetStreams += r.c.H2ResetStreams
	t.tlsRate += r.tlsRate
}

// writeTLSLine adds the TLS handshake and HTTP/2 frame line under the
// connections table, when any was counted:
//
//	TLS handshakes: 1200 full, 0 resumed, 398.2/s, mean 2.41 ms; HTTP/2: 0 GOAWAY, 3 RST_STREAM
func writeTLSLine(b *strings.Builder, t connRow) {
	c := &t.c
	hs := c.TLSHandshakes + c.TLSResumed
	if hs > 0 {
		mean := time.Duration(c.TLSHandshakeMicros/hs) * time.Microsecond
		fmt.Fprintf(b, "TLS handshakes: %d full, %d resumed, %.1f/s, mean %.2f ms", c.TLSHandshakes, c.TLSResumed, t.tlsRate,
			float64(mean)/float64(time.Millisecond))
	}
	if c.H2GoAways > 0 || c.H2ResetStreams > 0 {
		if hs > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(b, "HTTP/2: %d GOAWAY, %d RST_STREAM", c.H2GoAways, c.H2ResetStreams)
	}
	if hs > 0 || c.H2GoAways > 0 || c.H2ResetStreams > 0 {
		b.WriteString("\n")
	}
}
