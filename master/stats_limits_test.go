package master

import (
	"fmt"
	"math"
	"testing"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// TestStatsOutOfRangeDropped: a stats report holding a NaN time or a
// negative count is logged with the offending field and dropped (its
// requests never reach the totals); the worker's next report is merged.
func TestStatsOutOfRangeDropped(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w := h.worker("bad_1")
	w.ready(ready("2.12.1"))
	if err := h.m.Start(1, 1, nil); err != nil {
		t.Fatal(err)
	}
	w.expect(protocol.TypeSpawn)
	nan := report(5, 0, map[string]int64{"A": 1})
	nan.Stats[0].StartTime = math.NaN()
	w.send(protocol.TypeStats, nan)
	neg := report(7, 0, map[string]int64{"A": 1})
	neg.Total.NumRequests = -1
	w.send(protocol.TypeStats, neg)
	w.send(protocol.TypeStats, report(3, 0, map[string]int64{"A": 1}))
	eventually(t, waitShort, "the valid report merged", func() bool { return h.m.Snapshot().Total.NumRequests == 3 })
	for _, want := range []string{"stats[0].start_time: NaN is not a finite number >= 0", "stats_total.num_requests: -1 is negative"} {
		eventually(t, waitShort, want, func() bool { return logs.has(want) })
	}
	if n := h.m.Snapshot().Total.NumRequests; n != 3 {
		t.Errorf("Total.NumRequests = %d; want 3 (the refused reports dropped)", n)
	}
}

// TestStatsNamesCapped: a report of more distinct names than the cap makes
// the master keep stats.DefaultMaxEntries entries plus the folded one, with
// one warning in the master's log.
func TestStatsNamesCapped(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w := h.worker("many_1")
	w.ready(ready("2.12.1"))
	if err := h.m.Start(1, 1, nil); err != nil {
		t.Fatal(err)
	}
	w.expect(protocol.TypeSpawn)
	const n = stats.DefaultMaxEntries + 5
	r := report(1, 0, map[string]int64{"A": 1})
	one := r.Stats[0]
	r.Stats = r.Stats[:0]
	for i := range n {
		e := one
		e.Name = fmt.Sprintf("/item/%d", i)
		r.Stats = append(r.Stats, e)
	}
	r.Total.NumRequests = n
	w.send(protocol.TypeStats, r)
	w.send(protocol.TypeStats, r)
	eventually(t, waitShort, "both reports merged", func() bool { return h.m.Snapshot().Total.NumRequests == 2*n })
	snap := h.m.Snapshot()
	if got, want := len(snap.Entries), stats.DefaultMaxEntries+1; got != want {
		t.Errorf("%d entries; want %d", got, want)
	}
	if got := logs.count("distinct request names"); got != 1 {
		t.Errorf("%d warnings about names; want 1", got)
	}
}
