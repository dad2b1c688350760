//go:build !linux

package stats

func threadCPU() int64 { return 0 }
