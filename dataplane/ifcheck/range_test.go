package ifcheck

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParseRange(t *testing.T) {
	tests := []struct {
		in    string
		first string
		count int
	}{
		{"198.18.0.1", "198.18.0.1", 1},
		{" 198.18.0.1-198.18.0.200 ", "198.18.0.1", 200},
		{"198.18.0.1-200", "198.18.0.1", 200},
		{"198.18.0.1 - 198.18.1.0", "198.18.0.1", 256},
		{"198.18.0.0/24", "198.18.0.1", 254},
		{"198.18.0.7/24", "198.18.0.1", 254},
		{"198.18.0.4/31", "198.18.0.4", 2},
		{"198.18.0.4/32", "198.18.0.4", 1},
		{"10.0.0.0/8", "10.0.0.1", 1<<24 - 2},
		{"255.255.255.255", "255.255.255.255", 1},
		{"0.0.0.0-0.255.255.255", "0.0.0.0", 1 << 24},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseRange(tt.in)
			if err != nil || r.First != netip.MustParseAddr(tt.first) || r.Count != tt.count {
				t.Fatalf("ParseRange(%q) = %v, %d, %v; want %s, %d", tt.in, r.First, r.Count, err, tt.first, tt.count)
			}
			if !r.Valid() {
				t.Fatalf("ParseRange(%q) = %v: not Valid", tt.in, r)
			}
			again, err := ParseRange(r.String())
			if err != nil || again != r {
				t.Fatalf("ParseRange(%q.String() = %q) = %v, %v; want %v", tt.in, r.String(), again, err, r)
			}
		})
	}
}

func TestParseRangeRefuses(t *testing.T) {
	for _, in := range []string{
		"", " ", "x", "198.18.0", "::1", "fe80::1-fe80::2", "2001:db8::/64",
		"198.18.0.200-198.18.0.1", "198.18.0.1-256", "198.18.0.1--2", "198.18.0.1-+2",
		"198.18.0.1-::1", "198.18.0.0/33", "10.0.0.0/7", "0.0.0.0-1.0.0.0", "198.18.0.1-",
	} {
		t.Run(in, func(t *testing.T) {
			if r, err := ParseRange(in); !errors.Is(err, ErrRange) {
				t.Fatalf("ParseRange(%q) = %v, %v; want ErrRange", in, r, err)
			}
		})
	}
}

func TestParsePorts(t *testing.T) {
	tests := []struct {
		in     string
		lo, hi uint16
		ok     bool
	}{
		{"10000-59999", 10000, 59999, true},
		{"80", 80, 80, true},
		{"1-65535", 1, 65535, true},
		{" 5 - 6 ", 5, 6, true},
		{"0-10", 0, 0, false},
		{"10-65536", 0, 0, false},
		{"20-10", 0, 0, false},
		{"", 0, 0, false},
		{"-5", 0, 0, false},
		{"+5", 0, 0, false},
		{"5-", 0, 0, false},
		{"a-b", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			lo, hi, err := ParsePorts(tt.in)
			if tt.ok != (err == nil) || lo != tt.lo || hi != tt.hi {
				t.Fatalf("ParsePorts(%q) = %d, %d, %v; want %d, %d, ok %v", tt.in, lo, hi, err, tt.lo, tt.hi, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrRange) {
				t.Fatalf("ParsePorts(%q) error %v does not wrap ErrRange", tt.in, err)
			}
		})
	}
}

func TestRangeContainsOverlaps(t *testing.T) {
	r := Range{First: netip.MustParseAddr("198.18.0.10"), Count: 10} // .10-.19
	for _, tt := range []struct {
		a    string
		want bool
	}{{"198.18.0.9", false}, {"198.18.0.10", true}, {"198.18.0.19", true}, {"198.18.0.20", false}, {"::ffff:198.18.0.12", true}, {"::1", false}} {
		if got := r.Contains(netip.MustParseAddr(tt.a)); got != tt.want {
			t.Errorf("%v.Contains(%s) = %v; want %v", r, tt.a, got, tt.want)
		}
	}
	for _, tt := range []struct {
		p    string
		want bool
	}{
		{"198.18.0.0/24", true}, {"198.18.0.0/29", false}, {"198.18.0.8/29", true}, {"198.18.0.16/30", true},
		{"198.18.0.20/30", false}, {"0.0.0.0/0", true}, {"198.18.0.19/32", true}, {"198.18.0.20/32", false},
		{"2001:db8::/32", false},
	} {
		if got := r.Overlaps(netip.MustParsePrefix(tt.p)); got != tt.want {
			t.Errorf("%v.Overlaps(%s) = %v; want %v", r, tt.p, got, tt.want)
		}
	}
	for _, bad := range []Range{{}, {First: netip.MustParseAddr("::1"), Count: 1}, {First: netip.MustParseAddr("255.255.255.255"), Count: 2}, {First: netip.MustParseAddr("1.1.1.1")}} {
		if bad.Valid() || bad.Contains(netip.MustParseAddr("1.1.1.1")) || bad.Overlaps(netip.MustParsePrefix("0.0.0.0/0")) {
			t.Errorf("%#v: Valid, Contains or Overlaps true for an invalid range", bad)
		}
	}
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"198.18.0.1", "198.18.0.1-200", "198.18.0.0/24", "1.2.3.4-1.2.3.3", "::1", "0.0.0.0/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRange(s)
		if err != nil {
			if !errors.Is(err, ErrRange) {
				t.Fatalf("ParseRange(%q) = %v; want ErrRange", s, err)
			}
			return
		}
		if !r.Valid() || !r.Contains(r.First) || !r.Contains(r.Last()) {
			t.Fatalf("ParseRange(%q) = %v: invalid", s, r)
		}
		if again, err := ParseRange(r.String()); err != nil || again != r {
			t.Fatalf("round trip of %q: %v, %v; want %v", s, again, err, r)
		}
	})
}

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"10000-59999", "80", "0", "65536", "2-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lo, hi, err := ParsePorts(s)
		if err != nil {
			if !errors.Is(err, ErrRange) {
				t.Fatalf("ParsePorts(%q) = %v; want ErrRange", s, err)
			}
			return
		}
		if lo == 0 || hi < lo {
			t.Fatalf("ParsePorts(%q) = %d, %d", s, lo, hi)
		}
	})
}
