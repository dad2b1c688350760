package capacity

import (
	"context"
	"testing"
)

// fakeTrials answers each trial with its name in Trial.GeneratorLimit and
// the load in Load, the object size in Attempted.
type fakeTrials struct{}

func (fakeTrials) trial(name string, load float64, size int) (Trial, error) {
	return Trial{GeneratorLimit: name, Load: load, Attempted: int64(size)}, nil
}
func (f fakeTrials) Concurrent(_ context.Context, l float64) (Trial, error) {
	return f.trial("concurrent", l, 0)
}
func (f fakeTrials) CPS(_ context.Context, r float64) (Trial, error) { return f.trial("cps", r, 0) }
func (f fakeTrials) Teardown(_ context.Context, r float64) (Trial, error) {
	return f.trial("teardown", r, 0)
}
func (f fakeTrials) TPS(_ context.Context, r float64) (Trial, error) { return f.trial("tps", r, 0) }
func (f fakeTrials) Throughput(_ context.Context, m float64, size int) (Trial, error) {
	return f.trial("throughput", m, size)
}

// TrialOf maps each test's name to its method (the throughput's object
// size passed through) and refuses other names.
func TestTrialOf(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
		size int64
	}{
		{"concurrent", true, 0}, {"cps", true, 0}, {"teardown", true, 0}, {"tps", true, 0}, {"throughput", true, 4096},
		{"latency", false, 0}, {"", false, 0}, {"TPS", false, 0},
	} {
		f, ok := TrialOf(fakeTrials{}, c.name, 4096)
		if ok != c.ok || (f != nil) != c.ok {
			t.Fatalf("TrialOf(%q) = %v, %v; want ok %v", c.name, f != nil, ok, c.ok)
		}
		if !ok {
			continue
		}
		tr, err := f(context.Background(), 7)
		if err != nil || tr.GeneratorLimit != c.name || tr.Load != 7 || tr.Attempted != c.size {
			t.Fatalf("TrialOf(%q) ran %+v, %v", c.name, tr, err)
		}
	}
}
