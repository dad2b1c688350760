//go:build linux

package ifcheck

import (
	"fmt"
	"os"
)

func memAvailable() (uint64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("ifcheck: %w", err)
	}
	return parseMemAvailable(b)
}
