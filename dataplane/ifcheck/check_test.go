package ifcheck

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	clients := Range{First: netip.MustParseAddr("198.18.0.1"), Count: 200}
	up := state{exists: true, up: true}
	with := func(f func(*state)) state { s := up; f(&s); return s }
	tests := []struct {
		name      string
		s         state
		dedicated bool
		err       error    // nil: accepted
		want      []string // substrings of the error (or of the warnings when accepted)
		warnings  int
	}{
		{name: "clean", s: up},
		{name: "missing", s: state{}, err: ErrInterface, want: []string{"no interface"}},
		{name: "missing dedicated", s: state{}, dedicated: true, err: ErrInterface},
		{name: "down", s: state{exists: true}, err: ErrInterface, want: []string{"is down"}},
		{name: "loopback", s: state{exists: true, up: true, loopback: true}, dedicated: true, err: ErrInterface, want: []string{"loopback"}},
		{name: "default route IPv4", s: with(func(s *state) { s.default4 = true }), err: ErrUnsafe, want: []string{"IPv4 default route", DedicatedFlag}},
		{name: "default route IPv6", s: with(func(s *state) { s.default6 = true }), err: ErrUnsafe, want: []string{"IPv6 default route", DedicatedFlag}},
		{name: "default route both", s: with(func(s *state) { s.default4, s.default6 = true, true }), err: ErrUnsafe, want: []string{"IPv4 and IPv6 default route"}},
		{name: "default route dedicated", s: with(func(s *state) { s.default4 = true }), dedicated: true, warnings: 1, want: []string{"default route", "allowed by " + DedicatedFlag}},
		{name: "address in range", s: with(func(s *state) { s.addrs = []netip.Prefix{netip.MustParsePrefix("198.18.0.200/24")} }), err: ErrUnsafe, want: []string{"holds 198.18.0.200", "client range 198.18.0.1-198.18.0.200"}},
		{name: "address outside range", s: with(func(s *state) { s.addrs = []netip.Prefix{netip.MustParsePrefix("198.18.0.201/24")} })},
		{name: "local route in range", s: with(func(s *state) {
			s.local, s.localDev = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")}, []string{"lo"}
		}), err: ErrUnsafe, want: []string{"local route for 198.18.0.0/24 (dev lo)", "RST trap"}},
		{name: "local route elsewhere", s: with(func(s *state) { s.local = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })},
		{name: "everything dedicated", s: with(func(s *state) {
			s.default4, s.addrs, s.local = true, []netip.Prefix{netip.MustParsePrefix("198.18.0.5/32")}, []netip.Prefix{netip.MustParsePrefix("198.18.0.5/32")}
		}), dedicated: true, warnings: 3},
		{name: "forwarding", s: with(func(s *state) { s.forward4, s.forward6 = true, true }), warnings: 2, want: []string{"net.ipv4.conf.veth0.forwarding=0", "net.ipv6.conf.veth0.forwarding=0"}},
		{name: "offloads", s: with(func(s *state) { s.offloads = []string{"tx-checksumming", "generic-segmentation-offload"} }), warnings: 1, want: []string{"tx-checksumming, generic-segmentation-offload", "ethtool -K veth0"}},
		{name: "refusal keeps warnings", s: with(func(s *state) { s.default4, s.forward4 = true, true }), err: ErrUnsafe, warnings: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := evaluate(Options{Interface: "veth0", Owned: clients, Dedicated: tt.dedicated}, tt.s)
			if tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("evaluate = %v; want %v", err, tt.err)
			}
			if len(w) != tt.warnings {
				t.Errorf("evaluate warnings = %q; want %d", w, tt.warnings)
			}
			text := strings.Join(w, "\n")
			if err != nil {
				text = err.Error()
			}
			for _, s := range tt.want {
				if !strings.Contains(text, s) {
					t.Errorf("evaluate = %q; want it to contain %q", text, s)
				}
			}
		})
	}
}

func TestEvaluateNamesServerAddress(t *testing.T) {
	s := state{exists: true, up: true, addrs: []netip.Prefix{netip.MustParsePrefix("198.18.1.1/24")}}
	_, err := evaluate(Options{Interface: "eth1", Owned: Single(netip.MustParseAddr("198.18.1.1")), What: "server address"}, s)
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "inside the server address 198.18.1.1") {
		t.Fatalf("evaluate = %v; want ErrUnsafe naming the server address", err)
	}
}

func TestCheckRefusesBadOptions(t *testing.T) {
	ok := Single(netip.MustParseAddr("198.18.0.1"))
	for _, tt := range []struct {
		o   Options
		err error
	}{
		{Options{Interface: "", Owned: ok}, ErrInterface},
		{Options{Interface: "../../etc", Owned: ok}, ErrInterface},
		{Options{Interface: "a234567890123456", Owned: ok}, ErrInterface},
		{Options{Interface: "eth 0", Owned: ok}, ErrInterface},
		{Options{Interface: "..", Owned: ok}, ErrInterface},
		{Options{Interface: "eth0"}, ErrRange},
		{Options{Interface: "eth0", Owned: Range{First: netip.MustParseAddr("::1"), Count: 1}}, ErrRange},
	} {
		if _, err := Check(tt.o); !errors.Is(err, tt.err) {
			t.Errorf("Check(%+v) = %v; want %v", tt.o, err, tt.err)
		}
	}
}
