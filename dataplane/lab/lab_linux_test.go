package lab_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/lab"
)

// newLab returns a lab removed at cleanup, or skips t where it cannot run.
func newLab(t testing.TB) *lab.Lab {
	t.Helper()
	if err := lab.Check(); err != nil {
		t.Skipf("data plane lab skipped: %v", err)
	}
	l, err := lab.New()
	if err != nil {
		t.Fatalf("lab.New = %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("lab Close = %v", err)
		}
	})
	return l
}

func ipOut(t testing.TB, args ...string) string {
	t.Helper()
	out, err := lab.Run("ip", args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

func TestLabBuildsAndRemovesKernelPair(t *testing.T) {
	l := newLab(t)
	metric := "metric " + itoa(os.Getpid())
	if out := ipOut(t, "route", "show", "type", "blackhole", lab.Range); !strings.Contains(out, metric) {
		t.Fatalf("no blackhole route with %s: %q", metric, out)
	}
	p, err := l.KernelPair()
	if err != nil {
		t.Fatalf("KernelPair = %v", err)
	}
	addrs, err := p.Client.Output("ip", "-4", "addr", "show", "dev", p.Cicada.Name)
	if err != nil || strings.Contains(addrs, "inet ") {
		t.Errorf("cicada end holds an IPv4 address or is missing: %q %v", addrs, err)
	}
	for _, e := range []*lab.End{p.Cicada, p.Peer} {
		out, err := e.Netns.Output("sysctl", "-n", "net.ipv4.conf."+e.Name+".forwarding")
		if err != nil || strings.TrimSpace(out) != "0" {
			t.Errorf("%s forwarding = %q %v; want 0", e.Name, out, err)
		}
		if off, err := e.Netns.Output("ethtool", "-k", e.Name); err == nil {
			for _, f := range []string{"tx-checksumming: off", "tcp-segmentation-offload: off", "generic-segmentation-offload: off", "generic-receive-offload: off"} {
				if !strings.Contains(off, f) {
					t.Errorf("%s: want %q", e.Name, f)
				}
			}
		}
	}
	neigh, _ := p.Server.Output("ip", "neigh", "show", lab.Gateway)
	if !strings.Contains(neigh, p.Cicada.MAC.String()) || !strings.Contains(neigh, "PERMANENT") {
		t.Errorf("gateway neighbour %q; want %s PERMANENT", neigh, p.Cicada.MAC)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if out := ipOut(t, "netns", "list"); strings.Contains(out, l.Prefix+"-") {
		t.Errorf("namespaces left after Close: %q", out)
	}
	if out := ipOut(t, "route", "show", "type", "blackhole", lab.Range); strings.Contains(out, metric) {
		t.Errorf("blackhole route left after Close: %q", out)
	}
}

func TestLabCleansStaleRuns(t *testing.T) {
	newLab(t) // skips where the lab cannot run
	// A namespace and route of a run whose process is gone: a PID above
	// the kernel's pid_max cannot be alive.
	const dead = "cic99999999-client"
	ipOut(t, "netns", "add", dead)
	ipOut(t, "route", "add", "blackhole", lab.Range, "metric", "99999999")
	if err := lab.CleanStale(); err != nil {
		t.Fatalf("CleanStale = %v", err)
	}
	if out := ipOut(t, "netns", "list"); strings.Contains(out, dead) {
		t.Errorf("stale namespace %s left", dead)
	}
	if out := ipOut(t, "route", "show", "type", "blackhole", lab.Range); strings.Contains(out, "metric 99999999") {
		t.Errorf("stale blackhole route left: %q", out)
	}
	if out := ipOut(t, "route", "show", "type", "blackhole", lab.Range); !strings.Contains(out, "metric "+itoa(os.Getpid())) {
		t.Errorf("this live run's route was removed: %q", out)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
