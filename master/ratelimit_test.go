package master

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

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
