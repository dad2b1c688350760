// Package stack is the userspace TCP/IPv4 stack of the data plane: one
// Stack per core over one link.Link, holding a connection table of
// fixed-size records without Go pointers (found from the 4-tuple by
// arithmetic; 128 bytes each, at most 128 by test), timers linked by record
// index (FIFO lists for fixed timeouts and retransmission backoff levels, a
// hierarchical wheel for the users' waits), pre-built frame templates with
// partial checksums, the client and server TCP state machines, a minimal
// HTTP/1.1 client (requests built once, the end of a response found by
// Content-Length or chunked encoding, or at the headers' end for HEAD, 204
// and 304; Content-Length lines that disagree are malformed; status, body
// size, response time)
// and a server mode that serves a fixed page with Content-Length and
// keep-alive to any connection of the tuple space, and /bytes/<n> objects
// as the kernel target (objects.go: GET and HEAD, pipelined, bodies
// generated per segment, no buffer per connection), sending with
// congestion control (congestion.go: RFC 5681 slow start and avoidance,
// NewReno fast recovery, one segment after a timeout; no SACK). ARP is answered for the
// stack's own addresses and used to resolve the next hop; ICMP echo
// requests are answered.
//
// A Stack is not safe for concurrent use: one goroutine calls Poll,
// Launch, LaunchClass, StopClass, SecondRound, TakeStats and reads
// Counters (run to completion). See package dataplane for the contracts and
// for what is deliberately simpler than a general TCP.
//
// # Client connections, two ways
//
// With Config.Request (the default GET /): Launch sends a SYN from the next
// free record; the SYN-ACK is answered with the request (which carries the
// ACK); each complete response is counted, then the next request goes out
// (after ThinkTime, if set) until RequestsPerConn, then the connection is
// held (Hold) or closed with a FIN. Its requests count in stats row 0.
//
// With Config.Program, every record is one Locust user of one class for its
// life (LaunchClass, StopClass, Users, SecondRound, TakeStats): SYN, then
// the class's OnStart requests in order once, then loop { pick a task (by
// weight from a cumulative table with a per-stack xorshift generator, or
// in turn per connection for a sequential class); send its requests in
// order, each after the previous response; wait } until stopped. The four
// waits are Locust's: constant, between (uniform in [Min, Max)),
// constant_pacing (the period minus the task's run time, floored at 0, the
// first wait being the period) and constant_throughput (pacing at
// 1/rate). Waits run on the wheel with a resolution of one tick (2^20 ns),
// never early.
//
// A response with Connection: close, or with the peer's FIN, closes the
// connection; the user goes on with the rest of its task from a new
// connection at the next wheel tick (or after its wait at the end of a
// task), as Locust's HTTP client reconnects on its next request; a peer
// closing an idle connection costs nothing until the next task.
//
// Deliberate differences from Locust: a connection that breaks with a
// request in flight (reset, retransmissions exhausted, response timeout,
// malformed response, the peer closing mid-response) fails that request
// and ends the user's task there; the user waits as after any task, then
// opens a new connection from the same record (Counters.Reconnects) and
// picks a new task, where Locust's user would go on with the same task on
// a new connection. A reconnect waits at least one wheel tick. A
// stopped user finishes the response in flight and closes without running
// the rest of its task (Locust kills the greenlet at once or after
// stop_timeout); there is no on_stop. A connect failure counts against the
// request the user was about to send, with the time from the first SYN;
// as in Locust, the first request on a new connection is timed from its
// SYN too (connecting is part of its response time).
//
// # Stats
//
// Every request that ends counts in its stats row (ProgramRequest.Stat):
// Locust's num_requests, failures by kind (status not accepted, with a
// table of up to MaxFailStatuses codes; timeout; reset; connect; malformed),
// the response time's sum, min and max in microseconds and Locust's
// histogram buckets (HistIndex, HistKey; Python's round half to even on the
// exact nanosecond value), and Content-Length bytes. TakeStats adds them
// into the caller's Stats and zeroes them, without allocating once the
// caller's Stats has its rows.
//
// # Retransmission and port reuse
//
// A segment is retransmitted from its template at most MaxRetries times;
// the timeout doubles per retry from RetransmitTimeout up to
// MaxRetransmitTimeout (one FIFO list per backoff level, so O(1) with no
// RTT estimator); then the connection is reset and counted failed.
//
// Client ports are reused at once (no TIME_WAIT). A peer may still hold the
// port's old incarnation, retransmitting its FIN or answering the new SYN
// with an ACK of the old one: a FIN of the old incarnation gets the ACK
// TIME_WAIT would have sent (the peer closes), once per incarnation of the
// port (a duplicate would reach a peer already closed and draw its reset),
// and in SYN-SENT any other ACK that does not acknowledge our SYN gets
// <SEQ=SEG.ACK><CTL=RST> (RFC 9293
// 3.10.7.3, counted in StaleAckRst), so the peer drops the old incarnation
// and our SYN's retransmission opens the new one. A reused record's ISS is
// its last connection's snd_nxt + 65537 (what Linux does when it reuses a
// TIME_WAIT port), so a peer that closed first and holds the port in
// TIME_WAIT accepts the new SYN at once (RFC 6191) instead of answering
// with an old ACK; a fresh record's ISS comes from a per-stack counter. No
// quiet time is kept before reuse.
//
// # Costs
//
// LaunchClass is O(n) in the users launched (records taken in turn; used
// ones skipped). StopClass is O(n) in the users stopped: each class keeps
// its live users in a doubly linked list through the records, so it never
// scans the table (10,000,000 records are the target). Users is O(1).
// SecondRound walks the live users once; marked users cost one flag test
// at the end of each task. Its requests go at most Config.SecondRoundWindow
// in flight: the users ready beyond that wait on a FIFO queue linked
// through the records (O(1) to queue, release or drop), and Poll releases
// them as responses come back, with no allocation and no table scan. A wheel timer is moved at most
// three times (plus a look every 4.9 hours for waits beyond that);
// advancing the wheel costs one step per tick while its lowest level holds
// entries and one per block otherwise. Server mode holds an idle
// keep-alive connection for IdleTimeout (set it above the clients' longest
// wait to hold users that wait 15 minutes).
package stack
