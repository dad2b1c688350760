package dpprobe

import (
	"fmt"
	"slices"

	"github.com/cicada-load/cicada/capacity"
)

// Tests are the names of the capacity tests a Prober runs (probe.Tests'
// names less "latency").
var Tests = []string{"concurrent", "cps", "teardown", "tps", "throughput"}

// Runs reports whether a Prober runs the test named name.
func Runs(name string) bool { return slices.Contains(Tests, name) }

// TrialFunc returns the trial of the test named name (one of Tests);
// objectSize is the throughput test's object size in bytes. Another name
// is refused with ErrOptions.
func (p *Prober) TrialFunc(name string, objectSize int) (capacity.TrialFunc, error) {
	if f, ok := capacity.TrialOf(p, name, objectSize); ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w: test %q does not run on the data plane (one of %v)", ErrOptions, name, Tests)
}
