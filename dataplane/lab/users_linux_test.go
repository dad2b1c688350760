package lab_test

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// TestLabStackUsersReconnect: 500 Locust users (on_start GET, then tasks of one
// or two GETs by weight, waiting 2.5 s) against nginx closing idle
// keep-alive connections after 1 s: every user's connection is closed by
// nginx while it waits, and it reconnects for its next task. After 1,000
// reconnects the users are stopped: nginx logged exactly the requests the
// stack counted, none failed, no kernel sent a reset, and no reconnect met
// nginx's TIME_WAIT of the port. The 1.5 s between nginx's close and the
// user's next request keep the test clear of the race Locust users know
// too (a request sent while the server's FIN is on its way is reset).
func TestLabStackUsersReconnect(t *testing.T) {
	const users = 500
	get := stack.BuildRequest("GET", "/", lab.ServerIP, nil)
	prog := &stack.Program{
		Requests: []stack.ProgramRequest{{Raw: get}, {Raw: get, Stat: 1}},
		Classes: []stack.ProgramClass{{OnStart: []int{0}, Wait: stack.Wait{Kind: stack.WaitConstant, Min: 2500 * time.Millisecond},
			Tasks: []stack.ProgramTask{{Weight: 1, Requests: []int{1}}, {Weight: 1, Requests: []int{1, 1}}}}},
	}
	r := newKernelRun(t, testpeer.NginxConfig{Keepalive: time.Second},
		stack.Config{PortMin: 10000, PortMax: 10000 + users - 1, Program: prog}, false)
	s := r.client
	start := time.Now()
	clock := func() int64 { return int64(time.Since(start)) }
	drive := func(d time.Duration, until func() bool) {
		t.Helper()
		end := time.Now().Add(d)
		for !until() {
			if time.Now().After(end) {
				t.Fatalf("not done after %v: client %+v", d, s.Counters())
			}
			if s.Poll(clock()) == 0 {
				r.link.Wait(time.Millisecond)
			}
		}
	}
	drive(5*time.Second, func() bool { return s.Resolved() })
	launched := 0
	drive(testTimeout, func() bool {
		if launched < users {
			launched += s.LaunchClass(clock(), 0, min(50, users-launched))
		}
		return launched == users && s.Counters().Reconnects >= 2*users
	})
	if got := s.StopClass(clock(), 0, users); got != users {
		t.Fatalf("StopClass = %d; want %d", got, users)
	}
	drive(testTimeout, func() bool { return s.Counters().SocketsCurrent == 0 })
	var st stack.Stats
	s.TakeStats(&st)
	c := s.Counters()
	req := st.Rows[0].Requests + st.Rows[1].Requests
	if st.Rows[0].Requests != users || st.Rows[0].Failures+st.Rows[1].Failures != 0 || req != c.HTTP2xx {
		t.Errorf("on_start %d (want %d), failures %d+%d (want 0), requests %d, 2xx %d",
			st.Rows[0].Requests, users, st.Rows[0].Failures, st.Rows[1].Failures, req, c.HTTP2xx)
	}
	if c.Reconnects < 2*users || c.FinIn < 2*users {
		t.Errorf("reconnects %d, FINs from nginx %d; want at least %d each", c.Reconnects, c.FinIn, 2*users)
	}
	// nginx closed first, so it holds each port in TIME_WAIT: the new
	// SYN's sequence above the old connection's makes it accept the SYN
	// instead of answering with an old ACK.
	if c.StaleAckRst != 0 {
		t.Errorf("stale-ACK resets %d; want 0 (TIME_WAIT at nginx accepts the reconnecting SYN)", c.StaleAckRst)
	}
	t.Logf("requests %d, reconnects %d, SYN retransmissions %d", req, c.Reconnects, c.RetransSyn)
	r.check(t, int(req))
}
