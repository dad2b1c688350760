package master

import (
	"strings"
	"testing"

	"github.com/cicada-load/cicada/protocol"
)

func TestTLSRate(t *testing.T) {
	var r tlsRate
	steps := []struct {
		had  bool
		dt   float64
		full int64
		res  int64
		want float64
	}{
		{false, 0, 100, 0, 0},    // the first heartbeat: no rate yet
		{true, 2, 300, 100, 150}, // 300 more in 2 s
		{true, 1, 300, 100, 0},
		{true, 1, 0, 0, 0}, // a restarted worker: never negative
	}
	for i, s := range steps {
		r.note(s.had, s.dt, &protocol.ConnCounters{TLSHandshakes: s.full, TLSResumed: s.res})
		if r.rate != s.want {
			t.Errorf("step %d: rate %v; want %v", i, r.rate, s.want)
		}
	}
}

func TestConnTableTLSLine(t *testing.T) {
	tests := []struct {
		name string
		rows []connRow
		want string // "" : no TLS line
	}{
		{"plain", []connRow{{name: "1 a", c: protocol.ConnCounters{Open: 1, Established: 1, Connects: 1}}}, ""},
		{"tls", []connRow{
			{name: "1 a", c: protocol.ConnCounters{Connects: 10, TLSHandshakes: 8, TLSResumed: 2, TLSHandshakeMicros: 25000}, tlsRate: 4},
			{name: "2 b", c: protocol.ConnCounters{Connects: 10, TLSHandshakes: 10, TLSHandshakeMicros: 20000, H2ResetStreams: 3}, tlsRate: 5.5},
		}, "TLS handshakes: 18 full, 2 resumed, 9.5/s, mean 2.25 ms; HTTP/2: 0 GOAWAY, 3 RST_STREAM\n"},
		{"h2c only", []connRow{{name: "1 a", c: protocol.ConnCounters{Connects: 1, H2GoAways: 2}}}, "HTTP/2: 2 GOAWAY, 0 RST_STREAM\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		writeConnTable(&b, &connView{rows: tt.rows})
		out := b.String()
		if tt.want == "" && (strings.Contains(out, "TLS handshakes") || strings.Contains(out, "HTTP/2")) {
			t.Errorf("%s: table has a TLS line:\n%s", tt.name, out)
		}
		if tt.want != "" && !strings.Contains(out, "\n"+tt.want) {
			t.Errorf("%s: table lacks %q:\n%s", tt.name, tt.want, out)
		}
	}
}
