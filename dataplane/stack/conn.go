package stack

// Connection states. Closed records are free; there is no TIME_WAIT.
const (
	stClosed uint8 = iota
	stSynSent
	stSynRcvd
	stEstablished
	stFinWait1
	stFinWait2
	stClosing
	stLastAck
)

// conn flags.
const (
	fAwait    = 1 << iota // client: a response is expected
	fWScale               // window scaling in use on this connection
	fResp                 // server: a response is in flight
	fRecovery             // server: in fast recovery (congestion.go)
	fFinRcvd              // server: the peer's FIN arrived
	fAckLater             // an ACK is due at the end of the receive burst
	fPeerFin              // client: the segment being processed carries the peer's FIN
	fLateAck              // client: a late FIN of the port's last incarnation was ACKed
	// fSACK (client): the peer's SYN-ACK permitted SACK; the bit is the
	// server's fRecovery (the flags are full).
	fSACK = fRecovery
)

// none marks an empty timer link.
const none = ^uint32(0)

// conn is one connection record, dperf's struct socket: a fixed-size value
// with no Go pointers, so the table costs the garbage collector nothing.
// Its addresses and client port are not stored: they follow from its index
// in the table (see Stack.index). Timer links are table indices.
type conn struct {
	next, prev uint32 // links of the timer list the record is on
	timerAt    int64  // expiry of that timer (nanoseconds)
	sentAt     int64  // client: when the current request was first sent
	iss        uint32 // initial send sequence
	irs        uint32 // server: the peer's initial sequence (its SYN's)
	sndUna     uint32
	sndNxt     uint32
	rcvNxt     uint32
	respSeq    uint32     // server: sequence number of the response's first byte
	sndWnd     uint32     // server: the peer's window in bytes
	http       respParser // client; a server record's congestion state (srvCC) in its bytes
	mss        uint16     // server: segment size for this peer
	done       uint16     // client: responses completed on this connection
	state      uint8
	retries    uint8
	list       uint8 // timer list the record is on (tNone when none)
	flags      uint8
	wscale     uint8 // the peer's window scale shift
	dupAcks    uint8
	pending    uint8 // server: complete requests waiting for a response
	reqState   uint8 // server: request scan state (objects.go)
	// client: the one range of body bytes held beyond a hole at rcvNxt
	// (receive.go); empty when oooSeq == oooEnd.
	oooSeq, oooEnd uint32
	user           // client; a server record's request queue (srvReqs) in its bytes
}

// user is a record's Locust user (client with a Program); it outlives the
// record's connections (reset keeps it).
type user struct {
	cnext, cprev uint32 // the class's list of live users
	// qnext, qprev link the second round's queue of users ready to send
	// (see Stack.roundReady): record index + 1, 0 for none, so that the
	// zero user is on no queue.
	qnext, qprev uint32
	taskAt       int64 // when the current task started (pacing)
	wakeAt       int64 // when the current wait ends
	class        uint16
	task         uint16 // current task
	pos          uint16 // current step: the request sent or about to be sent
	uflags       uint8
}

// user flags.
const (
	uLive    = 1 << iota // a user lives on this record
	uStop                // stopping: FIN after the response in flight
	uPaced               // pacing has run once
	uWaiting             // waiting between tasks (pos is the task's end)
	uSecond              // the request in flight is a second-round one
	uResume              // the peer closed mid-phase: go on from a new connection
	uOnStart             // running the OnStart requests
	uRound               // marked for the second round, its request not sent yet (maybe queued)
)

func seqLT(a, b uint32) bool { return int32(a-b) < 0 }
func seqLE(a, b uint32) bool { return int32(a-b) <= 0 }
