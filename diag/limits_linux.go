//go:build linux

package diag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ReadLimits reads the limits of this process and host. Values it cannot
// read are -1 (ports: 0); the error reports the first such failure, the
// rest is still filled in.
func ReadLimits() (Limits, error) {
	l := Limits{OpenFiles: -1, OpenFilesHard: -1, FilesInUse: -1, SystemFilesMax: -1, SystemFilesUsed: -1}
	var first error
	note := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil {
		l.OpenFiles, l.OpenFilesHard = rlim(rl.Cur), rlim(rl.Max)
	} else {
		note(fmt.Errorf("diag: getrlimit: %w", err))
	}
	if n, err := countDir("/proc/self/fd"); err == nil {
		l.FilesInUse = int64(n)
	} else {
		note(err)
	}
	if f, err := readInts("/proc/sys/fs/file-nr"); err == nil && len(f) >= 3 {
		l.SystemFilesUsed, l.SystemFilesMax = f[0], f[2]
	} else {
		note(err)
	}
	if p, err := readInts("/proc/sys/net/ipv4/ip_local_port_range"); err == nil && len(p) == 2 {
		l.PortLow, l.PortHigh = int(p[0]), int(p[1])
	} else {
		note(err)
	}
	return l, first
}

func rlim(v uint64) int64 {
	if v > 1<<62 { // RLIM_INFINITY
		return -1
	}
	return int64(v)
}

func countDir(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("diag: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("diag: %w", err)
	}
	return len(names) - 1, nil // less the descriptor used to read
}

