package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDataplaneHostileOptions: edge values of the data plane options end
// with exit 2 and a message naming the option, never a panic, for the
// worker, standalone mode and the target alike. The interface cases run
// the worker's interface check (no root needed: the names never reach a
// socket or a shell).
func TestDataplaneHostileOptions(t *testing.T) {
	w := func(extra ...string) []string {
		return append([]string{"--worker", "--dataplane", "afpacket"}, extra...)
	}
	tg := func(extra ...string) []string {
		return append([]string{"target", "--dataplane", "afpacket", "--listen", "198.18.1.1:80"}, extra...)
	}
	ifc := []string{"--interface", "cicnosuch0"}
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"reversed range", w(append(ifc, "--client-ips", "198.18.0.5-198.18.0.1")...), "the range ends before it starts"},
		{"everything", w(append(ifc, "--client-ips", "0.0.0.0/0")...), "more than 16777216"},
		{"port 0", w(append(ifc, "--client-ips", "198.18.0.1", "--client-ports", "0-10")...), `port "0" outside 1-65535`},
		{"reversed ports", w(append(ifc, "--client-ips", "198.18.0.1", "--client-ports", "65535-1")...), "the range ends before it starts"},
		{"cores -1", w(append(ifc, "--client-ips", "198.18.0.1", "--dataplane-cores", "-1")...), "--dataplane-cores"},
		{"cores 100000", w(append(ifc, "--client-ips", "198.18.0.1", "--dataplane-cores", "100000")...), "--dataplane-cores"},
		{"shell metacharacters", w("--interface", "eth0;rm -rf /", "--client-ips", "198.18.0.1"), "eth0;rm -rf /"},
		{"16 characters", w("--interface", "abcdefghijklmnop", "--client-ips", "198.18.0.1"), `interface name "abcdefghijklmnop"`},
		{"loopback", w("--interface", "lo", "--client-ips", "198.18.0.1"), "loopback"},
		{"missing interface", w("--interface", "cicnosuch0", "--client-ips", "198.18.0.1"), `no interface "cicnosuch0"`},
		{"standalone missing interface", []string{"--headless", "-u", "1", "-t", "1s", "--dataplane", "afpacket", "--interface", "cicnosuch0", "--client-ips", "198.18.0.1"}, `no interface "cicnosuch0"`},
		{"target everything", tg(append(ifc, "--client-ips", "0.0.0.0/0")...), "more than 16777216"},
		{"target cores 100000", tg(append(ifc, "--client-ips", "198.18.0.1", "--dataplane-cores", "100000")...), "--dataplane-cores"},
		{"target shell metacharacters", tg("--interface", "x$(id)`id`", "--client-ips", "198.18.0.2"), "interface"},
		{"target 16 characters", tg("--interface", "abcdefghijklmnop", "--client-ips", "198.18.0.2"), `interface name "abcdefghijklmnop"`},
		{"target table beyond memory", tg(append(ifc, "--client-ips", "10.0.0.0/8", "--client-ports", "1-65535")...), "more than the"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tt.msg) || strings.Contains(stderr.String(), "panic") {
				t.Errorf("cicada %q = exit %d, stderr:\n%s\nwant exit 2 and %q", tt.args, code, stderr.String(), tt.msg)
			}
		})
	}
}
