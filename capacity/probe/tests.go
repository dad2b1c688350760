package probe

import (
	"context"
	"fmt"
	"slices"

	"github.com/cicada-load/cicada/capacity"
)

// Test describes one benchmark of `cicada bench`: its report's title, the
// RFC sections it follows, its load's unit and its search's defaults.
type Test struct {
	Name, Title, RFC, Unit string
	// Integer: the load is a whole number (connections).
	Integer bool
	// Start and Max are the search's default range.
	Start, Max float64
	// MinAchieved is the default fraction of the offered load a trial
	// must achieve (0 for the concurrent test, whose Achieved is exact).
	MinAchieved float64
}

// Tests are the benchmarks, by name. "latency" runs the search of another
// rate test (cps or tps) and then one trial at a fraction of its maximum.
var Tests = []Test{
	{"concurrent", "Concurrent TCP connection capacity", "RFC 3511 5.2, RFC 9411 7.5", "connections", true, 100, 1_000_000, 0},
	{"cps", "Maximum TCP connection establishment rate", "RFC 3511 5.3, RFC 9411 7.2", "connections/s", false, 100, 1_000_000, 0.95},
	{"teardown", "Maximum TCP connection tear down rate", "RFC 3511 5.4", "connections/s", false, 100, 1_000_000, 0.95},
	{"tps", "Maximum HTTP transaction rate", "RFC 3511 5.7", "transactions/s", false, 100, 1_000_000, 0.95},
	{"throughput", "HTTP throughput", "RFC 3511 5.6, RFC 9411 7.3", "Mbit/s", false, 10, 100_000, 0.95},
	{"latency", "HTTP transaction latency", "RFC 3511 5.10, RFC 9411 7.4", "", false, 0, 0, 0},
}

// LookupTest returns the test named name.
func LookupTest(name string) (Test, error) {
	i := slices.IndexFunc(Tests, func(t Test) bool { return t.Name == name })
	if i < 0 {
		names := make([]string, len(Tests))
		for k, t := range Tests {
			names[k] = t.Name
		}
		return Test{}, fmt.Errorf("%w: unknown test %q (one of %v)", ErrOptions, name, names)
	}
	return Tests[i], nil
}

// TrialFunc returns the trial of the test named name (not "latency");
// objectSize is the throughput test's object size in bytes.
func (p *Prober) TrialFunc(name string, objectSize int) (capacity.TrialFunc, error) {
	switch {
	case len(p.o.Mix) > 0 && name != "tps" && name != "throughput":
		return nil, fmt.Errorf("%w: a traffic mix is for tps and throughput, not %s", ErrOptions, name)
	case p.o.TLS != nil && name == "teardown":
		return nil, fmt.Errorf("%w: teardown is not run over TLS (its FIN-then-wait close is a TCP measurement)", ErrOptions)
	}
	switch name {
	case "concurrent":
		return p.Concurrent, nil
	case "cps":
		return p.CPS, nil
	case "teardown":
		return p.Teardown, nil
	case "tps":
		return p.TPS, nil
	case "throughput":
		return func(ctx context.Context, mbps float64) (capacity.Trial, error) {
			return p.Throughput(ctx, mbps, objectSize)
		}, nil
	}
	return nil, fmt.Errorf("%w: no trial for test %q", ErrOptions, name)
}
