package lab

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Pair is a client namespace and a server namespace joined by one veth:
// Cicada is the client stack's end, Server the other end.
type Pair struct {
	Client, Server *Netns
	Cicada, Peer   *End
}

// KernelPair builds the client-to-kernel topology: the server namespace's
// end holds ServerNet, a permanent neighbour entry for Gateway (the cicada
// end's MAC) and a route for ClientRange via Gateway; the cicada end holds
// no address.
func (l *Lab) KernelPair() (*Pair, error) {
	p, err := l.pair()
	if err != nil {
		return nil, err
	}
	s, dev := p.Server, p.Peer.Name
	for _, args := range [][]string{
		{"addr", "add", ServerNet, "dev", dev},
		{"neigh", "replace", Gateway, "lladdr", p.Cicada.MAC.String(), "nud", "permanent", "dev", dev},
		{"route", "add", ClientRange, "via", Gateway, "dev", dev, "onlink"},
	} {
		if err := s.Exec("ip", args...); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// StackPair builds the client-to-stack topology: both ends belong to
// stacks and no namespace holds an address.
func (l *Lab) StackPair() (*Pair, error) { return l.pair() }

func (l *Lab) pair() (*Pair, error) {
	c, err := l.Netns("client")
	if err != nil {
		return nil, err
	}
	s, err := l.Netns("server")
	if err != nil {
		return nil, err
	}
	a, b, err := l.Veth(c, s)
	if err != nil {
		return nil, err
	}
	return &Pair{Client: c, Server: s, Cicada: a, Peer: b}, nil
}

// SNMP returns one protocol's counters ("Tcp", "Ip") from the namespace's
// /proc/net/snmp, such as "OutRsts" and "InErrs".
func (n *Netns) SNMP(proto string) (map[string]int64, error) {
	var out map[string]int64
	err := n.Do(func() error {
		f, err := os.Open("/proc/thread-self/net/snmp")
		if err != nil {
			return fmt.Errorf("lab: snmp: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		var names []string
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ": ")
			if k != proto {
				continue
			}
			if names == nil {
				names = strings.Fields(v)
				continue
			}
			out = map[string]int64{}
			for i, f := range strings.Fields(v) {
				if i < len(names) {
					out[names[i]], _ = strconv.ParseInt(f, 10, 64)
				}
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("lab: snmp: %w", err)
		}
		if out == nil {
			return fmt.Errorf("lab: snmp has no %s counters", proto)
		}
		return nil
	})
	return out, err
}

// Dial connects to addr over TCP from inside the namespace (a readiness
// probe for a server started there); the connection stays in it.
func (n *Netns) Dial(addr string) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp", addr, time.Second)
		return err
	})
	return c, err
}

// KernelClient adds a namespace for kernel-socket clients (wrk, a cicada
// worker) beside p: a veth to p.Server with KernelClientNet on its end and
// KernelGatewayNet on the server's, and a route to ServerIP. It measures
// the kernel's figure on the same server.
func (l *Lab) KernelClient(p *Pair) (*Netns, error) {
	k, err := l.Netns("kclient")
	if err != nil {
		return nil, err
	}
	a, b, err := l.Veth(k, p.Server)
	if err != nil {
		return nil, err
	}
	for _, c := range []struct {
		n    *Netns
		args []string
	}{
		{k, []string{"addr", "add", KernelClientNet, "dev", a.Name}},
		{p.Server, []string{"addr", "add", KernelGatewayNet, "dev", b.Name}},
		{k, []string{"route", "add", ServerIP, "via", KernelGateway, "dev", a.Name}},
	} {
		if err := c.n.Exec("ip", c.args...); err != nil {
			return nil, err
		}
	}
	return k, nil
}
