package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/link/dpdk"
)

// TestDataplaneUsage checks that data plane options cicada cannot honour
// end the process with exit 2 and a clear message, before anything starts.
func TestDataplaneUsage(t *testing.T) {
	dp := []string{"--dataplane", "afpacket", "--interface", "cicnosuch0"}
	dpdkArgs := []string{"--worker", "--dataplane", "dpdk", "--dpdk-port", "0", "--client-ips", "198.18.0.1"}
	// Without the dpdk build tag every dpdk run is refused with how to
	// build one; with it, bad dpdk options are.
	dpdkMsg := func(tagged string) string {
		if dpdk.Available {
			return tagged
		}
		return "build with `make build-dpdk` (cgo, libdpdk-dev)"
	}
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown kind", []string{"--worker", "--dataplane", "netmap", "--interface", "x", "--client-ips", "198.18.0.1"}, `invalid choice "netmap"`},
		{"dpdk bad eal", append(dpdkArgs, "--dpdk-eal", "-l '0"), dpdkMsg("--dpdk-eal: dpdk: bad EAL argument string")},
		{"dpdk two cores", append(dpdkArgs, "--dataplane-cores", "2"), dpdkMsg("--dataplane-cores: dpdk: 2 cores asked")},
		{"dpdk no port", []string{"--worker", "--dataplane", "dpdk", "--client-ips", "198.18.0.1"}, "requires --dpdk-port"},
		{"dpdk eal alone", []string{"--worker", "--dpdk-eal", "-l 0"}, "--dpdk-eal requires --dataplane dpdk"},
		{"dpdk idle sleep alone", []string{"--worker", "--dpdk-idle-sleep", "50us"}, "--dpdk-idle-sleep requires --dataplane dpdk"},
		{"dpdk bad idle sleep", append(dpdkArgs, "--dpdk-idle-sleep", "50"), dpdkMsg(`--dpdk-idle-sleep: link: invalid configuration: dpdk: idle sleep "50" is not a duration`)},
		{"dpdk long idle sleep", append(dpdkArgs, "--dpdk-idle-sleep", "1s"), dpdkMsg("--dpdk-idle-sleep: link: invalid configuration: dpdk: idle sleep 1s not in [0, 10ms]")},
		{"master", append([]string{"--master", "--client-ips", "198.18.0.1"}, dp...), "cannot be combined with --master"},
		{"source ips", append([]string{"--worker", "--client-ips", "198.18.0.1", "--source-ips", "127.0.0.2"}, dp...), "--source-ips"},
		{"processes", append([]string{"--worker", "--client-ips", "198.18.0.1", "--processes", "2"}, dp...), "--processes"},
		{"https", append([]string{"--headless", "--client-ips", "198.18.0.1", "-H", "https://198.18.1.1"}, dp...), "https host"},
		{"interface alone", []string{"--worker", "--interface", "eth0"}, "--interface requires --dataplane"},
		{"bad range", append([]string{"--worker", "--client-ips", "198.18.0.9-198.18.0.1"}, dp...), "--client-ips: ifcheck: bad range"},
		{"ipv6 range", append([]string{"--worker", "--client-ips", "fd00::1-fd00::9"}, dp...), "--client-ips"},
		{"bad ports", append([]string{"--worker", "--client-ips", "198.18.0.1", "--client-ports", "0-10"}, dp...), "--client-ports"},
		{"bad gateway", append([]string{"--worker", "--client-ips", "198.18.0.1", "--gateway", "fe80::1"}, dp...), "--gateway"},
		{"gateway in range", append([]string{"--worker", "--client-ips", "198.18.0.0/24", "--gateway", "198.18.0.254"}, dp...), "inside the client range"},

		{"target kind", []string{"target", "--dataplane", "netmap"}, `invalid choice "netmap"`},
		{"target dpdk", []string{"target", "--dataplane", "dpdk", "--dpdk-port", "0", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1", "--dpdk-eal", "'x"},
			dpdkMsg("--dpdk-eal: dpdk: bad EAL argument string")},
		{"target dpdk no port", []string{"target", "--dataplane", "dpdk", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1"}, dpdkMsg("requires --dpdk-port")},
		{"target dpdk cores", []string{"target", "--dataplane", "dpdk", "--dpdk-port", "0", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1", "--dataplane-cores", "2"},
			dpdkMsg("2 cores over dpdk")},
		{"target dpdk eal without dpdk", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--dpdk-eal", "-l 0"}, "require --dataplane dpdk"},
		{"target dpdk idle sleep", []string{"target", "--dataplane", "dpdk", "--dpdk-port", "0", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1", "--dpdk-idle-sleep", "-1us"},
			dpdkMsg("--dpdk-idle-sleep: link: invalid configuration: dpdk: idle sleep -1µs not in [0, 10ms]")},
		{"target idle sleep without dpdk", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--dpdk-idle-sleep", "50us"}, "require --dataplane dpdk"},
		{"target dpdk port alone", []string{"target", "--dpdk-port", "0"}, "--dpdk-port requires --dataplane"},
		{"target no interface", []string{"target", "--dataplane", "afxdp", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1"}, "requires --interface"},
		{"target no listen", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--client-ips", "198.18.0.1"}, "requires --listen"},
		{"target no clients", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--listen", "198.18.1.1:80"}, "requires --client-ips"},
		{"target ipv6 listen", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--listen", "[fd00::1]:80", "--client-ips", "198.18.0.1"}, "not an IPv4 address and port"},
		{"target body", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1", "--body-size", "-1"}, "--body-size"},
		{"target cores", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1", "--dataplane-cores", "-2"}, "--dataplane-cores"},
		{"target bad range", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1/40"}, "--client-ips"},
		{"target ports", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1", "--client-ports", "9-8"}, "--client-ports"},
		{"target gateway", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1", "--gateway", "x"}, "--gateway"},
		{"target listen in range", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--listen", "198.18.0.5:80", "--client-ips", "198.18.0.1-9"}, "inside the client range"},
		{"target two cores afxdp", []string{"target", "--dataplane", "afxdp", "--interface", "x", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1", "--dataplane-cores", "2"}, "more than one core needs afpacket"},
		{"target more cores than ports", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1", "--client-ports", "5-6", "--dataplane-cores", "3"}, "3 cores over ports 5-6"},
		{"target missing interface", []string{"target", "--dataplane", "afpacket", "--interface", "cicnosuch0", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1"}, `no interface "cicnosuch0"`},
		{"target loopback", []string{"target", "--dataplane", "afpacket", "--interface", "lo", "--listen", "198.18.1.1:80", "--client-ips", "198.18.0.1"}, "loopback"},
		{"target option alone", []string{"target", "--client-ips", "198.18.0.1"}, "--client-ips requires --dataplane"},
		{"target body alone", []string{"target", "--body-size", "10"}, "--body-size requires --dataplane"},
		{"target extra argument", []string{"target", "extra"}, "unexpected arguments"},
		{"target h2c on the data plane", []string{"target", "--dataplane", "afpacket", "--h2c"}, "--h2c is not served by the data plane"},
		{"target stall with the data plane", []string{"target", "--dataplane", "afpacket", "--interface", "x", "--stall-for", "1s"}, "--stall-after and --stall-for are the kernel target's"},
		{"target negative stall", []string{"target", "--stall-for", "-1s"}, "--stall-after and --stall-for must not be negative"},
		{"rate with the data plane", append([]string{"--headless", "--client-ips", "198.18.0.1", "--arrival-rate", "10", "--max-in-flight", "2"}, dp...), "--arrival-rate cannot be combined with --dataplane"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tt.msg) {
				t.Errorf("cicada %q = exit %d, stderr:\n%s\nwant exit 2 and %q", tt.args, code, stderr.String(), tt.msg)
			}
		})
	}
}
