//go:build !linux

package probe

import "time"

func runDelay() (time.Duration, bool) { return 0, false }
