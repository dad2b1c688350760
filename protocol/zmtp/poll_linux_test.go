//go:build linux

package zmtp

import (
	"testing"
	"time"
)

// A Router with a PollInterval polls while messages come, blocks in
// epoll_wait after a quiet spell, and still delivers at once from there.
func TestPollerQuietThenBlocking(t *testing.T) {
	c := &collector{}
	o := testOpts(nil)
	o.Handler = c
	o.PollInterval = time.Millisecond
	r := newRouter(t, o)
	if r.poll == nil {
		t.Fatal("no poller on Linux")
	}
	d := newDealer(t, endpointOf(r), "q", testOpts(nil))
	defer d.Close()
	for i := range 3 {
		if err := d.Send([]byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, waitLong, "message", func() bool { got, _ := c.snapshot(); return len(got) == i+1 })
		// Quiet: after pollQuietRounds empty rounds the poller blocks.
		waitFor(t, waitLong, "poller blocking", r.poll.blocking.Load)
	}
	got, _ := c.snapshot()
	if len(got) != 3 || got[2] != `q|["c"]` {
		t.Fatalf("got %q", got)
	}
}
