//go:build linux

package lab

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn on a thread that has entered the namespace. Sockets fn
// creates (an AF_PACKET link, a dialled connection) stay in the namespace
// afterwards, whichever goroutine uses them. If the thread cannot return
// to its namespace it is left locked, so the runtime ends it.
func (n *Netns) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("lab: own namespace: %w", err)
			return
		}
		defer unix.Close(self)
		target, err := unix.Open("/run/netns/"+n.Name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("lab: namespace %s: %w", n.Name, err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("lab: enter %s: %w", n.Name, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("lab: leave %s: %w", n.Name, err)
			return // the thread stays locked and dies with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
