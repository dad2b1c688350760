package diag

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Warning kinds: which limit a Warning is about.
const (
	// KindOpenFiles: the process's open-files limit (RLIMIT_NOFILE) is
	// below the connections it must hold; connects fail with EMFILE.
	KindOpenFiles = "open-files"
	// KindSystemFiles: the system-wide file limit (fs.file-max) is below
	// what is needed; connects fail with ENFILE.
	KindSystemFiles = "system-files"
	// KindPorts: the ephemeral port range times the source addresses,
	// less the ports held in TIME_WAIT, is below the connections to one
	// destination; connects fail with EADDRNOTAVAIL.
	KindPorts = "ports"
	// KindPortsSlow: the connections to one destination use more than
	// half of the port range of each source address. Linux's connect()
	// picks even ports first and, once they are used up, scans all of them
	// before each odd one, so connects get slower and slower (a host-wide
	// CPU cliff) although they still succeed.
	KindPortsSlow = "ports-slow"
	// KindTimeWait: many local ports towards a destination are held in
	// TIME_WAIT (a previous run); they count against the port range.
	KindTimeWait = "time-wait"
)

// fdMargin is the number of descriptors kept aside for the process itself
// (master connection, log files, epoll, pipes).
const fdMargin = 32

// Limits are the host's limits that bound how many connections one
// process can hold. A negative value means unknown (or unlimited).
type Limits struct {
	// OpenFiles and OpenFilesHard are the soft and hard RLIMIT_NOFILE.
	OpenFiles, OpenFilesHard int64
	// FilesInUse is the number of descriptors the process has open.
	FilesInUse int64
	// SystemFilesMax is fs.file-max; SystemFilesUsed the allocated file
	// handles of the whole system (fs.file-nr).
	SystemFilesMax, SystemFilesUsed int64
	// PortLow and PortHigh are net.ipv4.ip_local_port_range.
	PortLow, PortHigh int
}

// Ports returns the size of the ephemeral port range, or -1 if unknown.
func (l Limits) Ports() int {
	if l.PortLow <= 0 || l.PortHigh < l.PortLow {
		return -1
	}
	return l.PortHigh - l.PortLow + 1
}

// String summarises the limits for a log line.
func (l Limits) String() string {
	return fmt.Sprintf("open files %s (hard %s, %d in use), system files %d/%d, local ports %d-%d",
		limitString(l.OpenFiles), limitString(l.OpenFilesHard), l.FilesInUse, l.SystemFilesUsed, l.SystemFilesMax, l.PortLow, l.PortHigh)
}

