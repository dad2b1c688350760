//go:build linux || darwin || freebsd || netbsd || openbsd

package worker

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// processCPUTime returns the user plus system CPU time of this process.
func processCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// processRSS returns the resident set size of this process in bytes, read
// from /proc/self/statm on Linux. Elsewhere it falls back to the memory the
// Go runtime obtained from the OS.
func processRSS() int64 {
	if runtime.GOOS == "linux" {
		if b, err := os.ReadFile("/proc/self/statm"); err == nil {
			if f := bytes.Fields(b); len(f) >= 2 {
				if pages, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
					return pages * int64(os.Getpagesize())
				}
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}
