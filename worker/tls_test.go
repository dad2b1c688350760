package worker

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// TestHeartbeatCarriesTLSCounts: users of an https host make one full
// handshake each, and the heartbeat's connection counters say so.
func TestHeartbeatCarriesTLSCounts(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	m := newFakeMaster(t, 0)
	sc := Scenario{Host: srv.URL, Classes: []UserClass{idleClass("Idle", time.Hour)},
		HTTP: HTTPOptions{TLSConfig: &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}}
	rw := startWorker(t, fastOptions(t, m.port), sc)
	register(t, m, rw, 1, 0)
	const users = 5
	m.send(rw.w.NodeID(), protocol.TypeSpawn, spawnTo(srv.URL, map[string]int64{"Idle": users}))
	waitFor(t, 20*time.Second, "a heartbeat with a handshake per user", func() bool {
		c := lastConns(m)
		return c != nil && c.Established == users && c.TLSHandshakes == users
	})
	if c := lastConns(m); c.TLSResumed != 0 || c.TLSHandshakeMicros <= 0 {
		t.Errorf("counters = %+v; want full handshakes with their time", c)
	}
}