func limitString(n int64) string {
	if n < 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

// Plan is what a process is about to hold.
type Plan struct {
	// Users is the number of connections (one per user).
	Users int
	// PerDestination is the number of those connections per destination
	// address. Destinations that are not IP addresses (host names) are
	// left out by the caller.
	PerDestination map[netip.AddrPort]int
	// SourceIPs is the number of local addresses connections are bound to
	// in turn (--source-ips); 0 or 1 means one.
	SourceIPs int
}

// Warning is one limit a Plan exceeds (or comes close to), with a message
// that names the limit and the fix.
type Warning struct {
	Kind    string
	Message string
}

// Check compares p with l and timeWait (sockets in TIME_WAIT per
// destination, as TimeWait returns; nil if unknown) and returns a warning
// per exceeded limit, at most one per kind, in a stable order.
func Check(l Limits, p Plan, timeWait map[netip.AddrPort]int) []Warning {
	var ws []Warning
	if l.OpenFiles >= 0 && p.Users > 0 {
		inUse := max(l.FilesInUse, 0)
		avail := l.OpenFiles - inUse - fdMargin
		if int64(p.Users) > avail {
			need := int64(p.Users) + inUse + fdMargin
			fix := fmt.Sprintf("raise it to at least %d (ulimit -n %d, or LimitNOFILE=%d for a systemd service)", need, need, need)
			if l.OpenFilesHard >= 0 && need > l.OpenFilesHard {
				fix = fmt.Sprintf("the hard limit is %d: raise it (limits.conf nofile, LimitNOFILE=, or docker --ulimit nofile=%d) or run more workers with fewer users each", l.OpenFilesHard, need)
			}
			ws = append(ws, Warning{Kind: KindOpenFiles, Message: fmt.Sprintf(
				"this worker is to hold %d connections but its open-files limit (RLIMIT_NOFILE) is %d with %d in use: "+
					"about %d connects will fail with EMFILE (Too many open files), a limit of the load generator, not of the server; %s",
				p.Users, l.OpenFiles, inUse, int64(p.Users)-max(avail, 0), fix)})
		}
	}
	if l.SystemFilesMax > 0 && p.Users > 0 {
		avail := l.SystemFilesMax - max(l.SystemFilesUsed, 0)
		if int64(p.Users) > avail {
			ws = append(ws, Warning{Kind: KindSystemFiles, Message: fmt.Sprintf(
				"this worker is to hold %d connections but the system-wide file limit (fs.file-max %d, %d in use) leaves %d: "+
					"connects will fail with ENFILE, a limit of the load generator host; raise it with sysctl -w fs.file-max=%d",
				p.Users, l.SystemFilesMax, l.SystemFilesUsed, avail, l.SystemFilesMax+int64(p.Users)-avail)})
		}
	}
	ports := l.Ports()
	if ports > 0 {
		src := max(p.SourceIPs, 1)
		dsts := make([]netip.AddrPort, 0, len(p.PerDestination))
		for d := range p.PerDestination {
			dsts = append(dsts, d)
		}
		sort.Slice(dsts, func(i, j int) bool { return dsts[i].Compare(dsts[j]) < 0 })
		var portW, slowW, twW *Warning
		for _, d := range dsts {
			users := p.PerDestination[d]
			tw := timeWait[d]
			capacity := ports*src - tw
			if half := ports / 2 * src; users+tw > half && users <= capacity && slowW == nil {
				needIPs := (2*(users+tw) + ports - 1) / ports
				slowW = &Warning{Kind: KindPortsSlow, Message: fmt.Sprintf(
					"this worker is to hold %d connections to %s, more than half of its local ports (%d-%d, %d source address(es)): "+
						"Linux's connect() takes even ports first and then scans them all for every odd one, so connects will get slow and the host's CPU "+
						"will go to the kernel; use --source-ips with at least %d addresses (more if other processes connect to the same destination)",
					users, d, l.PortLow, l.PortHigh, src, needIPs+1)}
			}
			if users > capacity && portW == nil {
				needIPs := (users + tw + ports - 1) / ports
				msg := fmt.Sprintf(
					"this worker is to hold %d connections to %s but has %d local ports for it (port range %d-%d = %d ports × %d source address(es)",
					users, d, max(capacity, 0), l.PortLow, l.PortHigh, ports, src)
				if tw > 0 {
					msg += fmt.Sprintf(", less %d in TIME_WAIT", tw)
				}
				msg += fmt.Sprintf("): connects will fail with EADDRNOTAVAIL (Cannot assign requested address), a limit of the load generator, not of the server; "+
					"use --source-ips with at least %d addresses (e.g. 127.0.0.1-127.0.0.%d against a loopback target) or widen net.ipv4.ip_local_port_range (sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\")",
					needIPs, min(needIPs, 254))
				portW = &Warning{Kind: KindPorts, Message: msg}
			}
			if tw > 0 && tw*10 >= ports*src && twW == nil {
				twW = &Warning{Kind: KindTimeWait, Message: fmt.Sprintf(
					"%d local ports towards %s are held in TIME_WAIT (of %d usable): connections of an earlier run still block them for up to 60 s; "+
						"wait, use more --source-ips, or enable net.ipv4.tcp_tw_reuse=1", tw, d, ports*src)}
			}
		}
		if portW != nil {
			ws = append(ws, *portW)
		}
		if slowW != nil {
			ws = append(ws, *slowW)
		}
		if twW != nil {
			ws = append(ws, *twW)
		}
	}
	return ws
}

// Headroom returns how many connections in total p's process can open,
// under l and timeWait, before Check would warn: the smallest of the
// open-files, system-files and (for the most constrained destination of
// p) half-port-range limits. It is -1 when no limit is known. Callers use it to skip
// re-reading the limits while the users stay below it.
func Headroom(l Limits, p Plan, timeWait map[netip.AddrPort]int) int64 {
	h := int64(-1)
	lower := func(v int64) {
		v = max(v, 0)
		if h < 0 || v < h {
			h = v
		}
	}
	if l.OpenFiles >= 0 {
		lower(l.OpenFiles - max(l.FilesInUse, 0) - fdMargin)
	}
	if l.SystemFilesMax > 0 {
		lower(l.SystemFilesMax - max(l.SystemFilesUsed, 0))
	}
	if ports := l.Ports(); ports > 0 {
		src := max(p.SourceIPs, 1)
		for d := range p.PerDestination {
			lower(int64(ports/2*src - timeWait[d]))
		}
	}
	return h
}

// ErrSourceIPs is wrapped by ParseSourceIPs and CheckSourceIPs.
var ErrSourceIPs = errors.New("diag: bad --source-ips")

// MaxSourceIPs bounds the addresses ParseSourceIPs expands a spec to.
const MaxSourceIPs = 65536

// ParseSourceIPs parses a --source-ips value: comma-separated items, each a
// single address, a range "127.0.0.1-127.0.0.16" (the end may be given as
// its last octet only: "127.0.0.1-16") or a CIDR prefix "127.0.0.0/28"
// (for IPv4 prefixes up to /30, the network and broadcast addresses are
// left out). Addresses keep the order given; duplicates are dropped.
func ParseSourceIPs(spec string) ([]netip.Addr, error) {
	var out []netip.Addr
	seen := make(map[netip.Addr]bool)
	add := func(a netip.Addr) error {
		if seen[a] {
			return nil
		}
		if len(out) >= MaxSourceIPs {
			return fmt.Errorf("%w %q: more than %d addresses", ErrSourceIPs, spec, MaxSourceIPs)
		}
		seen[a] = true
		out = append(out, a)
		return nil
	}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		switch {
		case strings.Contains(item, "/"):
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, fmt.Errorf("%w %q: %w", ErrSourceIPs, item, err)
			}
			p = p.Masked()
			a := p.Addr()
			last := lastOf(p)
			skipEnds := a.Is4() && p.Bits() <= 30
			for {
				if !(skipEnds && (a == p.Addr() || a == last)) {
					if err := add(a); err != nil {
						return nil, err
					}
				}
				if a == last {
					break
				}
				a = a.Next()
			}
		case strings.Contains(item, "-"):
			lo, hi, _ := strings.Cut(item, "-")
			from, err := netip.ParseAddr(strings.TrimSpace(lo))
			if err != nil {
				return nil, fmt.Errorf("%w %q: %w", ErrSourceIPs, item, err)
			}
			hi = strings.TrimSpace(hi)
			to, err := netip.ParseAddr(hi)
			if err != nil && from.Is4() {
				if n, aerr := strconv.Atoi(hi); aerr == nil && n >= 0 && n <= 255 {
					b := from.As4()
					b[3] = byte(n)
					to, err = netip.AddrFrom4(b), nil
				}
			}
			if err != nil {
				return nil, fmt.Errorf("%w %q: %w", ErrSourceIPs, item, err)
			}
			if from.BitLen() != to.BitLen() || to.Less(from) {
				return nil, fmt.Errorf("%w %q: the range ends before it starts", ErrSourceIPs, item)
			}
			for a := from; ; a = a.Next() {
				if err := add(a); err != nil {
					return nil, err
				}
				if a == to {
					break
				}
			}
		default:
			a, err := netip.ParseAddr(item)
			if err != nil {
				return nil, fmt.Errorf("%w %q: %w", ErrSourceIPs, item, err)
			}
			if err := add(a); err != nil {
				return nil, err
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w %q: no addresses", ErrSourceIPs, spec)
	}
	return out, nil
}

// lastOf returns the last address of a masked prefix.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