func readInts(path string) ([]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("diag: %w", err)
	}
	var out []int64
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("diag: %s: %w", path, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// TimeWait returns the number of TCP sockets in TIME_WAIT towards each of
// dsts (remote address and port), in this network namespace. It asks the
// kernel through netlink sock_diag for TIME_WAIT sockets only, and falls
// back to reading /proc/net/tcp and /proc/net/tcp6.
func TimeWait(dsts []netip.AddrPort) (map[netip.AddrPort]int, error) {
	want := make(map[netip.AddrPort]int, len(dsts))
	for _, d := range dsts {
		want[canon(d)] = 0
	}
	if len(want) == 0 {
		return want, nil
	}
	// A dump walks every TCP socket of the host (O(connections) of kernel
	// time); /proc/net/sockstat's total costs nothing and is usually 0.
	if tw, err := TimeWaitTotal(); err == nil && tw == 0 {
		return outMap(dsts, want), nil
	}
	if err := timeWaitNetlink(want); err == nil {
		return outMap(dsts, want), nil
	}
	for k := range want {
		want[k] = 0
	}
	if err := timeWaitProc(want); err != nil {
		return nil, err
	}
	return outMap(dsts, want), nil
}

// TimeWaitTotal returns the number of TCP sockets in TIME_WAIT in this
// network namespace (all destinations), from /proc/net/sockstat: a cheap
// upper bound for TimeWait.
func TimeWaitTotal() (int, error) {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return 0, fmt.Errorf("diag: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "TCP: ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		for i := 0; i+1 < len(f); i += 2 {
			if f[i] == "tw" {
				return strconv.Atoi(f[i+1])
			}
		}
	}
	return 0, fmt.Errorf("diag: no TCP tw count in /proc/net/sockstat")
}

func canon(d netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(d.Addr().Unmap(), d.Port())
}

func outMap(dsts []netip.AddrPort, counted map[netip.AddrPort]int) map[netip.AddrPort]int {
	out := make(map[netip.AddrPort]int, len(dsts))
	for _, d := range dsts {
		out[d] = counted[canon(d)]
	}
	return out
}

const (
	tcpTimeWait       = 6
	sockDiagByFamily  = 20
	netlinkInetDiag   = 4
	inetDiagReqV2Size = 56
	inetDiagMsgSize   = 72
)

// timeWaitNetlink counts TIME_WAIT sockets by remote address with one
// sock_diag dump per address family.
func timeWaitNetlink(want map[netip.AddrPort]int) error {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkInetDiag)
	if err != nil {
		return fmt.Errorf("diag: netlink socket: %w", err)
	}
	defer syscall.Close(fd)
	tv := syscall.Timeval{Sec: 5}
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fmt.Errorf("diag: netlink bind: %w", err)
	}
	buf := make([]byte, 64<<10)
	for seq, family := range []uint8{syscall.AF_INET, syscall.AF_INET6} {
		req := make([]byte, syscall.NLMSG_HDRLEN+inetDiagReqV2Size)
		ne := binary.NativeEndian
		ne.PutUint32(req[0:], uint32(len(req)))
		ne.PutUint16(req[4:], sockDiagByFamily)
		ne.PutUint16(req[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_DUMP)
		ne.PutUint32(req[8:], uint32(seq+1))
		r := req[syscall.NLMSG_HDRLEN:]
		r[0] = family
		r[1] = syscall.IPPROTO_TCP
		ne.PutUint32(r[4:], 1<<tcpTimeWait)
		if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
			return fmt.Errorf("diag: netlink send: %w", err)
		}
	recv:
		for {
			n, _, err := syscall.Recvfrom(fd, buf, 0)
			if err != nil {
				if errors.Is(err, syscall.EINTR) {
					continue
				}
				return fmt.Errorf("diag: netlink receive: %w", err)
			}
			msgs, err := syscall.ParseNetlinkMessage(buf[:n])
			if err != nil {
				return fmt.Errorf("diag: netlink parse: %w", err)
			}
			for _, m := range msgs {
				switch m.Header.Type {
				case syscall.NLMSG_DONE:
					break recv
				case syscall.NLMSG_ERROR:
					if len(m.Data) >= 4 {
						if e := int32(ne.Uint32(m.Data)); e != 0 {
							return fmt.Errorf("diag: netlink: %w", syscall.Errno(-e))
						}
					}
					break recv
				}
				if len(m.Data) < inetDiagMsgSize || m.Data[1] != tcpTimeWait {
					continue
				}
				dport := binary.BigEndian.Uint16(m.Data[6:])
				var dst netip.Addr
				if m.Data[0] == syscall.AF_INET {
					dst = netip.AddrFrom4([4]byte(m.Data[24:28]))
				} else {
					dst = netip.AddrFrom16([16]byte(m.Data[24:40])).Unmap()
				}
				k := netip.AddrPortFrom(dst, dport)
				if _, ok := want[k]; ok {
					want[k]++
				}
			}
		}
	}
	return nil
}

// timeWaitProc counts TIME_WAIT sockets from /proc/net/tcp{,6}.
func timeWaitProc(want map[netip.AddrPort]int) error {
	read := 0
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		read++
		lines := strings.Split(string(b), "\n")
		for _, line := range lines[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "06" {
				continue
			}
			if k, ok := parseProcAddr(f[2]); ok {
				if _, w := want[k]; w {
					want[k]++
				}
			}
		}
	}
	if read == 0 {
		return fmt.Errorf("diag: cannot read /proc/net/tcp: %w", os.ErrNotExist)
	}
	return nil
}

// parseProcAddr parses "0100007F:1F90" (IPv4, or 32 hex digits for IPv6):
// the address as 32-bit words in host byte order, then the port in hex.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok || (len(h) != 8 && len(h) != 32) {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	var raw [16]byte
	for i := 0; i < len(h)/8; i++ {
		w, err := strconv.ParseUint(h[i*8:i*8+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, false
		}
		binary.NativeEndian.PutUint32(raw[i*4:], uint32(w))
	}
	var a netip.Addr
	if len(h) == 8 {
		a = netip.AddrFrom4([4]byte(raw[:4]))
	} else {
		a = netip.AddrFrom16(raw).Unmap()
	}
	return netip.AddrPortFrom(a, uint16(port)), true
}
