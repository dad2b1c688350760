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
// ParseSourceIPs and CheckSourceIPs serve --source-ips: a range or CIDR of
// local addresses, each of which gives a full port range per destination.
//
// Everything here is safe for concurrent use; nothing keeps state.
package diag
