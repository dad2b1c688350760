package config

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataplaneOptions checks the data plane's options from every source
// and the combinations refused with a usage error (exit 2 in cmd).
func TestDataplaneOptions(t *testing.T) {
	base := []string{"--worker", "--dataplane", "afpacket", "--interface", "veth0", "--client-ips", "198.18.0.1-198.18.0.200"}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		conf string
		want func(*Config) bool
		msg  string // refused with ErrUsage and this text
	}{
		{name: "cli", args: append(base, "--client-ports", "20000-20999", "--gateway", "198.18.0.254", "--dataplane-cores", "2", "--dataplane-dedicated"),
			want: func(c *Config) bool {
				return c.Dataplane == "afpacket" && c.Interface == "veth0" && c.ClientIPs == "198.18.0.1-198.18.0.200" && c.ClientPorts == "20000-20999" &&
					c.Gateway == "198.18.0.254" && c.DataplaneCores == 2 && c.DataplaneDedicated
			}},
		{name: "defaults", args: base, want: func(c *Config) bool {
			return c.ClientPorts == DefaultClientPorts && c.DataplaneCores == 0 && !c.DataplaneDedicated && c.Gateway == ""
		}},
		{name: "env", env: map[string]string{
			"CICADA_DATAPLANE": "afxdp", "CICADA_INTERFACE": "eth9", "CICADA_CLIENT_IPS": "198.18.0.0/24", "CICADA_CLIENT_PORTS": "1000-2000",
			"CICADA_GATEWAY": "198.18.0.254", "CICADA_DATAPLANE_CORES": "3", "CICADA_DATAPLANE_DEDICATED": "true",
		}, want: func(c *Config) bool {
			return c.Dataplane == "afxdp" && c.Interface == "eth9" && c.ClientIPs == "198.18.0.0/24" && c.ClientPorts == "1000-2000" &&
				c.Gateway == "198.18.0.254" && c.DataplaneCores == 3 && c.DataplaneDedicated
		}},
		{name: "conf", conf: "dataplane = afpacket\ninterface = eth8\nclient-ips = 198.18.0.1-9\ndataplane-dedicated\n",
			want: func(c *Config) bool {
				return c.Interface == "eth8" && c.ClientIPs == "198.18.0.1-9" && c.DataplaneDedicated
			}},
		{name: "cli beats env beats conf", args: []string{"--interface", "cli0"}, env: map[string]string{"CICADA_INTERFACE": "env0", "CICADA_CLIENT_IPS": "198.18.0.1"},
			conf: "dataplane = afpacket\ninterface = conf0\nclient-ips = 198.18.0.9\n",
			want: func(c *Config) bool { return c.Interface == "cli0" && c.ClientIPs == "198.18.0.1" }},
		{name: "standalone headless", args: []string{"--headless", "--dataplane", "afxdp", "--interface", "veth0", "--client-ips", "198.18.0.1", "-H", "http://198.18.1.1"},
			want: func(c *Config) bool { return c.Dataplane == "afxdp" && c.Headless }},

		{name: "dpdk", args: []string{"--worker", "--dataplane", "dpdk", "--dpdk-eal", "-l 2 -a 0000:03:00.0", "--dpdk-port", "0000:03:00.0", "--client-ips", "198.18.0.1"},
			want: func(c *Config) bool {
				return c.Dataplane == "dpdk" && c.DPDKEAL == "-l 2 -a 0000:03:00.0" && c.DPDKPort == "0000:03:00.0" && c.Interface == ""
			}},
		{name: "dpdk env", env: map[string]string{"CICADA_DATAPLANE": "dpdk", "CICADA_DPDK_EAL": "--vdev net_af_packet0,iface=eth1", "CICADA_DPDK_PORT": "net_af_packet0",
			"CICADA_INTERFACE": "eth1", "CICADA_CLIENT_IPS": "198.18.0.1"},
			want: func(c *Config) bool {
				return c.DPDKEAL == "--vdev net_af_packet0,iface=eth1" && c.DPDKPort == "net_af_packet0" && c.Interface == "eth1"
			}},
		{name: "dpdk conf", conf: "dataplane = dpdk\ndpdk-eal = -l 2 --vdev net_null0\ndpdk-port = net_null0\nclient-ips = 198.18.0.1\n",
			want: func(c *Config) bool { return c.DPDKEAL == "-l 2 --vdev net_null0" && c.DPDKPort == "net_null0" }},
		{name: "dpdk no port", args: []string{"--dataplane", "dpdk", "--client-ips", "198.18.0.1"}, msg: "--dataplane dpdk requires --dpdk-port"},
		{name: "dpdk eal without dpdk", args: append(base, "--dpdk-eal", "-l 0"), msg: "--dpdk-eal requires --dataplane dpdk"},
		{name: "dpdk idle sleep", args: []string{"--dataplane", "dpdk", "--dpdk-port", "0", "--dpdk-idle-sleep", "50us", "--client-ips", "198.18.0.1"},
			want: func(c *Config) bool { return c.DPDKIdleSleep == "50us" }},
		{name: "dpdk idle sleep alone", args: append(base, "--dpdk-idle-sleep", "50us"), msg: "--dpdk-idle-sleep requires --dataplane dpdk"},
		{name: "dpdk port alone", args: []string{"--dpdk-port", "0"}, msg: "--dpdk-port requires --dataplane dpdk"},
		{name: "unknown kind", args: []string{"--dataplane", "netmap", "--interface", "x", "--client-ips", "198.18.0.1"}, msg: `--dataplane: invalid choice "netmap" (choose from afpacket, afxdp, dpdk)`},
		{name: "unknown kind env", env: map[string]string{"CICADA_DATAPLANE": "AF_PACKET"}, msg: "invalid choice"},
		{name: "no interface", args: []string{"--dataplane", "afpacket", "--client-ips", "198.18.0.1"}, msg: "--dataplane requires --interface"},
		{name: "no client ips", args: []string{"--dataplane", "afpacket", "--interface", "veth0"}, msg: "--dataplane requires --client-ips"},
		{name: "master", args: append([]string{"--master"}, base[1:]...), msg: "--dataplane cannot be combined with --master"},
		{name: "source ips", args: append(base, "--source-ips", "127.0.0.1-127.0.0.9"), msg: "cannot be combined with --source-ips"},
		{name: "processes", args: append(base, "--processes", "2"), msg: "cannot be combined with --processes"},
		{name: "processes per cpu", args: append(base[1:], "--processes", "-1"), msg: "cannot be combined with --processes"},
		{name: "negative cores", args: append(base, "--dataplane-cores", "-1"), msg: "--dataplane-cores: must be 0-1024, got -1"},
		{name: "too many cores", args: append(base, "--dataplane-cores", "1025"), msg: "--dataplane-cores: must be 0-1024"},
		{name: "https host", args: append(base, "-H", "HTTPS://example.com"), msg: "cannot be combined with an https host"},
		{name: "interface alone", args: []string{"--interface", "veth0"}, msg: "--interface requires --dataplane"},
		{name: "client ips alone", args: []string{"--client-ips", "198.18.0.1"}, msg: "--client-ips requires --dataplane"},
		{name: "client ports alone", args: []string{"--client-ports", "1-2"}, msg: "--client-ports requires --dataplane"},
		{name: "gateway alone", args: []string{"--gateway", "198.18.0.254"}, msg: "--gateway requires --dataplane"},
		{name: "cores alone", args: []string{"--dataplane-cores", "2"}, msg: "--dataplane-cores requires --dataplane"},
		{name: "dedicated alone env", env: map[string]string{"CICADA_DATAPLANE_DEDICATED": "1"}, msg: "--dataplane-dedicated requires --dataplane"},
		{name: "interface alone conf", conf: "interface = eth0\n", msg: "--interface requires --dataplane"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, work := t.TempDir(), t.TempDir()
			if tt.conf != "" {
				if err := os.WriteFile(filepath.Join(work, "locust.conf"), []byte(tt.conf), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			getenv := func(k string) string { return tt.env[k] }
			cfg, err := NewParser(io.Discard, getenv, home, work).Parse(tt.args)
			if tt.msg != "" {
				if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("Parse(%q) = %v; want ErrUsage with %q", tt.args, err, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tt.args, err)
			}
			if !tt.want(cfg) {
				t.Errorf("Parse(%q) = %+v", tt.args, cfg)
			}
		})
	}
}
