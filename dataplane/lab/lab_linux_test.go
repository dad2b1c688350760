package lab_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestLabRemovedOnInterrupt runs a lab in a child process (this test
// binary again), interrupts it and checks that its namespaces and route
// are gone.
func TestLabRemovedOnInterrupt(t *testing.T) {
	if os.Getenv("CICADA_LAB_CHILD") == "1" {
		l, err := lab.New()
		if err == nil {
			_, err = l.KernelPair()
		}
		if err != nil {
			fmt.Fprintln(os.Stdout, "error", err)
			return
		}
		fmt.Fprintln(os.Stdout, "ready", l.Prefix)
		// Blocks until the parent's SIGINT (the lab's handler exits) or
		// until the parent closes stdin.
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = l.Close()
		return
	}
	newLab(t) // skips where the lab cannot run
	cmd := exec.Command(os.Args[0], "-test.run=^TestLabRemovedOnInterrupt$")
	cmd.Env = append(os.Environ(), "CICADA_LAB_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") || strings.HasPrefix(sc.Text(), "error ") {
				lines <- sc.Text()
			}
		}
		done <- cmd.Wait()
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("child lab not ready in 30 s")
	}
	prefix, ok := strings.CutPrefix(line, "ready ")
	if !ok {
		_ = cmd.Process.Kill()
		t.Fatalf("child: %s", line)
	}
	if !strings.Contains(ipOut(t, "netns", "list"), prefix+"-server") {
		t.Fatalf("child's namespaces missing before the interrupt")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("child did not exit in 30 s after SIGINT")
	}
	if out := ipOut(t, "netns", "list"); strings.Contains(out, prefix+"-") {
		t.Errorf("namespaces of the interrupted run left: %q", out)
	}
	if out := ipOut(t, "route", "show", "type", "blackhole", lab.Range); strings.Contains(out, "metric "+itoa(cmd.Process.Pid)) {
		t.Errorf("blackhole route of the interrupted run left: %q", out)
	}
}
