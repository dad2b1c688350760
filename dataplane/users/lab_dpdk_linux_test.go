//go:build dpdk && cgo && linux

package users

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/worker"
)

// TestLabDPDKUsersToNginx runs the runtime over its own DPDK link (Link
// LinkDPDK: the default link factory initialises the EAL and probes a
// net_af_packet device on the host end of a lab.HostPair) against nginx in
// the server namespace: 100 users, then Stop; the recorder holds exactly
// the requests nginx logged, none failed. Root and a binary built with the
// dpdk tag (make test-dpdk).
func TestLabDPDKUsersToNginx(t *testing.T) {
	l := labtest.New(t)
	p, err := l.HostPair()
	if err != nil {
		t.Fatalf("HostPair = %v", err)
	}
	ng := testpeer.StartNginx(t, testpeer.NginxConfig{Host: lab.ServerIP, AccessLog: true, Connections: 4096,
		Wrap: []string{"ip", "netns", "exec", p.Server.Name}, Dial: p.Server.Dial})
	sc := parseScenario(t, okHTTP+"users: [{name: U, wait: constant(0.2), tasks: [{path: /a}, {path: /b, weight: 2}]}]")
	dev := "net_af_packet_" + p.Cicada.Name + ",iface=" + p.Cicada.Name + ",qpairs=1,framecnt=4096"
	rt, err := New(Options{Link: LinkDPDK,
		DPDK:     dpdk.Config{EAL: []string{"--no-huge", "-m", "256", "--log-level", "*:warning"}, Device: dev, IdleSleep: 50 * time.Microsecond},
		ClientIP: netip.MustParseAddr(lab.ClientIP), PortMin: 10000, PortMax: 10999, ConnectRate: 1000}, sc)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	defer rt.Close()
	rec := stats.NewRecorder(nil)
	if err := rt.Start(worker.RuntimeEnv{Recorder: rec, Logger: testLogger(t)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	host := "http://" + lab.ServerIP + ":" + strconv.Itoa(ng.Port)
	if err := rt.Spawn(ctx, worker.RuntimeSpawn{Host: host, Classes: []worker.RuntimeClass{{Name: "U", Users: 100}}}); err != nil {
		t.Fatalf("Spawn = %v", err)
	}
	testpeer.Eventually(t, 30*time.Second, "1,000 requests at nginx", func() bool {
		n, _, err := ng.Requests()
		return err == nil && n >= 1000
	})
	rt.Stop(10 * time.Second)
	if got := rt.Users()["U"]; got != 0 {
		t.Fatalf("%d users after Stop", got)
	}
	rep := rec.Report(nil, 0)
	var reqs, fails int64
	for _, e := range rep.Stats {
		reqs += e.NumRequests
		fails += e.NumFailures
	}
	var by map[string]int
	testpeer.Eventually(t, 10*time.Second, "nginx's log complete", func() bool {
		_, by, _ = ng.Requests()
		return int64(by["200"]) >= reqs
	})
	if fails != 0 || int64(by["200"]) != reqs || len(by) != 1 || len(rep.Stats) != 2 {
		t.Fatalf("recorded %d requests in %d rows, %d failed (errors %v); nginx logged %v", reqs, len(rep.Stats), fails, rep.Errors, by)
	}
	t.Logf("%d requests of 100 users over DPDK's net_af_packet, all logged by nginx", reqs)
}
