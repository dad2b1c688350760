package afxdp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bpf calls bpf(2) with attr, a pointer to the command's union bpf_attr
// member (the kernel accepts a shorter attr with the rest taken as zero).
func bpf(cmd int, attr unsafe.Pointer, size uintptr) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(attr), size)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// xdpProgram is the loaded program, its map and its attachment.
type xdpProgram struct {
	mapFD, progFD, linkFD int
}

// mapCreateAttr is bpf_attr's BPF_MAP_CREATE member, as far as used.
type mapCreateAttr struct {
	mapType, keySize, valueSize, maxEntries, mapFlags uint32
}

// mapUpdateAttr is bpf_attr's BPF_MAP_*_ELEM member.
type mapUpdateAttr struct {
	mapFD uint32
	_     uint32
	key   uint64 // pointer
	value uint64 // pointer
	flags uint64
}

// progLoadAttr is bpf_attr's BPF_PROG_LOAD member, as far as used.
type progLoadAttr struct {
	progType    uint32
	insnCnt     uint32
	insns       uint64 // pointer
	license     uint64 // pointer
	logLevel    uint32
	logSize     uint32
	logBuf      uint64 // pointer
	kernVersion uint32
	progFlags   uint32
	progName    [16]byte
}

// linkCreateAttr is bpf_attr's BPF_LINK_CREATE member, as far as used.
type linkCreateAttr struct {
	progFD, targetIfindex, attachType, flags uint32
}

// loadProgram creates the XSKMAP with entries for queues 0..queue, loads
// the program under license and returns both descriptors; it does not
// attach. On a verifier error the error carries the verifier's log.
func loadProgram(queue int, license string) (*xdpProgram, error) {
	ma := mapCreateAttr{mapType: unix.BPF_MAP_TYPE_XSKMAP, keySize: 4, valueSize: 4,
		maxEntries: uint32(queue) + 1}
	mapFD, err := bpf(unix.BPF_MAP_CREATE, unsafe.Pointer(&ma), unsafe.Sizeof(ma))
	if err != nil {
		return nil, fmt.Errorf("afxdp: BPF_MAP_CREATE xskmap: %w", err)
	}
	progFD, err := loadInsns(program(mapFD), license)
	if err != nil {
		unix.Close(mapFD)
		return nil, err
	}
	return &xdpProgram{mapFD: mapFD, progFD: progFD, linkFD: -1}, nil
}

// loadInsns loads insns as an XDP program under license and returns its
// descriptor; a verifier error carries the verifier's log.
func loadInsns(insns []uint64, license string) (int, error) {
	lic := append([]byte(license), 0)
	logBuf := make([]byte, 4096)
	pa := progLoadAttr{
		progType: unix.BPF_PROG_TYPE_XDP,
		insnCnt:  uint32(len(insns)),
		insns:    uint64(uintptr(unsafe.Pointer(&insns[0]))),
		license:  uint64(uintptr(unsafe.Pointer(&lic[0]))),
		logLevel: 1,
		logSize:  uint32(len(logBuf)),
		logBuf:   uint64(uintptr(unsafe.Pointer(&logBuf[0]))),
	}
	copy(pa.progName[:], "cicada_xsk")
	fd, err := bpf(unix.BPF_PROG_LOAD, unsafe.Pointer(&pa), unsafe.Sizeof(pa))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(lic)
	runtime.KeepAlive(logBuf)
	if err != nil {
		return -1, fmt.Errorf("afxdp: BPF_PROG_LOAD: %w (verifier: %s)", err, cString(logBuf))
	}
	return fd, nil
}

// setSocket stores the AF_XDP socket fd at the queue's map entry.
func (p *xdpProgram) setSocket(queue, xskFD int) error {
	key, value := uint32(queue), uint32(xskFD)
	ua := mapUpdateAttr{mapFD: uint32(p.mapFD),
		key:   uint64(uintptr(unsafe.Pointer(&key))),
		value: uint64(uintptr(unsafe.Pointer(&value)))}
	_, err := bpf(unix.BPF_MAP_UPDATE_ELEM, unsafe.Pointer(&ua), unsafe.Sizeof(ua))
	runtime.KeepAlive(&key)
	runtime.KeepAlive(&value)
	if err != nil {
		return fmt.Errorf("afxdp: BPF_MAP_UPDATE_ELEM xskmap[%d]: %w", queue, err)
	}
	return nil
}

// attach attaches the program to the interface with BPF_LINK_CREATE, in
// driver mode or, if generic, in skb mode. The interface index is resolved
// in the calling thread's network namespace.
func (p *xdpProgram) attach(ifindex int, generic bool) error {
	flags := uint32(unix.XDP_FLAGS_DRV_MODE)
	if generic {
		flags = unix.XDP_FLAGS_SKB_MODE
	}
	la := linkCreateAttr{progFD: uint32(p.progFD), targetIfindex: uint32(ifindex),
		attachType: unix.BPF_XDP, flags: flags}
	fd, err := bpf(unix.BPF_LINK_CREATE, unsafe.Pointer(&la), unsafe.Sizeof(la))
	if err != nil {
		return fmt.Errorf("afxdp: BPF_LINK_CREATE xdp (flags %#x): %w", flags, err)
	}
	p.linkFD = fd
	return nil
}

// close detaches (closing the link) and frees the program and map.
func (p *xdpProgram) close() error {
	var first error
	for _, fd := range []*int{&p.linkFD, &p.progFD, &p.mapFD} {
		if *fd < 0 {
			continue
		}
		if err := unix.Close(*fd); err != nil && first == nil {
			first = fmt.Errorf("afxdp: close bpf fd: %w", err)
		}
		*fd = -1
	}
	return first
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
