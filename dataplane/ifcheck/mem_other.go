//go:build !linux

package ifcheck

func memAvailable() (uint64, error) { return 0, ErrUnsupported }
