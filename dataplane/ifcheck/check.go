package ifcheck

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Errors wrapped by Check.
var (
	// ErrUnsafe: the interface carries the namespace's own traffic or the
	// kernel owns addresses the stack answers for. Options.Dedicated
	// overrides it (the command line's --dataplane-dedicated).
	ErrUnsafe = errors.New("ifcheck: interface unsafe for the data plane")
	// ErrInterface: the interface is missing, down, a loopback, or its
	// name is not a valid interface name. Nothing overrides it.
	ErrInterface = errors.New("ifcheck: interface unusable")
	// ErrUnsupported: Check cannot inspect interfaces on this system.
	ErrUnsupported = errors.New("ifcheck: unsupported on this system")
)

// DedicatedFlag is the command-line option that sets Options.Dedicated;
// refusals name it as the fix.
const DedicatedFlag = "--dataplane-dedicated"

// Options says what to check.
type Options struct {
	// Interface is the interface's name; required.
	Interface string
	// Owned is the addresses the userspace stack answers for (ARP, TCP):
	// a worker's client range, a target's server address; required.
	Owned Range
	// What names Owned in messages ("client range", "server address"). If
	// empty, "client range".
	What string
	// Dedicated says the interface is dedicated to the test: refusals
	// become warnings.
	Dedicated bool
}

// state is what Check reads from the kernel about the interface and the
// namespace.
type state struct {
	exists, up, loopback bool
	// default4 and default6: a default route of the namespace leaves by
	// the interface.
	default4, default6 bool
	// addrs are the interface's own IPv4 addresses.
	addrs []netip.Prefix
	// local are the destinations of the namespace's local routes (any
	// table, any interface), and localDev the interface of each.
	local    []netip.Prefix
	localDev []string
	// forward4 and forward6: forwarding is on for the interface.
	forward4, forward6 bool
	// offloads names the offloads that are on ("tx-checksumming", ...).
	offloads []string
}

// validName reports whether name can be a Linux interface name: 1-15
// bytes, no '/', no white space, not "." or "..".
func validName(name string) bool {
	if name == "" || len(name) > 15 || name == "." || name == ".." {
		return false
	}
	for _, c := range []byte(name) {
		if c == '/' || c == ':' || c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// checkOptions refuses Options Check cannot act on.
func checkOptions(o Options) error {
	if !validName(o.Interface) {
		return fmt.Errorf("ifcheck: interface name %q: %w", o.Interface, ErrInterface)
	}
	if !o.Owned.Valid() {
		return fmt.Errorf("ifcheck: no valid IPv4 range of owned addresses (%v, %d): %w", o.Owned.First, o.Owned.Count, ErrRange)
	}
	return nil
}

// evaluate is Check's decision on a state read from the kernel.
func evaluate(o Options, s state) (warnings []string, err error) {
	what := o.What
	if what == "" {
		what = "client range"
	}
	name := o.Interface
	switch {
	case !s.exists:
		return nil, fmt.Errorf("ifcheck: no interface %q in this network namespace: %w", name, ErrInterface)
	case s.loopback:
		return nil, fmt.Errorf("ifcheck: %s is a loopback interface; the data plane needs an Ethernet interface (a veth, a NIC): %w", name, ErrInterface)
	case !s.up:
		return nil, fmt.Errorf("ifcheck: %s is down (ip link set %s up): %w", name, name, ErrInterface)
	}
	var unsafe []string
	if s.default4 || s.default6 {
		fam := map[[2]bool]string{{true, false}: "IPv4", {false, true}: "IPv6", {true, true}: "IPv4 and IPv6"}[[2]bool{s.default4, s.default6}]
		unsafe = append(unsafe, fmt.Sprintf("%s carries this namespace's %s default route: the load would share the host's own uplink", name, fam))
	}
	for _, a := range s.addrs {
		if o.Owned.Contains(a.Addr()) {
			unsafe = append(unsafe, fmt.Sprintf("%s holds %s, inside the %s %s", name, a.Addr(), what, o.Owned))
		}
	}
	for i, p := range s.local {
		if o.Owned.Overlaps(p) {
			dev := ""
			if i < len(s.localDev) && s.localDev[i] != "" {
				dev = " (dev " + s.localDev[i] + ")"
			}
			unsafe = append(unsafe, fmt.Sprintf("the kernel has a local route for %s%s, inside the %s %s: it would answer for those addresses and reset the stack's connections (the RST trap)", p, dev, what, o.Owned))
		}
	}
	if s.forward4 {
		warnings = append(warnings, fmt.Sprintf("IPv4 forwarding is on for %s: the kernel may forward frames the stack receives (sysctl -w net.ipv4.conf.%s.forwarding=0)", name, name))
	}
	if s.forward6 {
		warnings = append(warnings, fmt.Sprintf("IPv6 forwarding is on for %s (sysctl -w net.ipv6.conf.%s.forwarding=0)", name, name))
	}
	if len(s.offloads) > 0 {
		warnings = append(warnings, fmt.Sprintf("offloads on for %s: %s: the kernel's frames may reach the stack with partial checksums or above the MTU (ethtool -K %s tx off tso off gso off gro off)", name, strings.Join(s.offloads, ", "), name))
	}
	if len(unsafe) == 0 {
		return warnings, nil
	}
	if o.Dedicated {
		for _, u := range unsafe {
			warnings = append(warnings, u+" (allowed by "+DedicatedFlag+")")
		}
		return warnings, nil
	}
	return warnings, fmt.Errorf("ifcheck: %s; if %s is dedicated to the test, pass %s: %w", strings.Join(unsafe, "; "), name, DedicatedFlag, ErrUnsafe)
}

// Check reads the interface's state in the calling thread's network
// namespace and decides: a nil error with possibly some warnings to log,
// or an error wrapping ErrInterface, ErrUnsafe, ErrRange or ErrUnsupported.
// It only reads: nothing of the system is changed.
func Check(o Options) (warnings []string, err error) {
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	s, err := read(o.Interface)
	if err != nil {
		return nil, err
	}
	return evaluate(o, s)
}
