package stats

import "syscall"

// threadCPU returns the CPU time consumed by the calling OS thread, for
// benchmarks on a machine shared with other work (wall time is then not the
// cost). The caller locks its goroutine to the thread.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
