//go:build linux

package probe

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// runDelay is the time the process's threads spent runnable but waiting
// for a CPU (the second field of /proc/self/task/*/schedstat, summed): on
// a host whose other load takes the cores, the generator waits there
// instead of running, and its own CPU time alone does not show it. ok is
// false when the kernel does not keep it.
func runDelay() (time.Duration, bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, false
	}
	var sum int64
	var buf [128]byte
	for _, t := range tasks {
		f, err := os.Open("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		n, _ := f.Read(buf[:])
		_ = f.Close()
		fields := bytes.Fields(buf[:n])
		if len(fields) < 2 {
			return 0, false
		}
		v, err := strconv.ParseInt(string(fields[1]), 10, 64)
		if err != nil {
			return 0, false
		}
		sum += v
	}
	return time.Duration(sum), true
}
