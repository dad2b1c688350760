// Package zmtp is a pure-Go implementation of ZMTP 3.0/3.1 over TCP with the
// NULL and (opt-in) PLAIN security mechanisms and exactly two socket types,
// DEALER and ROUTER:
// what Locust's master (a ROUTER) and workers (DEALERs) speak through
// pyzmq/libzmq. It needs no cgo and imports only the standard library.
//
// A Router binds an endpoint and accepts peers; a Dealer connects to one
// endpoint and reconnects forever:
//
//	r, err := zmtp.Listen("tcp://*:5557", zmtp.Options{})
//	id, frames, err := r.Recv(ctx) // frames exclude the identity
//	err = r.Send(id, reply)        // never blocks
//
//	d, err := zmtp.Dial("tcp://127.0.0.1:5557", nodeID, zmtp.Options{})
//	err = d.Send(payload)          // queued while disconnected
//	frames, err := d.Recv(ctx)
//	for ev := range d.Events() { ... } // re-register on Connected
//
// # Wire format
//
// Specified by RFC 23/ZMTP (3.0) and RFC 37/ZMTP (3.1, adds PING/PONG).
// Each side first sends a 64-byte greeting:
//
//	+------+-----------+------+-------+-------+-----------+-----------+--------+
//	| 0xFF | 8 padding | 0x7F | major | minor | mechanism | as-server | filler |
//	|  1   |     8     |  1   | 1 (3) | 1 (1) | 20 "NULL" |   1 (0)   |   31   |
//	+------+-----------+------+-------+-------+-----------+-----------+--------+
//
// The greeting is read in steps and the peer is rejected as soon as a step
// fails: a first byte other than 0xFF (ZMTP 1.0, HTTP, garbage) or a final
// signature byte without bit 0 gives ErrBadGreeting; a major version below 3
// (ZMTP 2.0 sends revision 1 and waits) gives ErrVersion; a mechanism other
// than NULL and PLAIN gives ErrMechanism, and so does PLAIN without
// Options.Plain. Versions 3.0, 3.1 and higher are accepted.
//
// Then frames follow, each a header and a body:
//
//	short: | flags | size (1 byte)         | body |   flags bit 0 MORE,
//	long:  | flags | size (8 bytes, big e.) | body |   bit 1 LONG, bit 2 COMMAND,
//	                                                    bits 3-7 must be 0
//
// We send the short form for bodies up to 255 bytes. A message is a run of
// frames with MORE set on all but the last. Commands are frames with the
// COMMAND flag, whose body is a 1-byte name length, the name and data. Each
// side's first command is READY, whose data is metadata properties:
//
//	| name length (1) | name | value length (4, big endian) | value | ...
//
// We send Socket-Type (DEALER or ROUTER) and Identity (the Dealer's identity,
// empty for a Router) and read them case-insensitively, ignoring other
// properties. A ROUTER accepts DEALER, REQ and ROUTER peers; a DEALER accepts
// ROUTER, REP and DEALER peers (RFC 28/REQREP); anything else (PUB, a missing
// Socket-Type) gives ErrSocketType. After the handshake, PING (TTL and up to
// 16 bytes of context) is answered with PONG carrying the context; PONG and
// unknown commands are ignored; ERROR ends the connection with ErrPeerError.
// A peer rejected after the greetings were exchanged receives an ERROR
// command with the reason before the connection is closed; every rejection is
// logged with its error.
//
// # Authentication
//
// With Options.Plain, both sides use the PLAIN mechanism of RFC 24/ZMTP-PLAIN
// instead of NULL; the Router is the PLAIN server (as-server 1 in its
// greeting; the peer's flag is not checked, since libzmq 4.3 always sends 0).
// After the greetings:
//
//	Dealer (client)                          Router (server)
//	HELLO    | 5 "HELLO" | ulen | username | plen | password |  ->
//	                                 <- WELCOME (no data) or ERROR
//	INITIATE | 8 "INITIATE" | metadata as in READY |         ->
//	                                 <- READY (metadata) or ERROR
//
// Username and password are at most 255 bytes each (one length byte). A
// PLAIN Router reads a peer's HELLO with a limit of 518 bytes, so an unknown
// peer cannot make it allocate more before it is authenticated, and compares
// the credentials in constant time. It refuses, with an ERROR command and
// ErrAuth, a NULL peer, wrong credentials and a malformed or oversized HELLO;
// it counts the refusals (Router.AuthRefusals) and logs them at most once
// per second with the number of refusals not logged. A PLAIN Dealer refuses
// a NULL Router (ErrAuth) instead of falling back, and reports a refusal by
// its peer as ErrAuth wrapping ErrPeerError; it keeps reconnecting with its
// usual backoff. The poller's data path is the same for both mechanisms:
// authentication happens in the handshake only.
//
// Threat model. PLAIN stops a peer that can reach the port but does not know
// the password from registering as a worker (and taking users and test
// plans) or from driving a worker as a fake master. The password travels in
// clear and messages are neither encrypted nor authenticated after the
// handshake, so PLAIN does not protect against anyone who can read or alter
// traffic on the path; for that, CURVE (RFC 26), which this package does not
// implement, or a tunnel (WireGuard, SSH, stunnel) is needed. Locust has no
// option for it, so Python Locust masters and workers cannot join a PLAIN
// cluster: it is for cicada-only clusters.
//
// # Limits
//
// Each connection has Options.HandshakeTimeout to complete the greeting and
// READY exchange; the Router runs handshakes in per-connection goroutines,
// never in its accept loop, so silent connections never delay real peers.
// A frame whose header announces more than Options.MaxFrameSize bytes (or a
// message whose frames add up to more) gives ErrFrameTooLarge before
// anything is allocated, and bodies above 1 MiB are allocated as their bytes
// arrive. A message may have at most MaxMessageFrames frames.
//
// # Identities
//
// A Router identifies a peer by the Identity property of its READY command.
// User identities (Dial's identity argument) are 1-255 bytes of UTF-8 not
// starting with 0x00. A peer announcing no identity gets a generated one of
// 5 bytes, the first 0x00, as libzmq does; a peer announcing one that starts
// with 0x00 (reserved for generated ids) is rejected with ErrInvalidIdentity.
// Received messages carry the identity separately: Router.Recv's frames are
// the message frames after it (for Locust, frames[0] is the msgpack payload;
// any further frames are kept).
//
// Duplicate identity policy: when a peer completes its handshake with the
// identity of a connected peer, the newest connection wins. The old
// connection is closed, its queued messages are dropped, a warning is
// logged, and Events reports Disconnected (Err ErrDuplicateIdentity) for the
// old connection before Connected for the new one. This is what a restarted
// Locust worker needs when the master has not yet noticed that the old
// process died (libzmq instead ignores the newcomer, libzmq issue #4503).
//
// # Queueing policy
//
// Every Router peer has its own send queue, and a Dealer has one: a
// mutex-guarded FIFO of encoded messages bounded by Options.SendQueue
// messages and Options.SendQueueBytes bytes, drained in batches (at most
// 1024 messages or about 1 MiB): by one writer goroutine per connection
// with writev, or, for a Router on Linux, by Send itself and the poller. Send encodes the message into a pooled buffer (so the caller
// keeps its frames), appends it and returns: it never blocks, and beyond the
// bounds it returns ErrQueueFull. Each batch write has
// Options.WriteTimeout; a peer that does not drain its socket for that long
// is dropped (ErrWriteTimeout), so a frozen peer never stalls others.
//
// A Dealer's queue outlives its connections: messages sent while
// disconnected wait in the queue and are written, in order, after the next
// handshake. Messages of a batch being written when a connection breaks are
// lost (delivery is at most once, never duplicated). Router peers' queues
// live and die with their connection: Send to a peer that is gone returns
// ErrUnknownPeer. Close waits up to Options.Linger for queues of connected
// peers to drain, then drops what is left.
//
// Received messages go through a small bounded queue to Recv; when the
// application does not call Recv, connections stop being read and TCP flow
// control pushes back on the peers. A Router with Options.Handler instead
// hands each message to the Handler as it is read, in place, and calls
// FlushMessages after each batch.
//
// # Serving many peers (Linux)
//
// On Linux a Router serves its established connections without goroutines
// of their own: after the handshake (still one goroutine per connection, so
// that slow handshakes never delay others) the socket leaves Go's network
// poller and joins the Router's epoll set. One poller goroutine reads every
// ready peer once per round into a shared 64 KiB buffer (so a flooding peer
// cannot starve the others), parses the frames in place, and keeps only an
// incomplete message's bytes per connection. Send writes on the caller's
// goroutine when the socket takes the bytes, and the poller finishes writes
// that would block (EPOLLOUT); WriteTimeout applies as before. With
// Options.PollInterval, rounds start at most once per interval, so a master
// with thousands of workers wakes a few hundred times a second whatever the
// message rate. Elsewhere, and for connections that are not sockets, a reader
// and a writer goroutine serve each connection, with the same behaviour, but
// for two details of the poller: while Recv's queue is full (no Handler),
// writes that wait for EPOLLOUT wait too, and a PONG takes a place in the
// peer's send queue. The package's tests run every Router test on both
// paths.
//
// # Reconnection
//
// A Dealer dials in the background and, after a failed dial or handshake or
// a lost connection, waits a delay drawn from [d/2, d], where d starts at
// Options.ReconnectMin and doubles up to Options.ReconnectMax; d starts over
// after a connection that lasted at least ReconnectMax (so a peer that
// accepts and drops at once is retried ever more slowly). Dealer.Reconnect
// drops the connection and dials at once with the same identity.
//
// # Concurrency
//
// Send, on Router and Dealer, is safe for concurrent use. Recv is meant for
// one receive loop at a time. Events channels are buffered (events that find
// them full are dropped and logged) and are closed by Close. Close waits for
// every goroutine the Router or Dealer started; goroutines are labelled
// "zmtp" for pprof. Lock order: see LOCKS.md.
package zmtp
