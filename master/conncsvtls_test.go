package master

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
)

// TestConnCSVTLSColumns checks PREFIX_connections.csv byte for byte: the
// thirteen connection columns unchanged, the TLS columns after them, a
// plain worker's zeros and empty mean, the total's sums.
func TestConnCSVTLSColumns(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "run")
	c, err := openConnCSV(prefix)
	if err != nil {
		t.Fatal(err)
	}
	v := &connView{rows: []connRow{
		{name: "0 tls_worker", peak: 4, rate: 2, tlsRate: 4.25, c: protocol.ConnCounters{
			Open: 4, Established: 4, Connects: 10, TLSHandshakes: 8, TLSResumed: 2, TLSHandshakeMicros: 25000, H2ResetStreams: 3,
			ConnectErrors: map[string]int64{protocol.FailureTLSCertificate: 2, protocol.FailureRefused: 1, protocol.FailureTLSTimeout: 1},
		}},
		{name: "1 plain,worker", peak: 1, c: protocol.ConnCounters{Open: 1, Established: 1, Connects: 1}},
		{name: "2 h2", c: protocol.ConnCounters{Connects: 3, TLSHandshakes: 3, TLSHandshakeMicros: 1001, H2GoAways: 1,
			ConnectErrors: map[string]int64{protocol.FailureTLSAlert: 1, protocol.FailureTLSVersion: 2, protocol.FailureTLS: 4}}},
	}}
	if err := c.write(v); err != nil {
		t.Fatal(err)
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(prefix + "_connections.csv")
	if err != nil {
		t.Fatal(err)
	}
	const want = "Worker,Open,Established,Peak established,Connects/s,Connects,Reconnects,Closes,Connect errors,Errors,Closes by cause,Connect errors by kind,Errors by kind," +
		"TLS handshakes,TLS resumed,TLS handshake failures,TLS handshakes/s,Mean TLS handshake (ms),HTTP/2 GOAWAY,HTTP/2 RST_STREAM\n" +
		`0 tls_worker,4,4,4,2.0,10,0,0,4,0,,"2 TLS certificate (server/network), 1 TLS handshake timeout (server/network), 1 connection refused (server/network)",,8,2,3,4.2,2.500,0,3` + "\n" +
		`"1 plain,worker",1,1,1,0.0,1,0,0,0,0,,,,0,0,0,0.0,,0,0` + "\n" +
		`2 h2,0,0,0,0.0,3,0,0,7,0,,"4 TLS (server/network), 2 TLS version (server/network), 1 TLS alert (server/network)",,3,0,7,0.0,0.334,1,0` + "\n" +
		`Total,5,5,5,2.0,14,0,0,11,0,,"4 TLS (server/network), 2 TLS certificate (server/network), 2 TLS version (server/network), 1 TLS alert (server/network), 1 TLS handshake timeout (server/network), 1 connection refused (server/network)",,11,2,10,4.2,2.000,1,3` + "\n"
	if string(got) != want {
		t.Errorf("connections CSV:\n%s\nwant:\n%s", got, want)
	}
	// Readers find the columns by name.
	tot := testpeer.CSVRow(prefix+"_connections.csv", "Total")
	if tot == nil || tot["TLS handshake failures"] != "10" || tot["Mean TLS handshake (ms)"] != "2.000" || tot["Connects"] != "14" {
		t.Errorf("Total row by name: %v", tot)
	}
}

// TestConnCSVHeaderOnly: before any worker reports, the file is the
// header alone, TLS columns included.
func TestConnCSVHeaderOnly(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "run")
	c, err := openConnCSV(prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	got, err := os.ReadFile(prefix + "_connections.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := "Worker,Open,Established,Peak established,Connects/s,Connects,Reconnects,Closes,Connect errors,Errors,Closes by cause,Connect errors by kind,Errors by kind" + connCSVTLSHeader + "\n"
	if string(got) != want {
		t.Errorf("header:\n%q\nwant\n%q", got, want)
	}
}
