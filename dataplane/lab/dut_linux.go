//go:build linux

package lab

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// The device under test's addresses (DUTChain): its end towards the client
// stack is Gateway in ClientRange, its end towards the server stack is
// DUTServerGateway in ServerNet's /24.
const (
	DUTClientNet     = "198.18.0.254/24"
	DUTServerGateway = "198.18.1.254"
	DUTServerNet     = "198.18.1.254/24"

	// DUTTable is the nftables table (family inet) of the device's
	// stateful ruleset.
	DUTTable = "cicada_dut"
	// MaxDUTClientIPs is how many client addresses from ClientIP fit in
	// ClientRange beside Gateway (198.18.0.1 to 198.18.0.253).
	MaxDUTClientIPs = 253
)

// ErrDUTConfig is wrapped by DUTChain for a configuration it cannot honour.
var ErrDUTConfig = errors.New("lab: invalid device-under-test configuration")

// DUTConfig configures DUTChain.
type DUTConfig struct {
	// ClientIPs is how many client addresses from ClientIP the client
	// stack uses (1..MaxDUTClientIPs); each gets a permanent neighbour
	// entry on the device. If zero, 1.
	ClientIPs int
	// Port is the server port the ruleset lets new connections open. If
	// zero, 80.
	Port uint16
	// Conns is how many connections the run will hold through the device.
	// DUTChain refuses it when it exceeds nf_conntrack_max, which this
	// kernel keeps global (read-only inside a namespace; the lab does not
	// raise the host's value). The limit applies per namespace: each
	// namespace's own count is held against it.
	Conns int
	// MaxNew, if set, makes the ruleset drop new connections while MaxNew
	// of its connections are tracked (nftables "ct count over"): the
	// device's connection limit.
	MaxNew int
}

// DUT is the device-under-test chain: client stack namespace, a device
// namespace that routes between its two veth ends with a stateful
// nftables ruleset (conntrack), and a server stack namespace.
//
//	Client [Cicada] -- [DevClient 198.18.0.254] Device [DevServer 198.18.1.254] -- [Peer] Server
//
// Cicada and Peer hold no address: the client stack owns ClientIPs
// addresses from ClientIP and uses Gateway as its next hop (the device
// answers its ARP); the server stack owns ServerIP and learns the device's
// MAC from the first frame of the client range. The device has permanent
// neighbour entries for every client address and for ServerIP.
type DUT struct {
	Client, Device, Server *Netns
	Cicada, DevClient      *End
	DevServer, Peer        *End
	// Port is the server port of the ruleset.
	Port uint16
}

// ConntrackMax returns nf_conntrack_max as the namespace sees it.
func (n *Netns) ConntrackMax() (int, error) {
	return n.procInt("/proc/sys/net/netfilter/nf_conntrack_max")
}

func (n *Netns) procInt(path string) (int, error) {
	var v int
	err := n.Do(func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("lab: %s: %w", path, err)
		}
		v, err = strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("lab: %s: %w", path, err)
		}
		return nil
	})
	return v, err
}

