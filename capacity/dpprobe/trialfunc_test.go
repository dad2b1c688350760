package dpprobe

import (
	"errors"
	"testing"
)

// TrialFunc gives a trial for each of Tests and refuses any other name.
func TestTrialFunc(t *testing.T) {
	p := &Prober{}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"concurrent", true}, {"cps", true}, {"teardown", true}, {"tps", true}, {"throughput", true},
		{"latency", false}, {"", false}, {"CPS", false},
	} {
		f, err := p.TrialFunc(c.name, 1024)
		if c.ok != (err == nil) || c.ok != (f != nil) || c.ok != Runs(c.name) {
			t.Errorf("TrialFunc(%q) = %v, %v; Runs = %v; want ok %v", c.name, f != nil, err, Runs(c.name), c.ok)
		}
		if !c.ok && !errors.Is(err, ErrOptions) {
			t.Errorf("TrialFunc(%q) error %v; want ErrOptions", c.name, err)
		}
	}
}
