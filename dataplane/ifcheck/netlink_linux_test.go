package ifcheck

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"testing"
)

// rtmsg builds an rtmsg with the given family, destination length, type
// and attributes (type, value).
func rtmsg(family, dstLen, typ byte, as ...attr) []byte {
	b := make([]byte, syscall.SizeofRtMsg)
	b[0], b[1], b[7] = family, dstLen, typ
	for _, a := range as {
		n := 4 + len(a.val)
		h := make([]byte, 4)
		binary.NativeEndian.PutUint16(h, uint16(n))
		binary.NativeEndian.PutUint16(h[2:], a.typ)
		b = append(b, h...)
		b = append(b, a.val...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	return b
}

func u32(v uint32) []byte { b := make([]byte, 4); binary.NativeEndian.PutUint32(b, v); return b }

func TestParseRoute(t *testing.T) {
	nh := func(ifindex uint32) []byte {
		b := make([]byte, 8)
		binary.NativeEndian.PutUint16(b, 8)
		binary.NativeEndian.PutUint32(b[4:], ifindex)
		return b
	}
	multi := append(nh(7), nh(9)...)
	tests := []struct {
		name string
		in   []byte
		ok   bool
		dst  string
		via  int
		not  int
	}{
		{"default via 3", rtmsg(syscall.AF_INET, 0, syscall.RTN_UNICAST, attr{syscall.RTA_OIF, u32(3)}), true, "0.0.0.0/0", 3, 4},
		{"local /24", rtmsg(syscall.AF_INET, 24, syscall.RTN_LOCAL, attr{syscall.RTA_DST, []byte{198, 18, 0, 0}}, attr{syscall.RTA_OIF, u32(1)}), true, "198.18.0.0/24", 1, 2},
		{"multipath", rtmsg(syscall.AF_INET, 0, syscall.RTN_UNICAST, attr{syscall.RTA_MULTIPATH, multi}), true, "0.0.0.0/0", 9, 8},
		{"ipv6 default", rtmsg(syscall.AF_INET6, 0, syscall.RTN_UNICAST, attr{syscall.RTA_OIF, u32(5)}), true, "::/0", 5, 0},
		{"bad prefix length", rtmsg(syscall.AF_INET, 33, syscall.RTN_UNICAST), false, "", 0, 0},
		{"other family", rtmsg(syscall.AF_UNIX, 0, syscall.RTN_UNICAST), false, "", 0, 0},
		{"short", []byte{2, 0, 0}, false, "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := parseRoute(tt.in)
			if ok != tt.ok {
				t.Fatalf("parseRoute ok = %v; want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if r.dst != netip.MustParsePrefix(tt.dst) || !r.viaIf(tt.via) || r.viaIf(tt.not) {
				t.Fatalf("parseRoute = %+v; want dst %s via %d, not %d", r, tt.dst, tt.via, tt.not)
			}
		})
	}
}

func FuzzParseRoute(f *testing.F) {
	f.Add(rtmsg(syscall.AF_INET, 0, syscall.RTN_UNICAST, attr{syscall.RTA_OIF, u32(3)}))
	f.Add(rtmsg(syscall.AF_INET, 24, syscall.RTN_LOCAL, attr{syscall.RTA_DST, []byte{198, 18, 0, 0}}))
	f.Add(rtmsg(syscall.AF_INET, 0, syscall.RTN_UNICAST, attr{syscall.RTA_MULTIPATH, []byte{8, 0, 0, 0, 7, 0, 0, 0, 255, 255}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, ok := parseRoute(b)
		if ok && !r.dst.IsValid() {
			t.Fatalf("parseRoute(%x) = %+v: ok with an invalid prefix", b, r)
		}
		_ = nexthops(b)
	})
}
