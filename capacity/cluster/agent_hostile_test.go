package cluster

import (
	"context"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
)

// hostileSpec is a valid trial's probe map, with over's keys replaced
// (nil deletes a key).
func hostileSpec(test string, load any, over map[string]any) map[string]any {
	p := EncodeTrial(TrialSpec{Probe: probeOpts("127.0.0.1:9")})["probe"].(map[string]any)
	for k, v := range over {
		if v == nil {
			delete(p, k)
			continue
		}
		p[k] = v
	}
	return map[string]any{"id": int64(7), "test": test, "load": load, "probe": p}
}

// A hostile controller's trial specs are each refused with a result whose
// error names the field, promptly, without a panic and without load on
// the target.
func TestAgentHostileSpecs(t *testing.T) {
	var mix65 []string
	for i := range 65 {
		mix65 = append(mix65, fmt.Sprintf("%dMiB:1", i%16+1))
	}
	for _, tt := range []struct {
		name string
		spec map[string]any
		want string
	}{
		{"negative conns", hostileSpec("tps", 1.0, map[string]any{"conns": int64(-1)}), "conns: -1 is not a non-negative integer"},
		{"huge conns", hostileSpec("tps", 1.0, map[string]any{"conns": int64(math.MaxInt64)}), "conns: 9223372036854775807 is too large"},
		{"negative duration", hostileSpec("cps", 1.0, map[string]any{"duration_ns": int64(-1)}), "duration_ns"},
		{"NaN load", hostileSpec("cps", math.NaN(), nil), "load: NaN is not a finite"},
		{"Inf load", hostileSpec("cps", math.Inf(1), nil), "load: +Inf is not a finite"},
		{"negative load", hostileSpec("cps", -5.0, nil), "load: -5 is not a finite"},
		{"huge cps", hostileSpec("cps", 1e300, nil), "arrivals, more than"},
		{"huge tps", hostileSpec("tps", 1e15, nil), "arrivals, more than"},
		{"huge teardown", hostileSpec("teardown", 1e19, nil), "arrivals, more than"},
		{"huge duration", hostileSpec("cps", 10.0, map[string]any{"duration_ns": int64(math.MaxInt64)}), "arrivals, more than"},
		{"zero load", hostileSpec("cps", 0.0, nil), "rate 0 must be a positive number"},
		{"path CRLF", hostileSpec("cps", 1.0, map[string]any{"path": "/\r\nX-Injected: 1", "http": true}), "path"},
		{"path NUL", hostileSpec("cps", 1.0, map[string]any{"path": "/\x00"}), "path"},
		{"host space", hostileSpec("cps", 1.0, map[string]any{"host": "a b"}), "host \"a b\" holds a space"},
		{"host CRLF", hostileSpec("cps", 1.0, map[string]any{"host": "x\r\nX-Injected: 1"}), "host"},
		{"addr name", hostileSpec("cps", 1.0, map[string]any{"addr": "localhost:80"}), "must be IP:port"},
		{"unknown test", hostileSpec("rm -rf", 1.0, nil), "rm -rf"},
		{"mix 65 sizes", hostileSpec("tps", 1.0, map[string]any{"mix": strings.Join(mix65, ",")}), "65 entries"},
		{"mix too big", hostileSpec("tps", 1.0, map[string]any{"mix": "17MiB:1"}), "must be 1 to 16777216"},
		{"tls not a map", hostileSpec("cps", 1.0, map[string]any{"tls": "yes"}), "data is string, not a map"},
		{"tls /dev/zero without a builder", hostileSpec("cps", 1.0, map[string]any{"tls": encodeTLSOptions(&TLSOptions{CAFile: "/dev/zero"})}), "cannot build TLS"},
		{"tls 65 curves", hostileSpec("cps", 1.0, map[string]any{"tls": map[string]any{"insecure": true, "resume": false, "ca_file": "", "cert_file": "", "key_file": "",
			"server_name": "", "min_version": "", "max_version": "", "cipher_suites": []any{}, "curves": make([]any, 65)}}), "65 names"},
		{"probe missing", map[string]any{"id": int64(7), "test": "cps", "load": 1.0}, "probe: data is <nil>"},
		{"id negative", map[string]any{"id": int64(-7), "test": "cps", "load": 1.0}, "id: -7"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s sink
			a := NewAgent(context.Background(), &s, AgentOptions{Limits: noLimits})
			start := time.Now()
			a.Handle(protocol.Message{Type: TypeTrial, Data: &protocol.Custom{Data: tt.spec}})
			a.Wait()
			m, ok := s.find(TypeResult)
			if !ok {
				t.Fatal("no result")
			}
			res, err := DecodeResult(m.Data.(*protocol.Custom).Data)
			if err != nil || !strings.Contains(res.Error, tt.want) || res.Trial.Attempted != 0 {
				t.Fatalf("result %+v, %v; want an error naming %q", res, err, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("refused after %v", d)
			}
		})
	}
}

