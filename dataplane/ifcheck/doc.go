// Package ifcheck decides whether an interface may carry cicada's userspace
// data plane, before a link is opened on it. A stack over AF_PACKET shares
// its interface with the kernel (AF_PACKET is a tap, not a steal), so the
// kernel must neither own the addresses the stack answers for nor carry the
// namespace's traffic on that interface:
//
//   - The interface must exist, be up and not be a loopback (ErrInterface,
//     never overridable).
//   - Refused (ErrUnsafe) unless Options.Dedicated: the interface carries a
//     default route of the namespace (IPv4 or IPv6): load would share the
//     host's own uplink; it holds an address inside Options.Owned; the
//     kernel has a local route (any table, any interface) covering an
//     address of Owned. The last one is the RST trap: a kernel that owns a
//     client address answers the server's SYN-ACK with a reset and kills
//     every connection (see ../shared/docs/dataplane-lab.md). With Dedicated
//     the refusals are returned as warnings instead: the user says the
//     interface belongs to the test (for instance with an nftables rule
//     dropping the kernel's resets).
//   - Warned: IPv4 or IPv6 forwarding on the interface (the kernel would
//     forward frames the stack also receives), and transmit checksum, TSO,
//     GSO or GRO offloads on (the kernel's frames would reach the stack with
//     partial checksums or larger than the MTU).
//
// For a worker Owned is the client range; for `cicada target --dataplane`
// it is the server address. The state is read from the calling thread's
// network namespace through rtnetlink (package syscall), /proc/sys and the
// ethtool ioctl; nothing is run through a shell and the interface name is
// validated before it is used in a path. The decision itself (evaluate) is
// a pure function of that state, table-tested without root.
//
// ParseRange and ParsePorts parse the command line's --client-ips and
// --client-ports: the data plane's ranges are contiguous IPv4 ranges, unlike
// --source-ips (diag.ParseSourceIPs), which lists addresses of any family.
//
// CheckTable refuses (ErrMemory) a connection table larger than the memory
// the system reports available (MemAvailable), before it is allocated: the
// Go runtime cannot recover from an allocation that fails, so a worker's
// first spawn or a target's start would otherwise end the process.
//
// It imports only the standard library and golang.org/x/sys/unix; on other
// systems than Linux Check returns ErrUnsupported.
package ifcheck
