package users

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/worker"
)

// TestLabUsersToNginx runs the runtime over its own AF_PACKET link (Link,
// Interface: the default link factory) in the namespace lab against nginx:
// 200 users on two cores (a fanout group), then Stop; the recorder holds
// exactly the requests nginx logged, none failed. Root only.
func TestLabUsersToNginx(t *testing.T) {
	p, err := labtest.New(t).KernelPair()
	if err != nil {
		t.Fatalf("KernelPair = %v", err)
	}
	reqs := usersToNginx(t, p.Server, 200, func(sc worker.Scenario) (rt *Runtime, err error) {
		err = p.Cicada.Netns.Do(func() error { // the interface and its sockets live in the client namespace
			rt, err = New(Options{Link: LinkAFPacket, Interface: p.Cicada.Name, Cores: 2,
				ClientIP: netip.MustParseAddr(lab.ClientIP), PortMin: 10000, PortMax: 10999, ConnectRate: 1000}, sc)
			return err
		})
		return rt, err
	})
	t.Logf("%d requests of 200 users on 2 cores, all logged by nginx", reqs)
}

// usersToNginx starts nginx in the server namespace, spawns users of a
// two-task scenario on the runtime newRT builds until nginx served ten
// requests per user, stops them, and checks that the recorder holds exactly
// the requests nginx logged, none failed. It returns the requests.
func usersToNginx(t *testing.T, server *lab.Netns, users int64, newRT func(worker.Scenario) (*Runtime, error)) int64 {
	t.Helper()
	ng := testpeer.StartNginx(t, testpeer.NginxConfig{Host: lab.ServerIP, AccessLog: true, Connections: 4096,
		Wrap: []string{"ip", "netns", "exec", server.Name}, Dial: server.Dial})
	sc := parseScenario(t, okHTTP+"users: [{name: U, wait: constant(0.2), tasks: [{path: /a}, {path: /b, weight: 2}]}]")
	rt, err := newRT(sc)
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
	if err := rt.Spawn(ctx, worker.RuntimeSpawn{Host: host, Classes: []worker.RuntimeClass{{Name: "U", Users: users}}}); err != nil {
		t.Fatalf("Spawn = %v", err)
	}
	testpeer.Eventually(t, 30*time.Second, "ten requests per user at nginx", func() bool {
		n, _, err := ng.Requests()
		return err == nil && int64(n) >= 10*users
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
	return reqs
}
