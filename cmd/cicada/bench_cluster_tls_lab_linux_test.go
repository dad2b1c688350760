package main

import (
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/lab"
)

// The HTTPS connection rate search of TestBenchLabHTTPSConnectionRateLimit
// across two workers (controller and workers in the client namespace):
// the device's 200 new connections a second found within the same
// tolerance, every merged trial's connections all full handshakes, summed
// over the workers.
func TestBenchLabClusterHTTPSConnectionRateLimit(t *testing.T) {
	const limit = 200
	skipShort(t)
	d := kernelDUT(t, lab.DUTConfig{})
	startTLSTargetInLab(t, d)
	nftLimit(t, d, limit, "ct", "state", "new", "tcp", "dport", "443")
	const port = "5557"
	for _, name := range []string{"labtw1", "labtw2"} {
		startCicada(t, d.Client, name, "--worker", "--master-host", "127.0.0.1", "--master-port", port, "--node-id", name)
	}
	result, trials, table := benchInLabAt(t, d, "https://"+lab.ServerIP+":443", nil, "cps", "--insecure", "--pause", "500ms", "--start", "50",
		"--max", "5000", "--trial-time", "1s", "--resolution", "0.05", "--connect-timeout", "500ms", "--lag-tolerance", "200ms", "--cpu-busy", "1",
		"--retry-invalid", "2", "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", port, "--expect-workers", "2",
		"--expect-workers-max-wait", "30s")
	if !strings.Contains(table, "kernel sockets, 2 workers") || !strings.Contains(table, "Maximum TCP/HTTPS connection establishment rate (RFC 9411 7.6)") {
		t.Fatalf("table:\n%s", table)
	}
	n := len(trials[0])
	for i, tr := range trials {
		if tr[n-3] != "0" || tr[n-4] == "0" {
			t.Fatalf("trial %d: %s full, %s resumed handshakes; want only full ones", i+1, tr[n-4], tr[n-3])
		}
	}
	labFigure(t, "kernel https, 2 workers", result, limit, 0.8, 1.15)
}
