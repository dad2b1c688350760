package dpprobe

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A cluster worker's hooks: KeepSamples ships every sample the percentiles
// come from (concurrent: each connection's GET and its second round's); Held is called
// once the connections are open, with the stack still polled (the second
// round then answers on every one), and its error ends the trial.
func TestClusterHooks(t *testing.T) {
	var calls int
	var fail error
	p := pipeProber(t, Options{Duration: 300 * time.Millisecond, LagTolerance: time.Second, KeepSamples: true,
		Held: func(ctx context.Context) error {
			calls++
			tm := time.NewTimer(200 * time.Millisecond) // the stack is polled meanwhile
			defer tm.Stop()
			select {
			case <-tm.C:
			case <-ctx.Done():
			}
			return fail
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := p.Concurrent(ctx, 40)
	if err != nil || calls != 1 || tr.Achieved != 40 || tr.SecondRoundFailed != 0 || len(tr.Samples) != 80 || tr.Samples[79] != tr.Max {
		t.Fatalf("Concurrent %+v, %v; %d Held calls", tr, err, calls)
	}
	tr, err = p.CPS(ctx, 100)
	if err != nil || calls != 1 || int64(len(tr.Samples)) != tr.Attempted {
		t.Fatalf("CPS %d samples of %d, %v; Held calls %d", len(tr.Samples), tr.Attempted, err, calls)
	}
	fail = errors.New("aborted")
	if _, err := p.Concurrent(ctx, 40); !errors.Is(err, fail) || calls != 2 {
		t.Fatalf("Concurrent with a failing barrier: %v, %d calls", err, calls)
	}
	// The aborted trial's connections were stopped: the next one opens
	// as many again.
	fail = nil
	if tr, err := p.Concurrent(ctx, 40); err != nil || tr.Achieved != 40 {
		t.Fatalf("after the abort %+v, %v", tr, err)
	}
}
