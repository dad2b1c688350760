package httpc

import (
	"strconv"
	"sync/atomic"
)

// CloseCause says why a connection was closed.
type CloseCause uint8

// The close causes.
const (
	CloseClient          CloseCause = iota // Client.Close
	CloseServerIdle                        // the server closed (or reset) the idle keep-alive connection
	CloseServerRequested                   // the response said Connection: close, was HTTP/1.0, or was delimited by EOF
	CloseError                             // a failed exchange (timeout, reset, protocol error, unexpected data)
	CloseCanceled                          // the context was canceled mid-request
	CloseOneShot                           // a one-request connection to another origin finished
	numCloseCauses
)

// NumCloseCauses is the number of CloseCauses, for arrays indexed by them.
const NumCloseCauses = int(numCloseCauses)

var closeCauseNames = [numCloseCauses]string{
	CloseClient:          "client",
	CloseServerIdle:      "server closed idle",
	CloseServerRequested: "server requested close",
	CloseError:           "error",
	CloseCanceled:        "canceled",
	CloseOneShot:         "one-shot",
}

// String returns a short label ("server closed idle", ...).
func (c CloseCause) String() string {
	if c < numCloseCauses {
		return closeCauseNames[c]
	}
	return "CloseCause(" + strconv.Itoa(int(c)) + ")"
}

// Counters counts connection events. Every Client keeps its own Counters
// and also adds every event to the package-wide totals (Totals) and, if
// set, to Options.Counters. All methods are safe for concurrent use; the
// zero value is ready.
type Counters struct {
	connects      atomic.Int64
	reconnects    atomic.Int64
	open          atomic.Int64
	connectingN   atomic.Int64
	closes        [numCloseCauses]atomic.Int64
	connectErrors [numKinds]atomic.Int64
	errors        [numKinds]atomic.Int64
	tls           tlsCounters // handshakes, resumptions, HTTP/2 frames (tlscounters.go)
}

// CountersSnapshot is a point-in-time copy of Counters.
type CountersSnapshot struct {
	// Connects counts successful connects (TCP plus TLS handshake).
	Connects int64
	// Reconnects counts the connects that replaced an earlier connection
	// of the same Client (after the server or an error closed it). It is
	// included in Connects.
	Reconnects int64
	// Open is the number of connections open now (established; TLS
	// handshake done).
	Open int64
	// Connecting is the number of connects in progress now: sockets that
	// exist but are not yet counted in Open.
	Connecting int64
	// Closes counts closed connections by cause.
	Closes [NumCloseCauses]int64
	// ConnectErrors counts failed connects by Kind.
	ConnectErrors [NumKinds]int64
	// Errors counts failed exchanges on open connections by Kind: the
	// server reset or closed the connection, a timeout, a bad response.
	// Connect failures are in ConnectErrors, canceled requests in neither.
	Errors [NumKinds]int64
	// TLS and HTTP/2 counts: handshakes, their time, GOAWAY and RST_STREAM.
	TLSCounts
}

// Snapshot returns the current values. Fields are read one by one, so a
// snapshot taken while connections change is not atomic as a whole.
func (c *Counters) Snapshot() CountersSnapshot {
	var s CountersSnapshot
	s.Connects = c.connects.Load()
	s.Reconnects = c.reconnects.Load()
	s.Open = c.open.Load()
	s.Connecting = c.connectingN.Load()
	for i := range c.closes {
		s.Closes[i] = c.closes[i].Load()
	}
	for i := range c.connectErrors {
		s.ConnectErrors[i] = c.connectErrors[i].Load()
	}
	for i := range c.errors {
		s.Errors[i] = c.errors[i].Load()
	}
	s.TLSCounts = c.tls.snapshot()
	return s
}

// TotalCloses is the sum of Closes.
func (s CountersSnapshot) TotalCloses() int64 {
	var n int64
	for _, v := range s.Closes {
		n += v
	}
	return n
}

// TotalErrors is the sum of Errors.
func (s CountersSnapshot) TotalErrors() int64 {
	var n int64
	for _, v := range s.Errors {
		n += v
	}
	return n
}

// TotalConnectErrors is the sum of ConnectErrors.
func (s CountersSnapshot) TotalConnectErrors() int64 {
	var n int64
	for _, v := range s.ConnectErrors {
		n += v
	}
	return n
}

// totals aggregates every Client of the process.
var totals Counters

// Totals returns the package-wide aggregate of every Client's counters
// since the process started.
func Totals() CountersSnapshot { return totals.Snapshot() }

// counterSet is the up to three Counters one event is added to.
type counterSet struct {
	own   *Counters
	extra *Counters // Options.Counters, or nil
}

func (cs counterSet) connected(reconnect bool) {
	for _, c := range [...]*Counters{cs.own, &totals, cs.extra} {
		if c == nil {
			continue
		}
		c.connects.Add(1)
		c.open.Add(1)
		if reconnect {
			c.reconnects.Add(1)
		}
	}
}

func (cs counterSet) closed(cause CloseCause) {
	for _, c := range [...]*Counters{cs.own, &totals, cs.extra} {
		if c == nil {
			continue
		}
		c.open.Add(-1)
		c.closes[cause].Add(1)
	}
}

func (cs counterSet) connectFailed(k Kind) {
	for _, c := range [...]*Counters{cs.own, &totals, cs.extra} {
		if c == nil {
			continue
		}
		c.connectErrors[k].Add(1)
	}
}

func (cs counterSet) connecting(delta int64) {
	for _, c := range [...]*Counters{cs.own, &totals, cs.extra} {
		if c != nil {
			c.connectingN.Add(delta)
		}
	}
}

func (cs counterSet) failed(k Kind) {
	for _, c := range [...]*Counters{cs.own, &totals, cs.extra} {
		if c != nil {
			c.errors[k].Add(1)
		}
	}
}
