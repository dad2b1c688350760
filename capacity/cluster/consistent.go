package cluster

import (
	"fmt"

	"github.com/cicada-load/cicada/capacity"
)

// consistent checks that a worker's achieved load is one its own counts
// allow: a rate (cps, tps, teardown) at most its attempts over its
// duration, a throughput at most its bytes over its duration, concurrent
// connections at most its attempts. Both kernel (capacity/probe) and data
// plane (capacity/dpprobe) trials compute Achieved from successes that
// are part of Attempted (or Bytes), over Duration. A result beyond that
// (a bug, a unit mix-up, a hostile worker) would pass trials the device
// never sustained: the worker is lost instead. The check allows a part in
// a million for rounding.
func consistent(test string, t capacity.Trial) error {
	if t.Achieved == 0 {
		return nil
	}
	const slack = 1 + 1e-6
	secs := t.Duration.Seconds()
	var bound float64
	var unit string
	switch test {
	case "concurrent":
		bound, unit = float64(t.Attempted), "connections attempted"
	case "throughput":
		bound, unit = float64(t.Bytes)*8/1e6/secs, "Mbit/s of the bytes received over the duration"
	default:
		bound, unit = float64(t.Attempted)/secs, "attempts per second of the duration"
	}
	if test != "concurrent" && secs <= 0 {
		return fmt.Errorf("%w: %s: achieved %v over a duration of %v", ErrMessage, TypeResult, t.Achieved, t.Duration)
	}
	if t.Achieved > bound*slack {
		return fmt.Errorf("%w: %s: achieved %v is more than the %v %s", ErrMessage, TypeResult, t.Achieved, bound, unit)
	}
	return nil
}
