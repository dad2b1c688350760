// Package stack is the userspace TCP/IPv4 stack of the data plane: one
// Stack per core over one link.Link, holding a connection table of
// fixed-size records without Go pointers (found from the 4-tuple by
// arithmetic), FIFO timer lists linked by record index (retransmit, idle,
// think time), pre-built frame templates with partial checksums, the client
// and server TCP state machines, a minimal HTTP/1.1 client (requests built
// once, the end of a response found by Content-Length or chunked encoding,
// status class, response time) and a server mode that serves a fixed page
// with Content-Length and keep-alive to any connection of the tuple space.
// ARP is answered for the stack's own addresses and used to resolve the next
// hop; ICMP echo requests are answered.
//
// A Stack is not safe for concurrent use: one goroutine calls Poll and
// Launch (run to completion) and reads Counters. See package dataplane for
// the contracts and for what is deliberately simpler than a general TCP.
//
// Client connection life: Launch sends a SYN from the next free record;
// the SYN-ACK is answered with the request (which carries the ACK); each
// complete response is counted by status class, then the next request goes
// out (after ThinkTime, if set), or the connection is held (Hold) or
// closed with a FIN. A segment is retransmitted from its template at most
// MaxRetries times; then the connection is reset and counted failed.
package stack
