package lab

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
)

// HostPair is the topology of a cicada process in the host's namespace:
// Cicada, one end of a veth, stays in the host namespace (no address, IPv6
// and forwarding off, offloads off) so that a `cicada --worker --dataplane`
// process started normally reaches a master on 127.0.0.1 and drives its load
// through Cicada; Peer, the other end, is in the <prefix>-server namespace,
// set up as in KernelPair: ServerNet, a permanent neighbour entry for
// Gateway (Cicada's MAC) and a route for ClientRange via Gateway. Run nginx
// or `cicada target --dataplane` there (Server.Command, ip netns exec).
//
// The host namespace gains one interface, Cicada, and two of its own
// per-interface sysctls; the host's global sysctls are not touched. Close
// removes the interface (deleting the server namespace would too). The
// blackhole route New added covers Range: a host-kernel reply to the lab's
// addresses can never leave by the default route.
type HostPair struct {
	Server *Netns
	// Cicada is in the host namespace: its Netns is nil.
	Cicada *End
	Peer   *End
}

// HostPair builds the host-to-server topology.
func (l *Lab) HostPair() (*HostPair, error) {
	s, err := l.Netns("server")
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	k := l.veths
	l.veths++
	l.mu.Unlock()
	an, bn := fmt.Sprintf("%s%da", l.Prefix, k), fmt.Sprintf("%s%db", l.Prefix, k)
	if len(an) > 15 {
		return nil, fmt.Errorf("lab: interface name %q longer than 15 bytes: %w", an, ErrUnavailable)
	}
	if _, err := run("ip", "link", "add", an, "type", "veth", "peer", "name", bn, "netns", s.Name); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.undo = append(l.undo, func() error {
		_, err := run("ip", "link", "del", an)
		if err != nil && strings.Contains(err.Error(), "Cannot find device") {
			return nil // gone with its peer's namespace
		}
		return err
	})
	l.mu.Unlock()
	a := &End{Name: an}
	if err := a.setupHost(); err != nil {
		return nil, err
	}
	b := &End{Netns: s, Name: bn}
	if err := b.setup(); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"addr", "add", ServerNet, "dev", bn},
		{"neigh", "replace", Gateway, "lladdr", a.MAC.String(), "nud", "permanent", "dev", bn},
		{"route", "add", ClientRange, "via", Gateway, "dev", bn, "onlink"},
	} {
		if err := s.Exec("ip", args...); err != nil {
			return nil, err
		}
	}
	return &HostPair{Server: s, Cicada: a, Peer: b}, nil
}

// setupHost is End.setup for an end in the host namespace: only the
// interface's own sysctls and offloads change.
func (e *End) setupHost() error {
	for _, s := range []string{"net.ipv4.conf." + e.Name + ".forwarding=0", "net.ipv6.conf." + e.Name + ".disable_ipv6=1"} {
		if _, err := run("sysctl", "-q", "-w", s); err != nil {
			return err
		}
	}
	if _, err := exec.LookPath("ethtool"); err == nil {
		if _, err := run("ethtool", "-K", e.Name, "tx", "off", "tso", "off", "gso", "off", "gro", "off"); err != nil {
			return err
		}
	}
	if _, err := run("ip", "link", "set", e.Name, "up"); err != nil {
		return err
	}
	ifc, err := net.InterfaceByName(e.Name)
	if err != nil {
		return fmt.Errorf("lab: %s: %w", e.Name, err)
	}
	e.Index, e.MAC = ifc.Index, ifc.HardwareAddr
	return nil
}
