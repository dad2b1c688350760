//go:build !unix

package probe

import "time"

// cpuTime is unknown here: the CPU check is skipped.
func cpuTime() (time.Duration, bool) { return 0, false }
