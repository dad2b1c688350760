package probe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
)

// The CPU and pacing checks are strains: they name themselves in
// GeneratorStrain, not GeneratorLimit, and a trial that met its criteria
// passes with them; the CPU is reported before the pacer (its symptom).
func TestStrainsDoNotVoidPasses(t *testing.T) {
	addr := startTarget(t)
	for _, tt := range []struct {
		name string
		o    func(o *Options)
		want string
	}{
		// Every arrival is more than 1 ns late.
		{"pacing", func(o *Options) { o.LagTolerance, o.LateRatio = time.Nanosecond, 1e-9 }, "pacing: "},
		// Any CPU use is over a millionth of the cores.
		{"cpu", func(o *Options) { o.CPUBusy, o.LagTolerance, o.LateRatio = 1e-6, time.Nanosecond, 1e-9 }, "CPU "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := loose(addr)
			tt.o(&o)
			p, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tr, err := p.TPS(ctx, 400)
			if err != nil {
				t.Fatal(err)
			}
			if tr.GeneratorLimit != "" || !strings.HasPrefix(tr.GeneratorStrain, tt.want) {
				t.Fatalf("limit %q strain %q; want a strain starting %q", tr.GeneratorLimit, tr.GeneratorStrain, tt.want)
			}
			tr.Load = 400
			capacity.Criteria{}.Judge(&tr)
			if tr.Verdict != capacity.Pass || !strings.Contains(tr.Reason, "passed with the generator strained: "+tt.want) {
				t.Fatalf("verdict %v %q; want a strained pass", tr.Verdict, tr.Reason)
			}
			tr.Failed, tr.Verdict, tr.Reason = 1, 0, ""
			capacity.Criteria{}.Judge(&tr)
			if tr.Verdict != capacity.Invalid || !strings.HasPrefix(tr.Reason, "generator limit: "+tt.want) {
				t.Fatalf("with a failure: verdict %v %q; want invalid", tr.Verdict, tr.Reason)
			}
		})
	}
}

// runDelay reads the threads' run delay where the kernel keeps it (Linux
// with schedstats; this machine's) and never goes backwards.
func TestRunDelay(t *testing.T) {
	d0, ok := runDelay()
	if !ok {
		t.Skip("no /proc/self/task/*/schedstat here")
	}
	end := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(end) { // a little CPU, bounded
	}
	if d1, ok := runDelay(); !ok || d1 < d0 {
		t.Fatalf("run delay went from %v to %v (%v)", d0, d1, ok)
	}
}
