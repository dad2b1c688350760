package lab_test

import (
	"net"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/lab"
)

func TestLabBuildsAndRemovesHostPair(t *testing.T) {
	l := newLab(t)
	p, err := l.HostPair()
	if err != nil {
		t.Fatalf("HostPair = %v", err)
	}
	if p.Cicada.Netns != nil {
		t.Fatalf("HostPair cicada end in namespace %v; want the host's", p.Cicada.Netns)
	}
	ifc, err := net.InterfaceByName(p.Cicada.Name)
	if err != nil || ifc.Flags&net.FlagUp == 0 || ifc.Index != p.Cicada.Index {
		t.Fatalf("host end %s: %+v, %v; want up with index %d", p.Cicada.Name, ifc, err, p.Cicada.Index)
	}
	if addrs, err := ifc.Addrs(); err != nil || len(addrs) != 0 {
		t.Errorf("host end holds addresses %v (%v); want none (IPv6 off too)", addrs, err)
	}
	for _, c := range []struct {
		key, want string
	}{
		{"net.ipv4.conf." + p.Cicada.Name + ".forwarding", "0"},
		{"net.ipv6.conf." + p.Cicada.Name + ".disable_ipv6", "1"},
	} {
		if out, err := lab.Run("sysctl", "-n", c.key); err != nil || strings.TrimSpace(out) != c.want {
			t.Errorf("%s = %q, %v; want %s", c.key, out, err, c.want)
		}
	}
	if off, err := lab.Run("ethtool", "-k", p.Cicada.Name); err == nil {
		for _, f := range []string{"tx-checksumming: off", "tcp-segmentation-offload: off", "generic-segmentation-offload: off", "generic-receive-offload: off"} {
			if !strings.Contains(off, f) {
				t.Errorf("%s: want %q", p.Cicada.Name, f)
			}
		}
	}
	if out, _ := p.Server.Output("ip", "-4", "addr", "show", "dev", p.Peer.Name); !strings.Contains(out, lab.ServerNet) {
		t.Errorf("server end addresses %q; want %s", out, lab.ServerNet)
	}
	neigh, _ := p.Server.Output("ip", "neigh", "show", lab.Gateway)
	if !strings.Contains(neigh, p.Cicada.MAC.String()) || !strings.Contains(neigh, "PERMANENT") {
		t.Errorf("gateway neighbour %q; want %s PERMANENT", neigh, p.Cicada.MAC)
	}
	if out, _ := p.Server.Output("ip", "route", "show", lab.ClientRange); !strings.Contains(out, "via "+lab.Gateway) {
		t.Errorf("server route to the client range %q; want via %s", out, lab.Gateway)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if _, err := net.InterfaceByName(p.Cicada.Name); err == nil {
		t.Errorf("host end %s left after Close", p.Cicada.Name)
	}
	if out := ipOut(t, "netns", "list"); strings.Contains(out, l.Prefix+"-") {
		t.Errorf("namespaces left after Close: %q", out)
	}
}
