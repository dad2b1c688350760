package afpacket

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cicada-load/cicada/dataplane/link"
)

// runBPF is a classic BPF interpreter for the instructions Program emits,
// with the kernel's semantics for a frame received on an Ethernet device:
// SKF_AD_PROTOCOL is the EtherType, SKF_NET_OFF+k is byte k of the IPv4
// header, and a load past the frame ends the program with 0. Any other
// instruction fails the test: the builder must not emit what is not
// checked here.
func runBPF(t testing.TB, prog []Instruction, frame []byte) uint32 {
	var a, x uint32
	net := func(off uint32, size int) (uint32, bool) {
		if off < skfNetOff {
			t.Fatalf("load at %#x is not network-relative", off)
		}
		i := 14 + int(off-skfNetOff)
		if i+size > len(frame) {
			return 0, false
		}
		switch size {
		case 1:
			return uint32(frame[i]), true
		case 2:
			return uint32(binary.BigEndian.Uint16(frame[i:])), true
		}
		return binary.BigEndian.Uint32(frame[i:]), true
	}
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		jump := func(cond bool) {
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		}
		var ok bool
		switch in.Op {
		case bpfLdWAbs:
			if in.K != skfAdProtocol {
				t.Fatalf("pc %d: word load at %#x", pc, in.K)
			}
			if len(frame) < 14 {
				return 0
			}
			a = uint32(binary.BigEndian.Uint16(frame[12:]))
		case bpfLdHAbs:
			if a, ok = net(in.K, 2); !ok {
				return 0
			}
		case bpfLdBAbs:
			if a, ok = net(in.K, 1); !ok {
				return 0
			}
		case bpfLdHInd:
			if a, ok = net(in.K+x, 2); !ok {
				return 0
			}
		case bpfLdxBMsh:
			v, ok := net(in.K, 1)
			if !ok {
				return 0
			}
			x = 4 * (v & 0xf)
		case bpfJeqK:
			jump(a == in.K)
		case bpfJgtK:
			jump(a > in.K)
		case bpfJgeK:
			jump(a >= in.K)
		case bpfJsetK:
			jump(a&in.K != 0)
		case bpfRetK:
			return in.K
		default:
			t.Fatalf("pc %d: opcode %#x", pc, in.Op)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// classify is the reference: the Link a frame must reach. A malformed
// IPv4 header (IHL under 5) is not checked, as in the program: whichever
// stack receives it drops it as malformed.
func classify(f *Fanout, frame []byte) uint32 {
	if len(frame) < 14+10 || binary.BigEndian.Uint16(frame[12:]) != 0x0800 {
		return 0
	}
	ip := frame[14:]
	ihl := int(ip[0]&0xf) * 4
	at := ihl + 2 // destination port
	if f.Side == ServerSide {
		at = ihl
	}
	if ip[9] != 6 || binary.BigEndian.Uint16(ip[6:])&0x1fff != 0 || len(ip) < at+2 {
		return 0
	}
	port := binary.BigEndian.Uint16(ip[at:])
	for k, s := range f.Slices {
		if port >= s[0] && port <= s[1] {
			return uint32(k)
		}
	}
	return 0
}

// tcpFrame is an Ethernet+IPv4(+options)+TCP header with the given ports.
func tcpFrame(src, dst uint16, optWords int, fragOff uint16) []byte {
	f := make([]byte, 14+20+4*optWords+20)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45 + byte(optWords)
	binary.BigEndian.PutUint16(ip[6:], fragOff)
	ip[9] = 6
	tcp := ip[20+4*optWords:]
	binary.BigEndian.PutUint16(tcp, src)
	binary.BigEndian.PutUint16(tcp[2:], dst)
	return f
}

func TestFanoutProgramRoutesBySlice(t *testing.T) {
	slices := [][2]uint16{{10000, 10499}, {10500, 10999}, {11000, 11499}}
	client := &Fanout{Slices: slices, Side: ClientSide}
	server := &Fanout{Slices: slices, Side: ServerSide}
	arp := make([]byte, 42)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	icmp := tcpFrame(0, 0, 0, 0)
	icmp[14+9] = 1
	for _, tc := range []struct {
		name  string
		f     *Fanout
		frame []byte
		want  uint32
	}{
		{"client, first slice", client, tcpFrame(80, 10000, 0, 0), 0},
		{"client, second slice low", client, tcpFrame(80, 10500, 0, 0), 1},
		{"client, second slice high", client, tcpFrame(80, 10999, 0, 0), 1},
		{"client, third slice", client, tcpFrame(80, 11499, 0, 0), 2},
		{"client, above every slice", client, tcpFrame(80, 11500, 0, 0), 0},
		{"client, source port ignored", client, tcpFrame(11000, 10000, 0, 0), 0},
		{"client, IPv4 options", client, tcpFrame(80, 11200, 10, 0), 2},
		{"server, by source port", server, tcpFrame(10700, 80, 0, 0), 1},
		{"server, destination ignored", server, tcpFrame(80, 10700, 0, 0), 0},
		{"first fragment", client, tcpFrame(80, 10700, 0, 0x2000), 1},
		{"later fragment", client, tcpFrame(80, 10700, 0, 0x2001), 0},
		{"ARP", client, arp, 0},
		{"ICMP", client, icmp, 0},
		{"truncated TCP", client, tcpFrame(80, 10700, 0, 0)[:14+20+2], 0},
		{"runt", client, []byte{1, 2, 3}, 0},
	} {
		prog, err := tc.f.Program()
		if err != nil {
			t.Fatal(err)
		}
		if got, ref := runBPF(t, prog, tc.frame), classify(tc.f, tc.frame); got != tc.want || ref != tc.want {
			t.Errorf("%s: program %d, reference %d; want %d", tc.name, got, ref, tc.want)
		}
	}
}

func TestFanoutRefusesBadConfig(t *testing.T) {
	many := make([][2]uint16, MaxFanoutSlices+1)
	for i := range many {
		many[i] = [2]uint16{uint16(i), uint16(i)}
	}
	for name, f := range map[string]Fanout{
		"no side":     {Slices: [][2]uint16{{1, 2}}},
		"bad side":    {Slices: [][2]uint16{{1, 2}}, Side: 3},
		"no slices":   {Side: ClientSide},
		"too many":    {Slices: many, Side: ClientSide},
		"inverted":    {Slices: [][2]uint16{{5, 4}}, Side: ClientSide},
		"overlapping": {Slices: [][2]uint16{{1, 10}, {20, 30}, {10, 19}}, Side: ServerSide},
	} {
		if _, err := f.Program(); !errors.Is(err, link.ErrConfig) {
			t.Errorf("%s: Program = %v; want link.ErrConfig", name, err)
		}
		if _, err := OpenFanout(Config{Index: 1}, f); !errors.Is(err, link.ErrConfig) {
			t.Errorf("%s: OpenFanout = %v; want link.ErrConfig", name, err)
		}
	}
}

func FuzzFanoutProgram(f *testing.F) {
	f.Add(tcpFrame(80, 10600, 0, 0), uint16(10000), uint16(300), uint8(4), false)
	f.Add(tcpFrame(10600, 80, 3, 0), uint16(10000), uint16(1), uint8(200), true)
	f.Add([]byte{}, uint16(1), uint16(0), uint8(1), false)
	f.Fuzz(func(t *testing.T, frame []byte, start, width uint16, n uint8, server bool) {
		fan := &Fanout{Side: ClientSide}
		if server {
			fan.Side = ServerSide
		}
		lo := int(start)
		for range int(n%64) + 1 {
			hi := lo + int(width)
			if hi > 65535 {
				break
			}
			fan.Slices = append(fan.Slices, [2]uint16{uint16(lo), uint16(hi)})
			lo = hi + 1
		}
		if len(fan.Slices) == 0 {
			return
		}
		prog, err := fan.Program()
		if err != nil {
			t.Fatalf("Program(%+v) = %v", fan, err)
		}
		if len(prog) > 4096 {
			t.Fatalf("%d instructions; the kernel takes 4096", len(prog))
		}
		if got, want := runBPF(t, prog, frame), classify(fan, frame); got != want {
			t.Fatalf("frame %x, slices %v: program %d, reference %d", frame, fan.Slices, got, want)
		}
	})
}
