package worker

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/timespan"
	"github.com/cicada-load/cicada/protocol"
)

// TestSpawnStopTimeoutBounds checks that a master's stop_timeout is
// converted without wrapping (issue 20 item 10): 1e300 s and +Inf used to
// become a negative grace, so users were stopped at once.
func TestSpawnStopTimeoutBounds(t *testing.T) {
	t.Parallel()
	m, rw := startRegistered(t, 1)
	id := rw.w.NodeID()
	grace := func() time.Duration {
		rw.w.mu.Lock()
		defer rw.w.mu.Unlock()
		return rw.w.mu.stopTimeout
	}
	tests := []struct {
		in   *float64
		want time.Duration
	}{
		{f64(2.5), 2500 * time.Millisecond},
		{f64(1e300), timespan.Max},
		{f64(math.Inf(1)), timespan.Max},
		{f64(9223372037), timespan.Max},
		{f64(-1), rw.w.opts.StopTimeout},
		{nil, rw.w.opts.StopTimeout},
	}
	for i, tt := range tests {
		m.send(id, protocol.TypeSpawn, spawnMsg(float64(i+1), map[string]int64{"A": 0, "B": 0}, tt.in))
		m.await(protocol.TypeSpawningComplete, i+1, 10*time.Second)
		if got := grace(); got != tt.want {
			in := "nil"
			if tt.in != nil {
				in = fmt.Sprint(*tt.in)
			}
			t.Errorf("spawn stop_timeout %s: grace = %v; want %v", in, got, tt.want)
		}
	}
}
