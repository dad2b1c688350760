package stack

import "github.com/cicada-load/cicada/dataplane/wire"

// Counters are a stack's counts in dperf's detail: plain uint64s owned by
// the polling goroutine; Stack.Counters copies them for a reader on the same
// goroutine (an engine sums per-core copies once a second).
type Counters struct {
	PktsIn, PktsOut   uint64
	BytesIn, BytesOut uint64
	SynIn, SynOut     uint64
	FinIn, FinOut     uint64
	RstIn, RstOut     uint64
	// Retransmissions by kind; FastRetransmit are after 3 duplicate ACKs.
	RetransSyn, RetransData, RetransFin, FastRetransmit uint64
	// DupAckOut counts duplicate ACKs sent for a gap or an old segment.
	DupAckOut uint64
	// OutOfOrderHeld counts client segments beyond a hole counted into
	// the one held range instead of dropped (receive.go).
	OutOfOrderHeld uint64

	// Drops by reason.
	DropMalformed  uint64 // a frame no parser accepts
	DropNotForUs   uint64 // another MAC or an address the stack does not own
	DropEtherType  uint64 // neither IPv4 nor ARP
	DropProtocol   uint64 // neither TCP nor ICMP
	DropChecksum   uint64 // bad IPv4, TCP or ICMP checksum
	DropFragment   uint64 // IPv4 fragments are not reassembled
	DropNoSocket   uint64 // no record for the 4-tuple, or the record is closed
	DropBadState   uint64 // a segment the record's state does not expect
	DropOutOfOrder uint64 // not at rcv_nxt and not held: dropped, duplicate ACK sent
	DropNoTxBuffer uint64 // the link had no free frame buffer
	DropTxRefused  uint64 // the link refused a frame
	DropICMPType   uint64 // ICMP other than echo request

	// Sockets: opened and closed (failed ones are closed too), current,
	// failed (retransmission bound, reset by the peer, response timeout,
	// HTTP error), and launches skipped because the record was in use.
	SocketsOpened, SocketsClosed, SocketsCurrent, SocketsFailed uint64
	LaunchSkipped                                               uint64

	// HTTP: client requests sent, responses by status class, responses
	// that could not be parsed or never came, and their response times.
	HTTPRequests, HTTP2xx, HTTPOther, HTTPErrors uint64
	RespTimeSum, RespTimeMax                     int64 // nanoseconds
	// Server: pages and /bytes/ objects served (200, HEAD included),
	// other methods answered (405), bad /bytes/ sizes answered (400).
	Served200, Served405, Served400 uint64
	// CwndReductions counts a server connection's congestion window cuts:
	// fast retransmits and first retransmission timeouts (congestion.go).
	CwndReductions uint64

	ARPIn, ARPOut, ICMPIn, ICMPOut uint64

	// Users (Program): Reconnects counts users that opened a new
	// connection after their first one broke or was closed by the peer.
	// SecondRound* count the users SecondRound marked: SecondRoundSent
	// their round requests sent; SecondRoundOK those answered on the same
	// connection with an accepted status; SecondRoundFailed the others,
	// including SecondRoundLost: marked users whose connection failed,
	// closed or was stopped before the request could go. SecondRoundPending
	// is a gauge: marked users whose request is not sent yet (connecting,
	// busy with a task, or queued behind Config.SecondRoundWindow); the
	// requests in flight are SecondRoundSent - SecondRoundOK -
	// (SecondRoundFailed - SecondRoundLost), at most that window. Each
	// marked user ends once, in OK or Failed.
	Reconnects                                        uint64
	SecondRoundSent, SecondRoundOK, SecondRoundFailed uint64
	SecondRoundLost, SecondRoundPending               uint64
	// StaleAckRst counts resets sent in SYN-SENT for an ACK that does not
	// acknowledge our SYN (an old incarnation of the port at the peer,
	// RFC 9293 3.10.7.3).
	StaleAckRst uint64
}

// count adds one sent TCP segment's flags.
func (c *Counters) count(flags uint8) {
	if flags&wire.TCPSyn != 0 {
		c.SynOut++
	}
	if flags&wire.TCPFin != 0 {
		c.FinOut++
	}
	if flags&wire.TCPRst != 0 {
		c.RstOut++
	}
}
