package diag

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// CheckSourceIPs checks that this host owns every address (a bind to it
// works). The error names the first address that fails and the fix.
func CheckSourceIPs(ips []netip.Addr) error {
	for _, a := range ips {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, 0)))
		if err != nil {
			if errors.Is(err, syscall.EADDRNOTAVAIL) {
				return fmt.Errorf("%w: %s is not an address of this host (bind: %w); add it to an interface "+
					"(ip addr add %s/32 dev lo) or fix the range", ErrSourceIPs, a, syscall.EADDRNOTAVAIL, a)
			}
			return fmt.Errorf("%w: %s cannot be bound: %w", ErrSourceIPs, a, err)
		}
		c.Close()
	}
	return nil
}
