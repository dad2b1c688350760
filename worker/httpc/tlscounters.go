package httpc

import (
	"sync/atomic"
	"time"
)

// tlsCounters are the TLS and HTTP/2 part of Counters.
type tlsCounters struct {
	full, resumed, nanos atomic.Int64
	goaways, resets      atomic.Int64
}

// TLSCounts are the TLS handshake and HTTP/2 frame counts of a
// CountersSnapshot.
type TLSCounts struct {
	// TLSHandshakes counts completed full TLS handshakes (certificate
	// sent and verified; what a server pays most for).
	TLSHandshakes int64
	// TLSResumed counts completed abbreviated handshakes that resumed a
	// session (TLSOptions.SessionResumption).
	TLSResumed int64
	// TLSHandshakeTime is the time spent in the completed handshakes of
	// both kinds (from ClientHello to Finished, after the TCP connect);
	// divide by TLSHandshakes+TLSResumed for the mean.
	TLSHandshakeTime time.Duration
	// H2GoAways and H2ResetStreams count the GOAWAY and RST_STREAM frames
	// received on HTTP/2 connections.
	H2GoAways, H2ResetStreams int64
}

// MeanTLSHandshake is the mean time of a completed handshake, 0 if none.
func (t TLSCounts) MeanTLSHandshake() time.Duration {
	n := t.TLSHandshakes + t.TLSResumed
	if n == 0 {
		return 0
	}
	return t.TLSHandshakeTime / time.Duration(n)
}

func (c *tlsCounters) snapshot() TLSCounts {
	return TLSCounts{
		TLSHandshakes:    c.full.Load(),
		TLSResumed:       c.resumed.Load(),
		TLSHandshakeTime: time.Duration(c.nanos.Load()),
		H2GoAways:        c.goaways.Load(),
		H2ResetStreams:   c.resets.Load(),
	}
}

func (cs counterSet) handshake(resumed bool, d time.Duration) {
	for _, c := range [...]*Counters{cs.own, &totals, cs.extra} {
		if c == nil {
			continue
		}
		if resumed {
			c.tls.resumed.Add(1)
		} else {
			c.tls.full.Add(1)
		}
		c.tls.nanos.Add(int64(d))
	}
}

func (cs counterSet) h2Frame(goaway bool) {
	for _, c := range [...]*Counters{cs.own, &totals, cs.extra} {
		if c == nil {
			continue
		}
		if goaway {
			c.tls.goaways.Add(1)
		} else {
			c.tls.resets.Add(1)
		}
	}
}
