//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package worker

import (
	"runtime"
	"time"
)

// processCPUTime is not available on this platform.
func processCPUTime() (time.Duration, bool) { return 0, false }

// processRSS returns the memory the Go runtime obtained from the OS.
func processRSS() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}