// A worker whose controller is gone (cmd/cicada cancels the agent's
// context when the worker's master heartbeat timeout fires) stops its trial
// at once once it is loading the target: not for the rest of a long trial.
// The trials are a minute long at a rate the pacer falls behind on; the
// context ends once the target has seen the load.
func TestAgentStopsWithItsContext(t *testing.T) {
	for _, tt := range []struct {
		test string
		load float64
		seen int64
	}{
		{"cps", 200_000, 200},
		{"tps", 200_000, 4},    // 4 connections, each stuck on a silent target
		{"concurrent", 50, 50}, // then waits at the barrier for a go that never comes
	} {
		t.Run(tt.test, func(t *testing.T) {
			addr, accepted := countingTarget(t, tt.test == "cps")
			var s sink
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			a := NewAgent(ctx, &s, AgentOptions{Limits: noLimits})
			o := probeOpts(addr)
			o.Duration, o.Hold, o.Timeout = time.Minute, time.Hour, time.Hour
			a.Handle(trialMsg(TrialSpec{ID: 1, Test: tt.test, Load: tt.load, Probe: o}))
			if err := testpeer.Poll(20*time.Second, 5*time.Millisecond, func() bool { return accepted.Load() >= tt.seen }); err != nil {
				t.Fatalf("the target saw %d connections", accepted.Load())
			}
			cancel()
			done := make(chan struct{})
			go func() { a.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the trial went on 20 s after its context ended")
			}
			m, _ := s.find(TypeResult)
			if res, err := DecodeResult(m.Data.(*protocol.Custom).Data); err != nil || !strings.Contains(res.Error, "context canceled") {
				t.Fatalf("result %+v, %v; want the context's end", res, err)
			}
		})
	}
}

// countingTarget accepts connections on a free loopback port and counts
// them; it closes each at once (closeAll) or keeps it open and silent.
func countingTarget(t *testing.T, closeAll bool) (string, *atomic.Int64) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var mu sync.Mutex
	var open []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			if closeAll {
				_ = c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String(), &n
}

// A worker whose controller is gone (Connected false) stops its trial after
// the connection grace, long before the hour's trial or the worker's 60 s
// master timeout; a connection back within the grace keeps the trial.
func TestAgentWatchdogStopsOrphanTrial(t *testing.T) {
	addr, accepted := countingTarget(t, true)
	var connected atomic.Bool
	connected.Store(true)
	var s sink
	a := NewAgent(context.Background(), &s, AgentOptions{Limits: noLimits, Connected: connected.Load, ConnectionGrace: 500 * time.Millisecond})
	o := probeOpts(addr)
	o.Duration = time.Hour
	a.Handle(trialMsg(TrialSpec{ID: 1, Test: "cps", Load: 100, Probe: o}))
	if err := testpeer.Poll(20*time.Second, 5*time.Millisecond, func() bool { return accepted.Load() >= 10 }); err != nil {
		t.Fatal("no load on the target")
	}
	connected.Store(false)
	start := time.Now()
	done := make(chan struct{})
	go func() { a.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the orphan trial went on 20 s")
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("stopped after %v, within the grace", d)
	}
	m, _ := s.find(TypeResult)
	if res, err := DecodeResult(m.Data.(*protocol.Custom).Data); err != nil || !strings.HasPrefix(res.Error, "cluster: trial stopped: no connection to the controller") {
		t.Fatalf("result %+v, %v", res, err)
	}
}
