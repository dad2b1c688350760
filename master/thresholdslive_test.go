package master

import (
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/thresholds"
)

// The periodic console output of a headless run shows every threshold's
// live state under the tables, and LiveThresholds serves the same.
func TestThresholdsLiveConsole(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.Headless = true
	o.RunTime = time.Minute
	o.UserClasses = []UserClass{{Name: "A"}}
	o.ThresholdInterval = 20 * time.Millisecond
	o.StatsInterval = 20 * time.Millisecond
	var stderr syncBuf
	o.Stderr = &stderr
	for _, e := range []string{"fail_ratio<10%", "p99{/x}<1s", "rps{/nope}>1"} {
		th, err := thresholds.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		o.Thresholds = append(o.Thresholds, th)
	}
	h := startMaster(t, o, logs)
	if live := h.m.LiveThresholds(); len(live) != 3 || live[0].LiveState() != thresholds.LiveWaiting {
		t.Fatalf("LiveThresholds before the test: %+v", live)
	}
	w := h.worker("w_1")
	w.ready(ready(""))
	var state atomic.Value
	state.Store(protocol.StateReady)
	stop := w.beatEvery(20*time.Millisecond, func() string { return state.Load().(string) })
	defer stop()
	w.expect("spawn")
	w.send("spawning", nil)
	state.Store(protocol.StateRunning)
	w.send("stats", report(5, 5, map[string]int64{"A": 1}))
	// Three lines under the table, in declaration order.
	lines := regexp.MustCompile(`Thresholds \(live\) +Current   State\n` +
		`fail_ratio<0\.1 +50\.00%   FAILING\n` +
		`p99\{/x\}<1000ms +3\.00 ms   ok\n` +
		`rps\{/nope\}>1 +n/a   waiting \(no request of this name\)\n\n`)
	testpeer.Eventually(t, 20*time.Second, "the live thresholds in the periodic output", func() bool {
		return lines.MatchString(stderr.String())
	})
	live := h.m.LiveThresholds()
	if len(live) != 3 || live[0].LiveState() != thresholds.LiveFailing || live[1].LiveState() != thresholds.LiveOK || live[2].LiveState() != thresholds.LiveWaiting {
		t.Errorf("LiveThresholds: %+v", live)
	}
	live[0].Passed = true // the caller's copy
	if h.m.LiveThresholds()[0].Passed {
		t.Error("LiveThresholds returned the master's own slice")
	}
	// The live lines follow a periodic table, not Locust's summary.
	out := stderr.String()
	if i, j := strings.Index(out, "Thresholds (live)"), strings.Index(out, "Aggregated"); j < 0 || i < j {
		t.Errorf("live lines before the first table:\n%s", out)
	}
	h.m.Quit()
	w.expect("quit")
	stop()
	w.send("quit", nil)
	if _, err := h.wait(); err != nil {
		t.Fatal(err)
	}
}

// Without thresholds nothing is printed and LiveThresholds is nil.
func TestThresholdsLiveNone(t *testing.T) {
	var b strings.Builder
	writeLiveThresholds(&b, nil)
	if b.Len() != 0 {
		t.Errorf("output without thresholds: %q", b.String())
	}
	var w thresholdWatch
	if w.liveResults() != nil {
		t.Error("live results without thresholds")
	}
}
