package main

import (
	"slices"
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
	result, trials, table := benchClusterInLab(t, d, "https://"+lab.ServerIP+":443", slices.Concat(cpsArgs, []string{"--insecure", "--retry-invalid", "2"}, kernelCPU)...)
	if !strings.Contains(table, "kernel sockets, 2 workers") || !strings.Contains(table, "Maximum TCP/HTTPS connection establishment rate (RFC 9411 7.6)") {
		t.Fatalf("table:\n%s", table)
	}
	fullHandshakesOnly(t, trials)
	labFigure(t, "kernel https, 2 workers", result, limit, 0.8, 1.15)
}
