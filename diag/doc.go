// Package diag is the load generator's self-diagnosis: before and while a
// worker holds its connections, it compares what it is asked to hold with
// what its own host allows, so that a generator-side limit is reported as
// such instead of being mistaken for a failing server.
//
// The limits (ReadLimits) are the process's open-files limit
// (RLIMIT_NOFILE) and the descriptors it already uses, the system-wide file
// limit (fs.file-max), the ephemeral port range
// (net.ipv4.ip_local_port_range) and, per destination, the sockets in
// TIME_WAIT that still hold a local port (TimeWait, read through netlink
// sock_diag or /proc/net/tcp{,6}; no external command runs). Check is a
// pure function from limits and a Plan to Warnings that name the limit and
// the fix.
//
// Inside a container or Kubernetes pod, ReadEnv tells which runtime (from
// the cgroup path or marker files), whether the pod has its own network
// namespace or the host's (node-only interfaces such as veth or cni0 in
// /proc/net/dev: a heuristic), and nf_conntrack_max/count where readable;
// CheckPod then warns about source NAT to the node's address (every worker
// pod of a node shares one port range per destination and the node's
// conntrack table), a full conntrack table, and an open-files limit that is
// the runtime's default, naming the fix: one worker per node, hostNetwork,
// more pod addresses (--source-ips), the runtime's ulimit setting. The pod
// cannot see the node's NAT rules: SNAT is inferred, not observed.
//
// ParseSourceIPs and CheckSourceIPs serve --source-ips: a range or CIDR of
// local addresses, each of which gives a full port range per destination.
//
// Everything here is safe for concurrent use; nothing keeps state.
package diag
