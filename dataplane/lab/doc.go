// Package lab builds and removes the data plane's network namespace lab:
// namespaces joined by veth pairs in 198.18.0.0/16 (RFC 2544's benchmarking
// range), for tests and benchmarks that run as root. It is an ordinary
// package with an error-returning API; tests skip when Check fails.
//
// Safety rules it keeps (dataplane-lab.md):
//   - Before anything else New adds a host route "blackhole 198.18.0.0/16"
//     with this run's own metric (its process ID), so no lab packet can
//     leave by the default route while any run is up, and runs never remove
//     each other's route; Close removes it.
//   - Every namespace and interface is named with the run's prefix,
//     "cic<pid>", and removed by Close, also on SIGINT and SIGTERM; New
//     first removes those of a prefix whose process is gone.
//   - The lab changes no sysctl of the host's namespace: everything else
//     lives in its own namespaces. On each veth end forwarding is off
//     (net.ipv4.conf.<if>.forwarding=0), IPv6 is off, and offloads (tx, tso,
//     gso, gro) are off with ethtool when it is installed.
//   - The cicada end of a veth holds no IPv4 address; only processes the
//     lab starts run in it and they are ended by PID.
//
// Topologies: KernelPair (client stack to a kernel server such as nginx),
// StackPair (client stack to server stack), KernelClient (a kernel-socket
// client namespace beside a pair) and DUTChain, the device under test:
// client stack, a namespace that routes with a stateful nftables ruleset
// (forward policy drop; established/related and new TCP to the port
// accepted), server stack. DUTChain turns forwarding on inside the device
// namespace only. nf_conntrack_max is global on this kernel (read-only
// inside a namespace, held against each namespace's own count): DUTChain
// refuses a run that would hold more connections than it instead of
// raising the host's value, and Netns.Conntrack reads the device's
// entries by TCP state.
//
// Driver runs a client stack for tests and benchmarks on one clock for its
// whole life with a window of unanswered launches; unlike engine.Loop it
// keeps its clock and launch count from one Run to the next, so a ramp,
// a hold and a SecondRound can follow each other.
package lab

import "errors"

// The lab's addresses: all in Range. The client stack owns ClientIPs
// addresses from ClientIP; the server (a kernel or a stack) is ServerIP; the
// kernel server reaches the client range through Gateway, an address
// nobody owns whose permanent neighbour entry is the cicada end's MAC.
const (
	Range       = "198.18.0.0/16"
	ClientIP    = "198.18.0.1"
	ClientRange = "198.18.0.0/24"
	Gateway     = "198.18.0.254"
	ServerIP    = "198.18.1.1"
	ServerNet   = "198.18.1.1/24"

	// A kernel-socket client's namespace (KernelClient) and the server
	// namespace's address towards it.
	KernelClientNet  = "198.18.2.2/24"
	KernelGateway    = "198.18.2.1"
	KernelGatewayNet = "198.18.2.1/24"
)

// ErrUnavailable is wrapped by Check and New where the lab cannot run
// (not Linux, not root, no ip(8)).
var ErrUnavailable = errors.New("lab: unavailable")
