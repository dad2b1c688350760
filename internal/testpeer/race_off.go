//go:build !race

package testpeer

// RaceEnabled reports whether the binary runs under the race detector,
// where sync.Pool drops items on purpose and allocation and timing bounds
// do not hold.
const RaceEnabled = false
