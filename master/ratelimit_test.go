package master

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// fakeClock is a settable clock for the limiter.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestLimiterAllow(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	l := newLimiter(3, time.Second, c.now)
	type call struct {
		key            string
		advance        time.Duration
		wantOK         bool
		wantSuppressed int
	}
	calls := []call{
		{"a", 0, true, 0}, {"a", 0, true, 0}, {"a", 0, true, 0},
		{"a", 0, false, 0}, {"a", 0, false, 0},
		{"b", 0, true, 0},           // another cause has its own budget
		{"a", time.Second, true, 2}, // a new interval reports the refused ones
		{"a", 0, true, 0},
	}
	for i, c2 := range calls {
		c.t = c.t.Add(c2.advance)
		ok, sup := l.Allow(c2.key)
		if ok != c2.wantOK || sup != c2.wantSuppressed {
			t.Errorf("call %d: Allow(%q) = %v, %d; want %v, %d", i, c2.key, ok, sup, c2.wantOK, c2.wantSuppressed)
		}
	}
}

func TestLimiterFlushAndBound(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	l := newLimiter(1, time.Second, c.now)
	l.maxKeys = 4
	for i := range 100 {
		l.Allow(fmt.Sprint("k", i))
		l.Allow(fmt.Sprint("k", i)) // refused
	}
	if n := len(l.keys); n > l.maxKeys+1 {
		t.Errorf("len(keys) = %d after 100 causes; want at most %d", n, l.maxKeys+1)
	}
	var got []string
	l.Flush(func(k string, n int) { got = append(got, fmt.Sprint(k, "=", n)) })
	if len(got) != 0 {
		t.Errorf("Flush within the interval reported %v; want nothing", got)
	}
	c.t = c.t.Add(time.Second)
	l.Flush(func(k string, n int) { got = append(got, fmt.Sprint(k, "=", n)) })
	// k0..k3 had one refused event each; the other 96 causes shared the
	// overflow key: 96 allowed once would exceed burst 1, so 1 allowed and
	// 96*2-1 refused.
	want := []string{overflowKey + "=191", "k0=1", "k1=1", "k2=1", "k3=1"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Flush reported %q; want %q", got, want)
	}
	if len(l.keys) != 0 {
		t.Errorf("len(keys) = %d after a flush of ended intervals; want 0", len(l.keys))
	}
}

// A client_ready flood writes a bounded number of log lines and says how
// many it suppressed; an exception flood of one cause enters the
// statistics a bounded number of times.
func TestFloodLogsAreBounded(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.HeartbeatInterval = 100 * time.Millisecond // flushes the limits
	o.UserClasses = []UserClass{{Name: "A"}}
	h := startMaster(t, o, logs)
	w := h.worker("flood_1")
	w.ready(skipCheck)
	if err := h.m.Start(1, 1, nil); err != nil {
		t.Fatal(err)
	}
	w.expect(protocol.TypeSpawn) // its exceptions are of our test
	const n = 3000
	begin := time.Now()
	for range n {
		w.send(protocol.TypeClientReady, skipCheck)
		w.send(protocol.TypeException, &protocol.Exception{Msg: "boom", Traceback: "tb"})
	}
	w.send(protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateReady, MemoryUsage: -1})
	for range n {
		w.expect(protocol.TypeAck) // every message is still answered
	}
	eventually(t, waitShort, "a suppressed-lines summary", func() bool {
		return logs.has("similar log messages (worker ready)") || logs.has("similar messages suppressed")
	})
	eventually(t, waitShort, "an exception summary", func() bool { return logs.has("exception messages from workers of one cause") })
	secs := int(time.Since(begin)/logInterval) + 2
	if got, max := logs.count("reported as ready"), logBurst*secs; got > max {
		t.Errorf("%d 'reported as ready' lines for %d client_ready in %d s; want at most %d", got, n, secs-1, max)
	}
	var excs int64
	for _, e := range h.m.Snapshot().Exceptions {
		excs += e.Count
	}
	if max := int64(exceptionBurst * secs); excs == 0 || excs > max {
		t.Errorf("%d exceptions in the statistics for %d sent; want 1 to %d", excs, n, max)
	}
}
