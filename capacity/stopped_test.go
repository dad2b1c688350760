package capacity

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A search stopped mid-way (SIGINT, a trial that cannot run) reports what
// passed before, never "no load passed" after a pass.
func TestSearchStoppedReportsWhatRan(t *testing.T) {
	errBroken := errors.New("broken")
	for _, tt := range []struct {
		name    string
		stopAt  int // the trial (from 1) that ends the search
		cancel  bool
		max     float64
		outcome string
		summary string
		wantErr error
		nTrials int
	}{
		{"SIGINT after a pass", 2, true, 10, "stopped", "STOPPED before the search ended (capacity: trial at 20: context canceled); the device sustained 10 units", context.Canceled, 1},
		{"SIGINT at once", 1, true, 0, "stopped", "STOPPED before any load passed", context.Canceled, 0},
		{"a trial error after two passes", 3, false, 20, "stopped", "its maximum is at least that, not found", errBroken, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			trial := func(ctx context.Context, load float64) (Trial, error) {
				n++
				if n == tt.stopAt {
					if tt.cancel {
						cancel()
						return Trial{}, ctx.Err()
					}
					return Trial{}, errBroken
				}
				return Trial{Attempted: 10, Achieved: load, Duration: 1e9}, nil
			}
			r, err := Search{Start: 10, Max: 1000}.Run(ctx, trial)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v; want %v", err, tt.wantErr)
			}
			if len(r.Trials) != tt.nTrials || r.Max != tt.max || r.Found || r.Outcome() != tt.outcome || !strings.Contains(r.Summary("units"), tt.summary) {
				t.Fatalf("result %d trials, max %v, found %v, %s: %s", len(r.Trials), r.Max, r.Found, r.Outcome(), r.Summary("units"))
			}
		})
	}
}
