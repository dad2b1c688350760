package users

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/worker"
)

func TestShareOut(t *testing.T) {
	tests := []struct {
		want []int64
		n    int
	}{
		{[]int64{10}, 3}, {[]int64{1, 1, 1, 1}, 3}, {[]int64{7, 5, 0, 2}, 4}, {nil, 2}, {[]int64{0, 100001}, 7}, {[]int64{3}, 1},
	}
	for _, tt := range tests {
		shares := shareOut(tt.want, tt.n, 4)
		totals := make([]int, tt.n)
		var all int64
		for cl := range 4 {
			var sum int64
			for k := range tt.n {
				sum += int64(shares[k][cl])
				totals[k] += shares[k][cl]
			}
			var w int64
			if cl < len(tt.want) {
				w = tt.want[cl]
			}
			all += w
			if sum != w {
				t.Errorf("%v over %d: class %d gets %d; want %d", tt.want, tt.n, cl, sum, w)
			}
		}
		for k, tot := range totals {
			if lo := all / int64(tt.n); int64(tot) < lo || int64(tot) > lo+1 {
				t.Errorf("%v over %d: core %d holds %d users; want %d or %d", tt.want, tt.n, k, tot, lo, lo+1)
			}
		}
	}
}

// TestUsersAliased: names sharing a class get its users in spawn order up
// to their targets, the last name the surplus (a spawn still stopping).
func TestUsersAliased(t *testing.T) {
	tests := []struct {
		names []worker.RuntimeClass
		have  int64
		want  map[string]int64
	}{
		{[]worker.RuntimeClass{{Name: "X", Users: 3}, {Name: "Y", Users: 5}}, 8, map[string]int64{"X": 3, "Y": 5}},
		{[]worker.RuntimeClass{{Name: "X", Users: 3}, {Name: "Y", Users: 5}}, 6, map[string]int64{"X": 3, "Y": 3}},
		{[]worker.RuntimeClass{{Name: "X", Users: 3}, {Name: "Y", Users: 5}}, 2, map[string]int64{"X": 2, "Y": 0}},
		{[]worker.RuntimeClass{{Name: "X", Users: 3}, {Name: "Y", Users: 5}}, 11, map[string]int64{"X": 3, "Y": 8}},
		{[]worker.RuntimeClass{{Name: "X", Users: 0}}, 0, map[string]int64{"X": 0}},
	}
	for _, tt := range tests {
		r := &Runtime{plan: &plan{classes: make([]planClass, 1)}}
		c := &core{users: make([]atomic.Int64, 1)}
		c.users[0].Store(tt.have)
		cores := []*core{c}
		r.coresPtr.Store(&cores)
		r.names = tt.names
		got := r.Users()
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%d users for %v: %v; want %v", tt.have, tt.names, got, tt.want)
				break
			}
		}
	}
}

// TestSpawnRefusesHost: a master's host the data plane cannot use fails
// the spawn with the refusal (the worker reports it as an exception).
func TestSpawnRefusesHost(t *testing.T) {
	sc := parseScenario(t, okHTTP+"users: [{name: U, tasks: [{path: /}]}, {name: V, host: 'http://198.18.1.2', tasks: [{path: /}]}]")
	rt, err := New(testOptions(pipeLinks), sc)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Start(worker.RuntimeEnv{Recorder: stats.NewRecorder(nil)}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		s    worker.RuntimeSpawn
		want string
	}{
		{"no host", worker.RuntimeSpawn{Classes: []worker.RuntimeClass{{Name: "U", Class: 0, Users: 1}}}, "no host"},
		{"tls", worker.RuntimeSpawn{Host: "https://198.18.1.1", Classes: []worker.RuntimeClass{{Name: "U", Users: 1}}}, "no TLS"},
		{"name", worker.RuntimeSpawn{Host: "http://target:80", Classes: []worker.RuntimeClass{{Name: "U", Users: 1}}}, "not an IPv4"},
		{"two hosts", worker.RuntimeSpawn{Classes: []worker.RuntimeClass{{Name: "U", Users: 1}, {Name: "V", Class: 1, Users: 1}}}, "different hosts"},
		{"bad index", worker.RuntimeSpawn{Classes: []worker.RuntimeClass{{Name: "W", Class: 5, Users: 1}}}, "class index 5"},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := rt.Spawn(ctx, tt.s)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Spawn = %v; want an error naming %q", tt.name, err, tt.want)
		}
		if tt.name != "bad index" && !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v does not wrap ErrRefused", tt.name, err)
		}
	}
	// Nothing asked, nothing built: a zero spawn is fine without a host.
	if err := rt.Spawn(context.Background(), worker.RuntimeSpawn{Classes: []worker.RuntimeClass{{Name: "U"}}}); err != nil {
		t.Errorf("zero spawn = %v", err)
	}
}

func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"http://198.18.1.1", "http://1.2.3.4:8080/api/", "https://1.2.3.4", "http://[::1]:80", "http://a:b@1.2.3.4", "http://1.2.3.4:0", "http://1.2.3.4:99999", "", "http://1.2.3.4/?q"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		srv, err := parseHost("f", host)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("%q: %v does not wrap ErrRefused", host, err)
			}
			return
		}
		if !srv.addr.Addr().Is4() || srv.addr.Port() == 0 || !strings.HasPrefix(srv.origin, "http://") || strings.HasSuffix(srv.prefix, "/") {
			t.Fatalf("%q: accepted as %+v", host, srv)
		}
	})
}

// TestSpawnStalls: without a server nothing answers ARP; the spawn ends
// with an error saying so instead of spawning forever.
func TestSpawnStalls(t *testing.T) {
	defer func(d time.Duration) { spawnStall = d }(spawnStall)
	spawnStall = 300 * time.Millisecond
	rt, err := New(testOptions(pipeLinks), parseScenario(t, okHTTP+"users: [{name: U, tasks: [{path: /}]}]"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Start(worker.RuntimeEnv{Recorder: stats.NewRecorder(nil)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = rt.Spawn(ctx, worker.RuntimeSpawn{Host: "http://198.18.1.1", Classes: []worker.RuntimeClass{{Name: "U", Users: 5}}})
	if err == nil || !strings.Contains(err.Error(), "the server 198.18.1.1 does not answer ARP") || ctx.Err() != nil {
		t.Fatalf("Spawn = %v; want the ARP stall", err)
	}
}

// BenchmarkTick is the per-turn cost of the spawn logic on a core: three
// classes at their targets (the steady state of every turn).
func BenchmarkTick(b *testing.B) {
	sc := parseScenario(b, okHTTP+"host: "+serverHost+"\nusers: [{name: A, tasks: [{path: /}]}, {name: B, tasks: [{path: /}]}, {name: C, tasks: [{path: /}]}]")
	rt, err := New(testOptions(pipeLinks), sc)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	srv, _ := parseHost("h", serverHost)
	rp, err := rt.program(&srv)
	if err != nil {
		b.Fatal(err)
	}
	s, err := stack.New(stack.Config{Mode: stack.Client, Link: rt.links[0], ClientIP: ip4(clientIP), PortMin: 10000, PortMax: 10999,
		ServerIP: ip4(serverIP), Program: &rp.prog})
	if err != nil {
		b.Fatal(err)
	}
	rt.cores = []*core{newCore(rt, 0, 3, len(rp.rows))}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		rt.tick(0, s, int64(i)*1000)
	}
}
