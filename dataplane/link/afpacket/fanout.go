package afpacket

import (
	"fmt"

	"github.com/cicada-load/cicada/dataplane/link"
)

// Side says which TCP port of a received frame selects its socket in a
// fanout group.
type Side uint8

// Sides.
const (
	// ClientSide selects by destination port: frames reaching a client
	// stack are addressed to its client ports.
	ClientSide Side = iota + 1
	// ServerSide selects by source port: frames reaching a server stack
	// come from the client ports.
	ServerSide
)

// MaxFanoutSlices bounds Fanout.Slices (the program has 3 instructions a
// slice and a classic BPF program at most 4,096).
const MaxFanoutSlices = 1024

// Fanout spreads one interface's received frames over several Links (an
// AF_PACKET fanout group of type PACKET_FANOUT_CBPF): an IPv4 TCP frame
// whose port (Side) lies in Slices[k] reaches Link k. Every other frame
// (ARP, ICMP, IPv4 fragments after the first, other protocols, TCP ports in
// no slice) reaches Link 0.
type Fanout struct {
	// Group is the fanout group's id, unique in the network namespace
	// among the groups on any interface.
	Group uint16
	// Slices are the port ranges, inclusive, one per Link; disjoint, 1 to
	// MaxFanoutSlices of them (engine.Split makes them).
	Slices [][2]uint16
	// Side is ClientSide or ServerSide; required.
	Side Side
}

// Instruction is one classic BPF instruction, laid out as the kernel's
// struct sock_filter.
type Instruction struct {
	Op     uint16
	Jt, Jf uint8
	K      uint32
}

// Classic BPF opcodes and the kernel's negative load offsets used by the
// fanout program (linux/filter.h, linux/bpf_common.h).
const (
	bpfLdWAbs  = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfLdHAbs  = 0x28 // BPF_LD | BPF_H | BPF_ABS
	bpfLdBAbs  = 0x30 // BPF_LD | BPF_B | BPF_ABS
	bpfLdHInd  = 0x48 // BPF_LD | BPF_H | BPF_IND
	bpfLdxBMsh = 0xb1 // BPF_LDX | BPF_B | BPF_MSH
	bpfJeqK    = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgtK    = 0x25 // BPF_JMP | BPF_JGT | BPF_K
	bpfJgeK    = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfJsetK   = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	bpfRetK    = 0x06 // BPF_RET | BPF_K

	// skfAdProtocol loads skb->protocol (the EtherType, host order);
	// skfNetOff+k loads at the network header plus k, wherever the
	// socket's data starts.
	skfAdProtocol = 0xfffff000 // SKF_AD_OFF + SKF_AD_PROTOCOL
	skfNetOff     = 0xfff00000 // SKF_NET_OFF
)

func (f *Fanout) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("afpacket: fanout "+format+": %w", append(a, link.ErrConfig)...)
	}
	if f.Side != ClientSide && f.Side != ServerSide {
		return bad("Side %d is neither ClientSide nor ServerSide", f.Side)
	}
	if len(f.Slices) < 1 || len(f.Slices) > MaxFanoutSlices {
		return bad("%d slices outside 1..%d", len(f.Slices), MaxFanoutSlices)
	}
	for i, s := range f.Slices {
		if s[0] > s[1] {
			return bad("slice %d is %d..%d", i, s[0], s[1])
		}
		for j, o := range f.Slices[:i] {
			if s[0] <= o[1] && o[0] <= s[1] {
				return bad("slices %d (%d..%d) and %d (%d..%d) overlap", j, o[0], o[1], i, s[0], s[1])
			}
		}
	}
	return nil
}

// Program returns the fanout's classic BPF program: it returns the index
// of the Link that receives a frame (see Fanout), or an error wrapping
// link.ErrConfig for a Fanout it cannot build. Loads are relative to the
// network header (SKF_NET_OFF), so the program holds whether the kernel
// runs it with the data at the Ethernet or the IPv4 header.
func (f *Fanout) Program() ([]Instruction, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	port := uint32(2) // destination port
	if f.Side == ServerSide {
		port = 0
	}
	p := []Instruction{
		{Op: bpfLdWAbs, K: skfAdProtocol},
		{Op: bpfJeqK, Jt: 1, K: 0x0800}, // IPv4
		{Op: bpfRetK, K: 0},
		{Op: bpfLdBAbs, K: skfNetOff + 9},
		{Op: bpfJeqK, Jt: 1, K: 6}, // TCP
		{Op: bpfRetK, K: 0},
		{Op: bpfLdHAbs, K: skfNetOff + 6},
		{Op: bpfJsetK, Jf: 1, K: 0x1fff}, // a later fragment: no TCP header
		{Op: bpfRetK, K: 0},
		{Op: bpfLdxBMsh, K: skfNetOff}, // X = IHL*4
		{Op: bpfLdHInd, K: skfNetOff + port},
	}
	for k, s := range f.Slices {
		if k == 0 {
			continue // the default
		}
		p = append(p,
			Instruction{Op: bpfJgeK, Jf: 2, K: uint32(s[0])},
			Instruction{Op: bpfJgtK, Jt: 1, K: uint32(s[1])},
			Instruction{Op: bpfRetK, K: uint32(k)})
	}
	return append(p, Instruction{Op: bpfRetK, K: 0}), nil
}
