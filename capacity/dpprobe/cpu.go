package dpprobe

import (
	"fmt"
	"time"
)

// cpuLimit names the generator limit when the process used more than
// CPUBusy of one core since start (the trial polls on one goroutine).
func (p *Prober) cpuLimit(cpu0 time.Duration, ok bool, start time.Time) string {
	now, ok2 := cpuTime()
	wall := time.Since(start)
	if !ok || !ok2 || wall <= 0 {
		return ""
	}
	if busy := float64(now-cpu0) / float64(wall); busy > p.o.CPUBusy {
		return fmt.Sprintf("CPU saturated: the process used %.0f%% of a core (the polling loop's limit %.0f%%)", busy*100, p.o.CPUBusy*100)
	}
	return ""
}
