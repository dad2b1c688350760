//go:build race

package protocol

// raceEnabled: under the race detector sync.Pool drops items on purpose, so
// allocation counts are not meaningful.
const raceEnabled = true
