package web

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/stats"
)

// TestConnectionMetrics: the connection counters of cicada workers appear
// per worker, with the side at fault for failures, and the exposition
// stays valid; Python workers (no counters) are left out.
func TestConnectionMetrics(t *testing.T) {
	side := func(k string) bool { return k == "local ports exhausted" }
	st := &Status{State: protocol.StateRunning, Distributed: true, UserCount: 3, Workers: []WorkerInfo{
		{ID: "a_1", State: protocol.StateRunning, UserCount: 2, Connections: 2, MemoryUsage: -1, Conn: &ConnStats{
			Open: 2, Established: 2, Connects: 5, Reconnects: 3, ConnectsPerSec: 1.5,
			Closes: map[string]int64{"server closed idle": 3}, ConnectErrors: map[string]int64{"local ports exhausted": 4, "connection refused": 1},
			Errors: map[string]int64{"connection reset": 2}, GeneratorSide: side}},
		{ID: "py_1", State: protocol.StateRunning, UserCount: 1, Connections: -1, MemoryUsage: -1},
	}}
	p := promWriter{}
	appendMetrics(&p, st, stats.New(nil).Snapshot())
	text := string(p.b)
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name := strings.Fields(f)[0]
			if seen[name] {
				t.Errorf("family %s declared twice", name)
			}
			seen[name] = true
		}
	}
	for _, want := range []string{
		`cicada_worker_connections_established{worker="a_1"} 2`,
		`cicada_worker_connects_total{worker="a_1"} 5`,
		`cicada_worker_reconnects_total{worker="a_1"} 3`,
		`cicada_worker_connects_per_second{worker="a_1"} 1.5`,
		`cicada_worker_connection_closes_total{worker="a_1",cause="server closed idle"} 3`,
		`cicada_worker_connect_errors_total{worker="a_1",kind="local ports exhausted",side="generator"} 4`,
		`cicada_worker_connect_errors_total{worker="a_1",kind="connection refused",side="server"} 1`,
		`cicada_worker_connection_errors_total{worker="a_1",kind="connection reset",side="server"} 2`,
		`cicada_connections_established 2`,
		`cicada_connections 2`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	if path, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(path, "check", "metrics")
		cmd.Stdin = strings.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}
	if strings.Contains(text, "tls_") || strings.Contains(text, "http2_") {
		t.Error("TLS metrics without TLS counts")
	}
	st.Workers[0].Conn.TLSHandshakes, st.Workers[0].Conn.TLSResumed, st.Workers[0].Conn.TLSHandshakeTime = 7, 3, 1500*time.Millisecond
	st.Workers[0].Conn.TLSHandshakesPerSec, st.Workers[0].Conn.H2ResetStreams = 2.5, 4
	p = promWriter{}
	appendMetrics(&p, st, stats.New(nil).Snapshot())
	for _, want := range []string{
		`cicada_worker_tls_handshakes_total{worker="a_1"} 7`,
		`cicada_worker_tls_resumed_total{worker="a_1"} 3`,
		`cicada_worker_tls_handshake_seconds_total{worker="a_1"} 1.5`,
		`cicada_worker_tls_handshakes_per_second{worker="a_1"} 2.5`,
		`cicada_worker_http2_goaways_total{worker="a_1"} 0`,
		`cicada_worker_http2_rst_streams_total{worker="a_1"} 4`,
	} {
		if !strings.Contains(string(p.b), want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, `cicada_worker_connects_total{worker="py_1"}`) {
		t.Error("a worker without counters has connection metrics")
	}
}

// TestStatsJSONTLSRate: /stats/requests' workers carry the TLS handshake
// rate only for workers that made TLS handshakes.
func TestStatsJSONTLSRate(t *testing.T) {
	st := &Status{State: protocol.StateRunning, Distributed: true, Workers: []WorkerInfo{
		{ID: "tls_1", State: protocol.StateRunning, Connections: 1, Conn: &ConnStats{Established: 1, TLSHandshakes: 4, TLSHandshakesPerSec: 2.5}},
		{ID: "plain_1", State: protocol.StateRunning, Connections: 1, Conn: &ConnStats{Established: 1}},
	}}
	w := &jsonWriter{}
	appendRequestsJSON(w, st, stats.New(nil).Snapshot())
	out := string(w.buf)
	if strings.Count(out, `"tls_handshakes_per_sec"`) != 1 || !strings.Contains(out, `"tls_handshakes_per_sec": 2.5`) && !strings.Contains(out, `"tls_handshakes_per_sec":2.5`) {
		t.Errorf("workers JSON = %s; want tls_handshakes_per_sec 2.5 for the TLS worker only", out)
	}
}
