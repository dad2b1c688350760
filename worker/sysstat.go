package worker

import (
	"sync"
	"time"
)

// cpuSampler computes the process CPU usage in percent since its previous
// sample, like psutil's Process.cpu_percent() that Python workers report: the
// sum of user and system time over wall time, so it may exceed 100 on a
// multi-core machine. Safe for concurrent use.
type cpuSampler struct {
	mu       sync.Mutex
	lastWall time.Time
	lastCPU  time.Duration
}

// sample returns the CPU percent since the previous call (0 on the first).
func (s *cpuSampler) sample(now time.Time) float64 {
	cpu, ok := processCPUTime()
	if !ok {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prevWall, prevCPU := s.lastWall, s.lastCPU
	s.lastWall, s.lastCPU = now, cpu
	if prevWall.IsZero() {
		return 0
	}
	wall := now.Sub(prevWall)
	if wall <= 0 {
		return 0
	}
	pct := float64(cpu-prevCPU) / float64(wall) * 100
	if pct < 0 {
		return 0
	}
	return pct
}
