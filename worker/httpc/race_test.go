//go:build race

package httpc

const raceEnabled = true
