//go:build linux

// Thin wrappers over the system calls of the Router's Linux data path
// (poll_linux.go is the poller loop, poll_conn_linux.go a connection's
// reads, parsing and writes). They hold no state.

package zmtp

import (
	"syscall"
)

// setKey stores the poller's key k of a connection in ev's user data.
func setKey(ev *syscall.EpollEvent, k uint64) {
	ev.Fd = int32(uint32(k))
	ev.Pad = int32(uint32(k >> 32))
}

// eventKey is the key setKey stored in ev.
func eventKey(ev *syscall.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// dupCloexec duplicates descriptor s (close-on-exec); the duplicate shares
// the open file description, and so O_NONBLOCK.
func dupCloexec(s uintptr) (int, error) {
	r1, _, e := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
	if e != 0 {
		return -1, e
	}
	return int(r1), nil
}

// readRetry is read(2), retried on EINTR.
func readRetry(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, b)
		if err != syscall.EINTR {
			return n, err
		}
	}
}
