// Package dataplane is the root of cicada's userspace TCP/IPv4 data plane
// (issue 11): connections as fixed-size records in a pre-built table rather
// than kernel sockets, in the style of Baidu's dperf, built in pure Go
// (CGO_ENABLED=0) along gVisor's seams. This package holds no code; it
// documents the contracts of the tree below it.
//
// # Layout (imports point downwards only)
//
//	dataplane/ifcheck        safety checks of an interface before a link
//	                         opens on it (default route, owned addresses,
//	                         the RST trap, forwarding, offloads); the
//	                         command line's range parsers
//	dataplane/lab            the namespace lab (root, Linux): blackhole route,
//	                         namespaces, veths, nginx in a namespace
//	dataplane/engine         one polling loop per core over its own stack
//	                         and link (Engine), per-second counter sums and
//	                         busy share, port slices (Split), pacing
//	                         (Launcher); Loop, the single-loop form
//	dataplane/stack          connection table, timers, templates, TCP client
//	                         and server state machines, HTTP/1.1 client,
//	                         Locust users (Program) and their stats, ARP,
//	                         ICMP
//	dataplane/link/pipe      in-process link pair with seeded loss,
//	                         reordering, duplication and delay
//	dataplane/link/afpacket  Linux AF_PACKET link (TPACKET_V3 RX ring,
//	                         TPACKET_V2 TX ring); fanout groups that steer
//	                         frames to cores by TCP port (classic BPF)
//	dataplane/link/afxdp     Linux AF_XDP socket link in pure Go: UMEM, rings,
//	                         XDP redirect program
//	dataplane/link/dpdk      DPDK ethdev port link (build tag dpdk, cgo,
//	                         libdpdk): NICs, mlx5, virtual devices
//	dataplane/link           the batch link interface and its ownership
//	                         contract
//	dataplane/wire           zero-allocation frame views, builders, checksums
//
// wire imports only the standard library; link imports wire; the links
// import link and wire (afpacket and afxdp also golang.org/x/sys/unix;
// afxdp's tests also drive stack over it; dpdk also cgo and libdpdk under
// its build tag, and its tests engine, lab, afpacket and afxdp); stack
// imports link and wire;
// engine imports stack and wire (its tests also lab, pipe and afpacket).
// ifcheck imports only the standard library and x/sys (its lab test also
// lab); target and cmd/cicada use it.
// lab imports only the standard library and x/sys: it knows no stack, and
// its tests put stacks, links and nginx together. Nothing in dataplane
// imports the rest of cicada except tests (internal/testpeer for nginx,
// Poll and Eventually).
//
// # Contracts
//
//   - One Stack is driven by one goroutine, run to completion: Poll (receive
//     burst, input, timers, ARP, transmit flush) and Launch (new
//     connections). Nothing blocks, nothing allocates after New: the table,
//     timer links, templates and bursts are all pre-allocated.
//   - Time is injected: Poll and Launch take now in nanoseconds of the
//     caller's monotonic clock. Tests use a fake clock.
//   - Frame buffers belong to the link (see package link): received frames
//     are valid until the next Receive, transmit buffers come from Buffer
//     and go back through Transmit.
//   - Both sides are configured with the same tuple space (client IPs x
//     client ports, one server address and port), as in dperf; a record's
//     index is ipIndex*ports + portIndex, on the client and on the server.
//   - Cores: with n cores, core k's stack on either side owns port slice k
//     of engine.Split and every client address; the link delivers each
//     frame to the core owning its port (afpacket.OpenFanout: by
//     destination port on the client, source port on the server; ARP and
//     ICMP to core 0, whose resolved next hop the engine copies to the
//     others). AF_XDP runs one core (afxdp.CheckCores, ErrOneCore says
//     why).
//   - Counters are plain uint64s per Stack, in dperf's detail; an engine
//     sums per-core copies.
//   - A link used by a stack holds no address of the stack's range in the
//     kernel: AF_PACKET is a tap, so the kernel sees every received frame,
//     and a kernel owning a client address answers the server's SYN-ACK
//     with a reset (the RST trap). The lab keeps the cicada end of each
//     veth without an address and with forwarding off, so the kernel drops
//     such frames silently.
//
// # Deliberately simpler than a general TCP, and why
//
//   - Minimal congestion control, server side only (the client sends one
//     request segment at a time): RFC 5681 slow start and congestion
//     avoidance from a 10-segment initial window, NewReno fast recovery
//     (RFC 6582), one segment after a timeout, under the peer's window and
//     SendWindow (see stack/congestion.go). The retransmission timeout
//     starts at a fixed value and doubles per retry up to a cap (one FIFO
//     timer list per backoff level, O(1)), with no RTT estimator per
//     connection.
//   - Nothing buffered out of order: a segment not at rcv_nxt is answered
//     with a duplicate ACK at once and dropped, except that a client holds
//     one range of response body bytes beyond a hole as two sequence
//     numbers (a body is counted, not kept; stack/receive.go), so a record
//     needs no buffers. The server recovers by fast retransmit (3 duplicate
//     ACKs) or go-back-N on timeout.
//   - No TIME_WAIT: closing is a state change and the client port is reused
//     in turn. A late FIN for a closed or reconnecting record is answered
//     with the ACK TIME_WAIT would have sent (once per incarnation of the
//     port); in SYN-SENT, an ACK of the
//     port's old incarnation is answered with a reset (RFC 9293); the server
//     treats a new SYN on a busy record as a new incarnation.
//   - Requests are single segments built once (at most MSS bytes) and
//     retransmitted from the template; the server's page is one byte slice
//     from which any segment is cut at any sequence number, and a /bytes/<n>
//     object's segments are cut from its headers and a constant pattern.
//   - Responses need Content-Length or chunked framing (no read-to-close,
//     no 101 upgrade, no other transfer codings): these are counted as HTTP
//     errors. Interim 1xx responses are skipped (at most 8 before the final
//     one), as Python's http.client skips them.
//   - No IPv4 fragments (dropped and counted), no IPv4 options sent, no
//     timestamps, no urgent data; SACK only as a client's receiver (its SYN
//     offers it, its ACKs report the one held range as one block; the
//     server neither offers nor reads it); a closed window is probed by the
//     server with one-byte segments on the retransmission timer (bounded by
//     MaxRetries), with no separate persist timer.
//   - One next hop per stack: the client resolves the gateway (or the
//     server) by ARP before launching; the server learns the source MAC of
//     the first frame from the client range unless a gateway is set.
//   - ACKs of in-order data are batched per receive burst, as dperf does
//     per tick: one ACK at the end of the burst unless a segment sent
//     earlier carried it. Duplicate ACKs for a gap go out at once.
package dataplane
