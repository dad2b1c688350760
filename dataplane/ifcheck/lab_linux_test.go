package ifcheck_test

import (
	"errors"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/ifcheck"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// TestCheckInLab checks each refusal, the dedicated override and each
// warning on a veth made by the lab, in the lab's namespaces.
func TestCheckInLab(t *testing.T) {
	if _, err := exec.LookPath("ethtool"); err != nil {
		testpeer.Missing(t, "ethtool: %v", err)
	}
	l := labtest.New(t)
	p, err := l.StackPair()
	if err != nil {
		t.Fatalf("StackPair = %v", err)
	}
	ns, dev := p.Client, p.Cicada.Name
	clients := ifcheck.Range{First: netip.MustParseAddr(lab.ClientIP), Count: 200}
	check := func(o ifcheck.Options) ([]string, error) {
		var w []string
		err := ns.Do(func() error {
			var err error
			w, err = ifcheck.Check(o)
			return err
		})
		return w, err
	}
	ip := func(args ...string) func() error {
		return func() error { return ns.Exec("ip", args...) }
	}
	tests := []struct {
		name      string
		setup     func() error // nil: the lab's veth as built
		undo      func() error
		o         ifcheck.Options
		err       error
		want      string // in the error, or in the warnings
		dedicated bool   // also run with Dedicated: accepted with a warning
	}{
		{name: "clean veth", o: ifcheck.Options{Interface: dev, Owned: clients}},
		{name: "missing", o: ifcheck.Options{Interface: "cicnosuch0", Owned: clients}, err: ifcheck.ErrInterface, want: "no interface"},
		{name: "loopback", o: ifcheck.Options{Interface: "lo", Owned: clients}, err: ifcheck.ErrInterface, want: "loopback"},
		{name: "down", setup: ip("link", "set", dev, "down"), undo: ip("link", "set", dev, "up"),
			o: ifcheck.Options{Interface: dev, Owned: clients}, err: ifcheck.ErrInterface, want: "is down"},
		{name: "default route", setup: ip("route", "add", "default", "dev", dev), undo: ip("route", "del", "default", "dev", dev),
			o: ifcheck.Options{Interface: dev, Owned: clients}, err: ifcheck.ErrUnsafe, want: "IPv4 default route", dedicated: true},
		{name: "IPv6 default route", setup: func() error {
			if err := ns.Exec("sysctl", "-q", "-w", "net.ipv6.conf."+dev+".disable_ipv6=0"); err != nil {
				return err
			}
			return ns.Exec("ip", "-6", "route", "add", "default", "dev", dev)
		}, undo: func() error {
			return ns.Exec("sysctl", "-q", "-w", "net.ipv6.conf."+dev+".disable_ipv6=1") // drops the route too
		}, o: ifcheck.Options{Interface: dev, Owned: clients}, err: ifcheck.ErrUnsafe, want: "IPv6 default route"},
		{name: "multipath default route", setup: ip("route", "add", "default", "nexthop", "dev", "lo", "nexthop", "dev", dev),
			undo: ip("route", "del", "default"),
			o:    ifcheck.Options{Interface: dev, Owned: clients}, err: ifcheck.ErrUnsafe, want: "IPv4 default route"},
		{name: "client address on the interface", setup: ip("addr", "add", "198.18.0.7/24", "dev", dev), undo: ip("addr", "del", "198.18.0.7/24", "dev", dev),
			o: ifcheck.Options{Interface: dev, Owned: clients}, err: ifcheck.ErrUnsafe, want: "holds 198.18.0.7", dedicated: true},
		{name: "local route elsewhere (RST trap)", setup: ip("route", "add", "local", "198.18.0.128/25", "dev", "lo"), undo: ip("route", "del", "local", "198.18.0.128/25", "dev", "lo"),
			o: ifcheck.Options{Interface: dev, Owned: clients}, err: ifcheck.ErrUnsafe, want: "RST trap", dedicated: true},
		{name: "local route outside the range", setup: ip("route", "add", "local", "198.18.5.0/24", "dev", "lo"), undo: ip("route", "del", "local", "198.18.5.0/24", "dev", "lo"),
			o: ifcheck.Options{Interface: dev, Owned: clients}},
		{name: "server address on the interface", setup: ip("addr", "add", lab.ServerNet, "dev", dev), undo: ip("addr", "del", lab.ServerNet, "dev", dev),
			o: ifcheck.Options{Interface: dev, Owned: ifcheck.Single(netip.MustParseAddr(lab.ServerIP)), What: "server address"}, err: ifcheck.ErrUnsafe, want: "inside the server address 198.18.1.1"},
		{name: "forwarding on", setup: func() error { return ns.Exec("sysctl", "-q", "-w", "net.ipv4.conf."+dev+".forwarding=1") },
			undo: func() error { return ns.Exec("sysctl", "-q", "-w", "net.ipv4.conf."+dev+".forwarding=0") },
			o:    ifcheck.Options{Interface: dev, Owned: clients}, want: "IPv4 forwarding is on"},
		{name: "offloads on", setup: func() error { return ns.Exec("ethtool", "-K", dev, "tx", "on", "gso", "on") },
			undo: func() error { return ns.Exec("ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off") },
			o:    ifcheck.Options{Interface: dev, Owned: clients}, want: "tx-checksumming"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				if err := tt.setup(); err != nil {
					t.Fatalf("setup: %v", err)
				}
				t.Cleanup(func() {
					if err := tt.undo(); err != nil {
						t.Errorf("undo: %v", err)
					}
				})
			}
			w, err := check(tt.o)
			if tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("Check(%+v) = %q, %v; want %v", tt.o, w, err, tt.err)
			}
			text := strings.Join(w, "\n")
			if err != nil {
				text = err.Error()
				if errors.Is(err, ifcheck.ErrUnsafe) && !strings.Contains(text, ifcheck.DedicatedFlag) {
					t.Errorf("Check = %v; want the fix %s named", err, ifcheck.DedicatedFlag)
				}
			}
			if tt.want == "" && text != "" {
				t.Errorf("Check = %q; want no warning", text)
			}
			if !strings.Contains(text, tt.want) {
				t.Errorf("Check = %q; want %q", text, tt.want)
			}
			if tt.dedicated {
				o := tt.o
				o.Dedicated = true
				w, err := check(o)
				if err != nil || !strings.Contains(strings.Join(w, "\n"), tt.want) {
					t.Errorf("Check(dedicated) = %q, %v; want accepted with a warning %q", w, err, tt.want)
				}
			}
		})
	}
}
