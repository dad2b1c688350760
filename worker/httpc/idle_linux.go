//go:build linux && (amd64 || arm64)

package httpc

import (
	"syscall"
	"unsafe"
)

// Peek results of the idle-connection check.
const (
	peekAlive int8 = iota
	peekDead
)

// idleAlive reports whether the idle keep-alive connection can be reused:
// a non-blocking MSG_PEEK of one byte must find nothing to read. EOF (the
// server closed it), an error (it reset it), or unexpected bytes (such as
// a 408 sent before closing) all mean a new connection is needed. It costs
// one system call and does not allocate.
func (c *Client) idleAlive() bool {
	if c.raw == nil {
		return true
	}
	if c.peekFn == nil {
		c.peekFn = c.peek
	}
	c.peekState = peekAlive
	if err := c.raw.Read(c.peekFn); err != nil {
		return false
	}
	return c.peekState == peekAlive
}

// peek runs inside RawConn.Read. It always returns true: it must never
// wait for readability.
func (c *Client) peek(fd uintptr) bool {
	var b [1]byte
	_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if errno == syscall.EAGAIN || errno == syscall.EINTR {
		c.peekState = peekAlive
	} else {
		// EOF (n == 0), an error, or data on an idle HTTP/1.1 connection.
		c.peekState = peekDead
	}
	return true
}
