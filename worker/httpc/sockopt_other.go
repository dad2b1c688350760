//go:build !linux

package httpc

import "syscall"

// bindNoPort does nothing outside Linux.
func bindNoPort(network, address string, c syscall.RawConn) error { return nil }
