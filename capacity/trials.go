package capacity

import "context"

// Trials are a generator's trials, one per test (capacity/probe's kernel
// Prober, capacity/dpprobe's data-plane one).
type Trials interface {
	Concurrent(ctx context.Context, load float64) (Trial, error)
	CPS(ctx context.Context, rate float64) (Trial, error)
	Teardown(ctx context.Context, rate float64) (Trial, error)
	TPS(ctx context.Context, rate float64) (Trial, error)
	Throughput(ctx context.Context, mbps float64, objectSize int) (Trial, error)
}

// TrialOf returns p's trial of the test named name, "concurrent", "cps",
// "teardown", "tps" or "throughput" (of objects of objectSize bytes), and
// false for another name: the caller names the error.
func TrialOf(p Trials, name string, objectSize int) (TrialFunc, bool) {
	switch name {
	case "concurrent":
		return p.Concurrent, true
	case "cps":
		return p.CPS, true
	case "teardown":
		return p.Teardown, true
	case "tps":
		return p.TPS, true
	case "throughput":
		return func(ctx context.Context, mbps float64) (Trial, error) { return p.Throughput(ctx, mbps, objectSize) }, true
	}
	return nil, false
}
