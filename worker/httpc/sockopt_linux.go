//go:build linux

package httpc

import "syscall"

// ipBindAddressNoPort is IP_BIND_ADDRESS_NO_PORT (linux/in.h), missing
// from package syscall.
const ipBindAddressNoPort = 24

// bindNoPort is the net.Dialer Control used with a LocalAddr of port 0: the
// kernel then picks the local port at connect time, for the full 4-tuple,
// instead of reserving one at bind time. Without it every source IP is
// limited to one local port range for all destinations together. Failure
// to set the option is ignored (the dial still works, with the old limit).
func bindNoPort(network, address string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
	})
}
