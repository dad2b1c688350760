// Package wire holds zero-allocation views and builders of the frames the
// userspace data plane speaks: Ethernet II, ARP (Ethernet/IPv4), IPv4, ICMP
// echo and TCP, with the Internet checksum and its RFC 1624 incremental
// update.
//
// A view (Ethernet, ARP, IPv4, ICMP, TCP) is a byte slice over a frame
// buffer owned by the caller; it never copies and never allocates. The Parse
// functions check lengths and header fields and return the view trimmed to
// the header's own length fields, or an error wrapping one of this package's
// sentinels; they never panic on any input. Builders (the Encode methods and
// the Put functions) write into a caller buffer that must be long enough and
// report ErrShort otherwise.
//
// What is parsed but never sent: IPv4 options (skipped on receive, never
// built) and the TCP options SACK-permitted and timestamps (skipped). What is
// built: the TCP options MSS and window scale.
//
// Addresses are IPv4 addresses as uint32 in host order (10.0.0.1 is
// 0x0a000001), so that address ranges are plain arithmetic.
package wire