// DUTChain builds the device-under-test chain. Forwarding is turned on
// inside the device namespace only (its net.ipv4.ip_forward; the host's
// namespace is not touched), and its forward chain drops by default,
// accepting packets of tracked connections and new TCP connections to
// cfg.Port.
func (l *Lab) DUTChain(cfg DUTConfig) (*DUT, error) {
	if cfg.ClientIPs == 0 {
		cfg.ClientIPs = 1
	}
	if cfg.Port == 0 {
		cfg.Port = 80
	}
	if cfg.ClientIPs < 1 || cfg.ClientIPs > MaxDUTClientIPs || cfg.Conns < 0 || cfg.MaxNew < 0 {
		return nil, fmt.Errorf("%w: ClientIPs %d (1..%d), Conns %d, MaxNew %d", ErrDUTConfig, cfg.ClientIPs, MaxDUTClientIPs, cfg.Conns, cfg.MaxNew)
	}
	c, err := l.Netns("client")
	if err != nil {
		return nil, err
	}
	d, err := l.Netns("dut")
	if err != nil {
		return nil, err
	}
	if max, err := d.ConntrackMax(); err != nil {
		return nil, err
	} else if cfg.Conns > max {
		return nil, fmt.Errorf("%w: %d connections exceed nf_conntrack_max %d (global on this kernel; the lab does not raise it)", ErrDUTConfig, cfg.Conns, max)
	}
	s, err := l.Netns("server")
	if err != nil {
		return nil, err
	}
	t := &DUT{Client: c, Device: d, Server: s, Port: cfg.Port}
	if t.Cicada, t.DevClient, err = l.Veth(c, d); err != nil {
		return nil, err
	}
	if t.DevServer, t.Peer, err = l.Veth(d, s); err != nil {
		return nil, err
	}
	var batch strings.Builder
	fmt.Fprintf(&batch, "addr add %s dev %s\n", DUTClientNet, t.DevClient.Name)
	fmt.Fprintf(&batch, "addr add %s dev %s\n", DUTServerNet, t.DevServer.Name)
	fmt.Fprintf(&batch, "neigh replace %s lladdr %s nud permanent dev %s\n", ServerIP, t.Peer.MAC, t.DevServer.Name)
	first := net.ParseIP(ClientIP).To4()
	for i := range cfg.ClientIPs {
		ip := net.IPv4(first[0], first[1], first[2], first[3]+byte(i))
		fmt.Fprintf(&batch, "neigh replace %s lladdr %s nud permanent dev %s\n", ip, t.Cicada.MAC, t.DevClient.Name)
	}
	if err := d.batch("ip", batch.String()); err != nil {
		return nil, err
	}
	// Veth turned forwarding off per interface; ip_forward turns it on for
	// every interface of this namespace (both are the device's).
	if err := d.Exec("sysctl", "-q", "-w", "net.ipv4.ip_forward=1"); err != nil {
		return nil, err
	}
	limit := ""
	if cfg.MaxNew > 0 {
		limit = fmt.Sprintf("ct state new tcp dport %d ct count over %d counter drop\n\t\t", cfg.Port, cfg.MaxNew)
	}
	rules := fmt.Sprintf(`table inet %s {
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related counter accept
		%sct state new tcp dport %d counter accept
		counter
	}
}
`, DUTTable, limit, cfg.Port)
	if err := d.batch("nft", rules); err != nil {
		return nil, err
	}
	return t, nil
}

// batch runs "name -f file" (nft) or "name -batch file" (ip) inside the
// namespace with script in a temporary file.
func (n *Netns) batch(name, script string) error {
	f, err := os.CreateTemp("", "cicada-lab-*")
	if err != nil {
		return fmt.Errorf("lab: batch file: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(script); err != nil {
		f.Close()
		return fmt.Errorf("lab: batch file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("lab: batch file: %w", err)
	}
	flag := "-batch"
	if name == "nft" {
		flag = "-f"
	}
	return n.Exec(name, flag, f.Name())
}

// Conntrack is a namespace's connection tracking table in numbers.
type Conntrack struct {
	// Total is nf_conntrack_count: every entry, any protocol and state.
	Total int
	// Established counts TCP entries in state ESTABLISHED.
	Established int
	// Other counts the other TCP states by name (SYN_SENT, TIME_WAIT...).
	Other map[string]int
}

// Conntrack reads the namespace's conntrack table: nf_conntrack_count and
// the TCP states of /proc/net/nf_conntrack.
func (n *Netns) Conntrack() (Conntrack, error) {
	ct := Conntrack{Other: map[string]int{}}
	total, err := n.procInt("/proc/sys/net/netfilter/nf_conntrack_count")
	if err != nil {
		return ct, err
	}
	ct.Total = total
	var raw []byte
	err = n.Do(func() error {
		var err error
		raw, err = os.ReadFile("/proc/thread-self/net/nf_conntrack")
		if err != nil {
			return fmt.Errorf("lab: conntrack table: %w", err)
		}
		return nil
	})
	if err != nil {
		return ct, err
	}
	err = parseConntrack(raw, &ct)
	return ct, err
}

// parseConntrack counts the TCP entries of /proc/net/nf_conntrack by state:
// "ipv4 2 tcp 6 <timeout> <STATE> src=...".
func parseConntrack(raw []byte, ct *Conntrack) error {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	var f [6][]byte
	for sc.Scan() {
		if fields(sc.Bytes(), &f) < 6 || string(f[2]) != "tcp" {
			continue
		}
		switch st := f[5]; {
		case string(st) == "ESTABLISHED":
			ct.Established++
		case bytes.IndexByte(st, '=') >= 0:
			return fmt.Errorf("lab: conntrack line without a TCP state: %q", sc.Text())
		default:
			ct.Other[string(st)]++
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("lab: conntrack table: %w", err)
	}
	return nil
}

// fields puts the first len(f) space-separated fields of line in f and
// returns how many it found, without allocating.
func fields(line []byte, f *[6][]byte) int {
	n := 0
	for n < len(f) {
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 {
			break
		}
		end := bytes.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		f[n], line = line[:end], line[end:]
		n++
	}
	return n
}
