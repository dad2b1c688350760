//go:build linux

package afpacket

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// packetFanoutFlagIgnoreOutgoing is PACKET_FANOUT_FLAG_IGNORE_OUTGOING
// (Linux 6.9), missing from older headers: the group's hook skips the
// interface's outgoing frames, as PACKET_IGNORE_OUTGOING does for one
// socket (a member's own hook is replaced by the group's).
const packetFanoutFlagIgnoreOutgoing = 0x4000

// OpenFanout opens len(f.Slices) Links on the interface cfg.Index, joined
// in that order to the fanout group f.Group with f's program, so that Link
// k receives the frames Fanout says. The group's members are indexed by the
// order they joined and the kernel takes the program's result modulo the
// members, so the Links only work as a whole: close them together (a
// closed member renumbers the others). Frames the interface receives while
// OpenFanout runs may reach the wrong Link. Each Link sends on its own TX
// ring as Open's.
func OpenFanout(cfg Config, f Fanout) ([]*Link, error) {
	prog, err := f.Program()
	if err != nil {
		return nil, err
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	links := make([]*Link, 0, len(f.Slices))
	fail := func(err error) ([]*Link, error) {
		for _, l := range links {
			_ = l.Close()
		}
		return nil, err
	}
	flags := packetFanoutFlagIgnoreOutgoing
	for k := range f.Slices {
		l, err := Open(cfg)
		if err != nil {
			return fail(fmt.Errorf("afpacket: fanout link %d: %w", k, err))
		}
		links = append(links, l)
		err = unix.SetsockoptInt(l.rxFd, unix.SOL_PACKET, unix.PACKET_FANOUT,
			int(f.Group)|(unix.PACKET_FANOUT_CBPF|flags)<<16)
		if k == 0 && errors.Is(err, unix.EINVAL) && !cfg.Qdisc {
			// An older kernel: without the qdisc the TX rings' frames
			// bypass the taps, so the group sees no outgoing frame anyway.
			flags = 0
			err = unix.SetsockoptInt(l.rxFd, unix.SOL_PACKET, unix.PACKET_FANOUT,
				int(f.Group)|unix.PACKET_FANOUT_CBPF<<16)
		}
		if err != nil {
			return fail(fmt.Errorf("afpacket: fanout link %d: PACKET_FANOUT group %d: %w", k, f.Group, err))
		}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.SetsockoptSockFprog(links[0].rxFd, unix.SOL_PACKET, unix.PACKET_FANOUT_DATA, &fprog); err != nil {
		return fail(fmt.Errorf("afpacket: fanout group %d: PACKET_FANOUT_DATA: %w", f.Group, err))
	}
	return links, nil
}
