//go:build linux

package ifcheck

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// read gathers the state of the interface called name; name is valid.
func read(name string) (state, error) {
	var s state
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		if strings.Contains(err.Error(), "no such network interface") {
			return s, nil // !exists
		}
		return s, fmt.Errorf("ifcheck: %s: %w", name, err)
	}
	s.exists = true
	s.up = ifc.Flags&net.FlagUp != 0
	s.loopback = ifc.Flags&net.FlagLoopback != 0
	names, err := ifNames()
	if err != nil {
		return s, err
	}
	for _, fam := range []int{syscall.AF_INET, syscall.AF_INET6} {
		routes, err := dumpRoutes(fam)
		if err != nil {
			return s, err
		}
		for _, r := range routes {
			switch {
			case r.typ == unix.RTN_LOCAL && fam == syscall.AF_INET:
				s.local = append(s.local, r.dst)
				s.localDev = append(s.localDev, names[r.oif])
			case r.typ == unix.RTN_UNICAST && r.dst.Bits() == 0 && r.viaIf(ifc.Index):
				if fam == syscall.AF_INET {
					s.default4 = true
				} else {
					s.default6 = true
				}
			}
		}
	}
	if s.addrs, err = ifAddrs(ifc.Index); err != nil {
		return s, err
	}
	s.forward4 = sysctlOn("/proc/sys/net/ipv4/conf/" + name + "/forwarding")
	s.forward6 = sysctlOn("/proc/sys/net/ipv6/conf/" + name + "/forwarding")
	s.offloads, err = offloads(name)
	return s, err
}

// sysctlOn reports whether a /proc/sys file holds a non-zero number; a
// missing file (IPv6 off) is off.
func sysctlOn(path string) bool {
	b, err := os.ReadFile(path)
	v := strings.TrimSpace(string(b))
	return err == nil && v != "" && v != "0"
}

func ifNames() (map[int]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("ifcheck: interfaces: %w", err)
	}
	m := make(map[int]string, len(ifs))
	for _, i := range ifs {
		m[i.Index] = i.Name
	}
	return m, nil
}

// route is one rtnetlink route: destination, type, output interfaces.
type route struct {
	dst  netip.Prefix
	typ  uint8
	oif  int
	oifs []int // multipath next hops
}

func (r route) viaIf(index int) bool {
	if r.oif == index {
		return true
	}
	for _, o := range r.oifs {
		if o == index {
			return true
		}
	}
	return false
}

// dumpRoutes dumps the routes of every table of one family.
func dumpRoutes(family int) ([]route, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETROUTE, family)
	if err != nil {
		return nil, fmt.Errorf("ifcheck: route dump: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, fmt.Errorf("ifcheck: route dump: %w", err)
	}
	var out []route
	for _, m := range msgs {
		if m.Header.Type != syscall.RTM_NEWROUTE || len(m.Data) < syscall.SizeofRtMsg {
			continue
		}
		r, ok := parseRoute(m.Data)
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// parseRoute decodes an rtmsg and its attributes.
func parseRoute(b []byte) (route, bool) {
	if len(b) < syscall.SizeofRtMsg {
		return route{}, false
	}
	family, dstLen, typ := b[0], int(b[1]), b[7]
	r := route{typ: typ}
	size := 4
	if family == syscall.AF_INET6 {
		size = 16
	} else if family != syscall.AF_INET {
		return route{}, false
	}
	dst := make([]byte, size)
	for _, a := range attrs(b[alignRt(syscall.SizeofRtMsg):]) {
		switch a.typ {
		case syscall.RTA_DST:
			if len(a.val) == size {
				copy(dst, a.val)
			}
		case syscall.RTA_OIF:
			if len(a.val) == 4 {
				r.oif = int(int32(binary.NativeEndian.Uint32(a.val)))
			}
		case syscall.RTA_MULTIPATH:
			r.oifs = nexthops(a.val)
		}
	}
	addr, _ := netip.AddrFromSlice(dst)
	p, err := addr.Prefix(dstLen)
	if err != nil {
		return route{}, false
	}
	r.dst = p
	return r, true
}

// nexthops returns the interfaces of an RTA_MULTIPATH list of rtnexthop
// (len u16, flags u8, hops u8, ifindex i32, attributes).
func nexthops(b []byte) []int {
	var out []int
	for len(b) >= 8 {
		n := int(binary.NativeEndian.Uint16(b))
		if n < 8 || n > len(b) {
			break
		}
		out = append(out, int(int32(binary.NativeEndian.Uint32(b[4:]))))
		b = b[min(alignRt(n), len(b)):]
	}
	return out
}

type attr struct {
	typ uint16
	val []byte
}

// attrs splits rtnetlink attributes (len u16, type u16, value, padded to 4).
func attrs(b []byte) []attr {
	var out []attr
	for len(b) >= 4 {
		n := int(binary.NativeEndian.Uint16(b))
		if n < 4 || n > len(b) {
			break
		}
		out = append(out, attr{typ: binary.NativeEndian.Uint16(b[2:]) &^ unix.NLA_F_NESTED, val: b[4:n]})
		b = b[min(alignRt(n), len(b)):]
	}
	return out
}

func alignRt(n int) int { return (n + 3) &^ 3 }

// ifAddrs returns the interface's IPv4 addresses.
func ifAddrs(index int) ([]netip.Prefix, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETADDR, syscall.AF_INET)
	if err != nil {
		return nil, fmt.Errorf("ifcheck: address dump: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, fmt.Errorf("ifcheck: address dump: %w", err)
	}
	var out []netip.Prefix
	for _, m := range msgs {
		if m.Header.Type != syscall.RTM_NEWADDR || len(m.Data) < syscall.SizeofIfAddrmsg {
			continue
		}
		bits := int(m.Data[1])
		if int(binary.NativeEndian.Uint32(m.Data[4:])) != index {
			continue
		}
		for _, a := range attrs(m.Data[alignRt(syscall.SizeofIfAddrmsg):]) {
			if a.typ != syscall.IFA_LOCAL && a.typ != syscall.IFA_ADDRESS || len(a.val) != 4 {
				continue
			}
			out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte(a.val)), bits))
		}
	}
	return out, nil
}

// ethtool commands (linux/ethtool.h) reading one on/off value.
var ethtoolGets = []struct {
	name string
	cmd  uint32
}{
	{"tx-checksumming", unix.ETHTOOL_GTXCSUM},
	{"tcp-segmentation-offload", unix.ETHTOOL_GTSO},
	{"generic-segmentation-offload", unix.ETHTOOL_GGSO},
	{"generic-receive-offload", unix.ETHTOOL_GGRO},
}

// ifreqData is struct ifreq with ifr_data (40 bytes on 64-bit Linux).
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// offloads returns the names of the offloads that are on. An interface
// without ethtool support (EOPNOTSUPP) reports none.
func offloads(name string) ([]string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ifcheck: ethtool socket: %w", err)
	}
	defer unix.Close(fd)
	var on []string
	for _, g := range ethtoolGets {
		v := struct{ cmd, data uint32 }{cmd: g.cmd}
		var req ifreqData
		copy(req.name[:], name)
		req.data = unsafe.Pointer(&v)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req)))
		runtime.KeepAlive(&v)
		switch {
		case errno == unix.EOPNOTSUPP || errno == unix.EINVAL:
			continue
		case errno != 0:
			return nil, fmt.Errorf("ifcheck: ethtool %s on %s: %w", g.name, name, errno)
		}
		if v.data != 0 {
			on = append(on, g.name)
		}
	}
	return on, nil
}
