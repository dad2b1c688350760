package worker

// Test helpers shared with the external test package (worker_test): thin
// names over internal/testpeer, the one home of test peers and polling.

import (
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = testpeer.RaceEnabled

// RequirePeer returns the path of an external program, skipping the test
// when it is missing (failing under CI=true).
func RequirePeer(t testing.TB, path string) string {
	t.Helper()
	return testpeer.RequirePeer(t, path)
}

// FreePort returns a free TCP port on 127.0.0.1.
func FreePort(t testing.TB) int {
	t.Helper()
	return testpeer.FreePort(t)
}

// PollUntil polls cond until it holds or d passes.
func PollUntil(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testpeer.Eventually(t, d, what, cond)
}

// Nginx is a private nginx serving "hello" on a free 127.0.0.1 port, with
// an access log.
type Nginx struct{ *testpeer.Nginx }

// StartNginx starts an nginx for up to 30,000 connections, stopped at
// cleanup.
func StartNginx(t testing.TB) *Nginx {
	t.Helper()
	return &Nginx{testpeer.StartNginx(t, testpeer.NginxConfig{Connections: 30000, AccessLog: true})}
}

// Requests returns the number of requests in the access log so far.
func (n *Nginx) Requests(t testing.TB) int {
	t.Helper()
	return n.RequestCount(t)
}
