package master

import (
	"fmt"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// Identities that come and go are forgotten, bounded: 150,000 churned
// identities used to stay in the master's tables for good. The loop's
// handlers are driven directly (the loop is not running), with liveness
// ticks in between.
func TestChurnedIdentitiesAreForgotten(t *testing.T) {
	logs := &logBuf{}
	o := testOptions(logs)
	o.UserClasses = []UserClass{{Name: "A"}}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	msg := func(id, typ string, data any) {
		m.handle(inbound{id: id, msg: protocol.Message{Type: typ, Data: data, NodeID: id}})
	}
	m.st.ramp.rampTimer = time.NewTimer(time.Hour) // as the loop sets it up
	m.st.ramp.rampTimer.Stop()
	msg("stay_1", protocol.TypeClientReady, skipCheck)
	if err := m.start(1, 1); err != nil {
		t.Fatal(err)
	}
	const maxGone = 1000
	m.st.reg.gone.max = maxGone
	const n = 5 * maxGone
	for i := range n {
		id := fmt.Sprintf("churn_%d", i)
		msg(id, protocol.TypeClientReady, skipCheck)
		msg(id, protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateReady, MemoryUsage: -1,
			Connections: &protocol.ConnCounters{Connects: 1}})
		msg(id, protocol.TypeCicadaWarning, &protocol.Custom{Data: map[string]any{"kind": "fds", "message": "low"}})
		if i%2 == 0 {
			msg(id, protocol.TypeQuit, nil)
		} else {
			msg(id, protocol.TypeClientStopped, nil)
		}
		msg(fmt.Sprintf("stranger_%d", i), protocol.TypeQuit, nil) // never registered
		if i%50 == 0 {
			msg("stay_1", protocol.TypeHeartbeat, &protocol.Heartbeat{State: protocol.StateRunning, MemoryUsage: -1})
			m.liveness()
		}
	}
	m.liveness()
	st := &m.st
	sizes := map[string]int{
		"indexes": len(st.reg.indexes), "lastTS": len(st.reg.lastTS), "stopped": len(st.reg.stopped),
		"quitted": len(st.reg.quitted), "conn.rows": len(st.conn.rows), "conn.warned": len(st.conn.warned),
		"conn.order": len(st.conn.order), "gone": len(st.reg.gone.since), "gone queue": len(st.reg.gone.queue) - st.reg.gone.head,
	}
	for name, size := range sizes {
		if size > maxGone+len(st.reg.nodes)+1 {
			t.Errorf("len(%s) = %d after %d churned identities; want at most %d", name, size, 2*n, maxGone+len(st.reg.nodes)+1)
		}
	}
	if len(st.reg.lastTS) == 0 {
		t.Errorf("no spawn was sent during the churn: lastTS is not exercised")
	}
	if got := m.connView.Load().total().c.Connects; got != n {
		t.Errorf("connection total Connects = %d after forgetting; want %d (forgotten rows are folded)", got, n)
	}
	if _, ok := st.reg.indexes["stay_1"]; !ok || st.reg.nodes["stay_1"] == nil {
		t.Errorf("the registered worker stay_1 was forgotten")
	}
	if len(st.conn.warnings) > maxWarnings {
		t.Errorf("len(warnings) = %d; want at most %d", len(st.conn.warnings), maxWarnings)
	}
}
