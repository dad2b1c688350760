package scenario

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/worker"
)

// cluster is an in-process cicada master with cicada workers running a
// parsed scenario, for tests of what users do at run time.
type cluster struct {
	t       testing.TB
	m       *master.Master
	workers []*worker.Worker
}

// startCluster starts a master and n workers for f, and starts users
// users against host once every worker is registered (none if 0).
func startCluster(t testing.TB, f *File, n, users int, host string) *cluster {
	t.Helper()
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	var classes []master.UserClass
	for _, c := range f.Scenario.Classes {
		classes = append(classes, master.UserClass{Name: c.Name, Weight: c.Weight, FixedCount: c.FixedCount})
	}
	m, err := master.New(master.Options{
		BindHost: "127.0.0.1", BindPort: -1, Host: host, UserClasses: classes, Logger: discard,
		ReportWait: 300 * time.Millisecond, FinalReportTimeout: 500 * time.Millisecond,
		FinalReportGrace: 200 * time.Millisecond, StatsInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the master", 30*time.Second, func(ctx context.Context) { _, _ = m.Run(ctx) })
	c := &cluster{t: t, m: m}
	port := m.Addr().(*net.TCPAddr).Port
	for range n {
		w, err := worker.New(worker.Options{MasterHost: "127.0.0.1", MasterPort: port, Logger: discard,
			StatsInterval: 100 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond}, f.Scenario)
		if err != nil {
			t.Fatal(err)
		}
		testpeer.Go(t, "a worker", 30*time.Second, func(ctx context.Context) { _ = w.Run(ctx) })
		c.workers = append(c.workers, w)
	}
	if err := testpeer.Poll(20*time.Second, 10*time.Millisecond, func() bool {
		for _, w := range c.workers {
			if !w.Registered() {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal("workers did not register")
	}
	if users == 0 {
		return c
	}
	if err := m.Start(users, float64(users), nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitStats polls the master's stats until cond holds.
func (c *cluster) waitStats(what string, cond func(s *stats.Snapshot) bool) *stats.Snapshot {
	c.t.Helper()
	var s *stats.Snapshot
	if err := testpeer.Poll(30*time.Second, 20*time.Millisecond, func() bool {
		s = c.m.Snapshot()
		return cond(s)
	}); err != nil {
		c.t.Fatalf("%s: not reached; stats: %s", what, describe(s))
	}
	return s
}

// failures returns the failure texts of the stats, by request name.
func failures(s *stats.Snapshot) map[string]string {
	out := map[string]string{}
	for _, e := range s.Errors {
		out[e.Method+" "+e.Name] = e.Error
	}
	return out
}

func describe(s *stats.Snapshot) string {
	if s == nil {
		return "none"
	}
	var b strings.Builder
	for _, e := range s.Entries {
		b.WriteString(e.Method + " " + e.Name + " ")
		b.WriteString(strconv.FormatInt(e.NumRequests, 10) + "/" + strconv.FormatInt(e.NumFailures, 10) + "; ")
	}
	for _, e := range s.Errors {
		b.WriteString("error " + e.Method + " " + e.Name + ": " + e.Error + "; ")
	}
	return b.String()
}
