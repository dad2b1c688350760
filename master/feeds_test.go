package master

import (
	"fmt"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

func feedTake(w *fakeWorker, feed, digest string, rows, n int64, recycle bool) map[string]any {
	w.t.Helper()
	w.send(protocol.TypeCicadaFeedTake, &protocol.Custom{Data: map[string]any{
		"feed": feed, "digest": digest, "rows": rows, "n": n, "recycle": recycle}})
	m := w.expect(protocol.TypeCicadaFeedRows)
	return m.Data.(*protocol.Custom).Data.(map[string]any)
}

// TestFeedTake: the master hands out consecutive row ranges of a unique
// feed to its workers, says when it is exhausted (or starts over with
// recycle), and refuses a worker whose file differs.
func TestFeedTake(t *testing.T) {
	logs := &logBuf{}
	h := startMaster(t, testOptions(logs), logs)
	a, b := h.worker("a"), h.worker("b")
	a.ready(ready("2.12.1"))
	b.ready(ready("2.12.1"))
	for i, tc := range []struct {
		w            *fakeWorker
		feed, digest string
		rows, n      int64
		recycle      bool
		start, count int64
		err          string
	}{
		{w: a, feed: "ids", digest: "d1", rows: 100, n: 64, start: 0, count: 64},
		{w: b, feed: "ids", digest: "d1", rows: 100, n: 64, start: 64, count: 36},
		{w: a, feed: "ids", digest: "d1", rows: 100, n: 64, start: 100, count: 0},
		{w: b, feed: "ids", digest: "d1", rows: 100, n: 64, recycle: true, start: 0, count: 64},
		{w: a, feed: "ids", digest: "d2", rows: 100, n: 64, err: "differs"},
		{w: a, feed: "ids", digest: "d1", rows: 99, n: 64, err: "differs"},
		{w: a, feed: "other", digest: "x", rows: 3, n: 64, start: 0, count: 3},
		{w: a, feed: "other", digest: "x", rows: 3, n: 0, err: "bad feed request"},
		{w: a, feed: "other", digest: "x", rows: 3, n: protocol.MaxFeedBatch + 1, err: "bad feed request"},
		{w: a, feed: "", digest: "x", rows: 3, n: 1, err: "bad feed request"},
	} {
		got := feedTake(tc.w, tc.feed, tc.digest, tc.rows, tc.n, tc.recycle)
		if tc.err != "" {
			if e, _ := got["error"].(string); !contains(e, tc.err) {
				t.Errorf("%d: answer %v; want an error with %q", i, got, tc.err)
			}
			continue
		}
		if asInt64(got["start"]) != tc.start || asInt64(got["count"]) != tc.count || got["feed"] != tc.feed {
			t.Errorf("%d: answer %v; want start %d count %d", i, got, tc.start, tc.count)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// BenchmarkFeedTake measures the master's hand-out of unique rows in
// batches of 64 (FeedBatch): one request in flight (what one worker does
// for one feed), and 64 (many workers asking at once). rows/s is the
// figure to report; the master's loop serves a round every PollInterval.
func BenchmarkFeedTake(b *testing.B) {
	for _, inFlight := range []int{1, 64} {
		b.Run(fmt.Sprintf("in_flight=%d", inFlight), func(b *testing.B) {
			logs := &logBuf{}
			h := startMaster(b, testOptions(logs), logs)
			w := h.worker("bench")
			w.ready(ready("2.12.1"))
			const batch = 64
			req := &protocol.Custom{Data: map[string]any{"feed": "ids", "digest": "d", "rows": int64(1) << 40, "n": int64(batch), "recycle": true}}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			sent, got := 0, 0
			for got < b.N {
				for sent < b.N && sent-got < inFlight {
					w.send(protocol.TypeCicadaFeedTake, req)
					sent++
				}
				w.expect(protocol.TypeCicadaFeedRows)
				got++
			}
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "rows/s")
		})
	}
}
