package ifcheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrRange is wrapped by ParseRange and ParsePorts for input they refuse.
var ErrRange = errors.New("ifcheck: bad range")

// MaxRange is the most addresses a Range may hold: the stack's connection
// table bounds client IPs x ports by 2^28, so more than 2^24 addresses could
// never be used.
const MaxRange = 1 << 24

// Range is a contiguous IPv4 range: Count addresses from First.
type Range struct {
	First netip.Addr
	Count int
}

// Single is the range of one address.
func Single(a netip.Addr) Range { return Range{First: a, Count: 1} }

func v4(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

func fromV4(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}

// Valid reports whether r is a non-empty IPv4 range inside the address
// space.
func (r Range) Valid() bool {
	return r.First.Is4() && r.Count >= 1 && r.Count <= MaxRange && uint64(v4(r.First))+uint64(r.Count) <= 1<<32
}

// Last returns the range's last address; r must be Valid.
func (r Range) Last() netip.Addr { return fromV4(v4(r.First) + uint32(r.Count-1)) }

// Contains reports whether a is in r.
func (r Range) Contains(a netip.Addr) bool {
	a = a.Unmap()
	if !r.Valid() || !a.Is4() {
		return false
	}
	return v4(a)-v4(r.First) < uint32(r.Count)
}

// Overlaps reports whether any address of p is in r.
func (r Range) Overlaps(p netip.Prefix) bool {
	if !r.Valid() || !p.IsValid() || !p.Addr().Is4() {
		return false
	}
	p = p.Masked()
	lo := uint64(v4(p.Addr()))
	hi := lo + 1<<(32-p.Bits()) - 1
	first := uint64(v4(r.First))
	last := first + uint64(r.Count) - 1
	return lo <= last && first <= hi
}

// String formats r as ParseRange reads it: "a" or "a-b".
func (r Range) String() string {
	if !r.Valid() {
		return "invalid range"
	}
	if r.Count == 1 {
		return r.First.String()
	}
	return r.First.String() + "-" + r.Last().String()
}

// ParseRange parses an IPv4 range: one address ("198.18.0.1"), a range
// ("198.18.0.1-198.18.0.200", or "198.18.0.1-200" with the last octet only),
// or a prefix ("198.18.0.0/24"), which for /30 and shorter leaves out the
// network and broadcast addresses as --source-ips does. Other families,
// empty and reversed ranges, and more than MaxRange addresses are refused.
func ParseRange(s string) (Range, error) {
	bad := func(format string, a ...any) (Range, error) {
		return Range{}, fmt.Errorf("%w %q: "+format, append([]any{ErrRange, s}, a...)...)
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return bad("empty")
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return bad("%v", err)
		}
		if !p.Addr().Is4() {
			return bad("not IPv4")
		}
		p = p.Masked()
		n := uint64(1) << (32 - p.Bits())
		first := v4(p.Addr())
		if p.Bits() <= 30 {
			first, n = first+1, n-2
		}
		if n > MaxRange {
			return bad("%d addresses, more than %d", n, MaxRange)
		}
		return Range{First: fromV4(first), Count: int(n)}, nil
	case strings.Contains(s, "-"):
		lo, hi, _ := strings.Cut(s, "-")
		from, err := netip.ParseAddr(strings.TrimSpace(lo))
		if err != nil || !from.Is4() {
			return bad("first address: not IPv4")
		}
		hi = strings.TrimSpace(hi)
		to, err := netip.ParseAddr(hi)
		if err != nil {
			n, aerr := strconv.Atoi(hi)
			if aerr != nil || n < 0 || n > 255 || strings.ContainsAny(hi, "+-") {
				return bad("last address: not IPv4 nor a last octet")
			}
			b := from.As4()
			b[3] = byte(n)
			to = netip.AddrFrom4(b)
		}
		if !to.Is4() {
			return bad("last address: not IPv4")
		}
		if to.Less(from) {
			return bad("the range ends before it starts")
		}
		n := uint64(v4(to)) - uint64(v4(from)) + 1
		if n > MaxRange {
			return bad("%d addresses, more than %d", n, MaxRange)
		}
		return Range{First: from, Count: int(n)}, nil
	default:
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return bad("not an IPv4 address, range or prefix")
		}
		return Single(a), nil
	}
}

// ParsePorts parses a port range "10000-59999" or one port "80"; ports are
// 1-65535.
func ParsePorts(s string) (lo, hi uint16, err error) {
	port := func(p string) (uint16, error) {
		p = strings.TrimSpace(p)
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 || strings.HasPrefix(p, "+") {
			return 0, fmt.Errorf("%w %q: port %q outside 1-65535", ErrRange, s, p)
		}
		return uint16(n), nil
	}
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = port(a); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = port(b); err != nil {
			return 0, 0, err
		}
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("%w %q: the range ends before it starts", ErrRange, s)
	}
	return lo, hi, nil
}
