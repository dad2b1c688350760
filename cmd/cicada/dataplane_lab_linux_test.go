package main

import (
	"context"
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/engine"
	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// The data plane's end-to-end tests (root; skipped otherwise): cicada
// processes (this test binary through TestHelperProcess) in the lab's
// namespaces and in the host's, each test removing its lab.

// labTimeout bounds each lab test's waits.
const labTimeout = 50 * time.Second

func newDataplaneLab(t *testing.T) *lab.Lab {
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

// startCicada starts cicada with args as a child process, inside ns (nil:
// the host's namespace); it is stopped (SIGTERM, then SIGKILL) at cleanup.
func startCicada(t *testing.T, ns *lab.Netns, name string, args ...string) *testpeer.Process {
	t.Helper()
	a := testpeer.SelfArgs("TestHelperProcess", append([]string{"--"}, args...)...)
	var cmd *exec.Cmd
	if ns == nil {
		cmd = exec.Command(a[0], a[1:]...)
	} else {
		cmd = ns.Command(a[0], a[1:]...)
	}
	cmd.Env = append(os.Environ(), "CICADA_TEST_HELPER=1", "HOME="+t.TempDir())
	cmd.Dir = t.TempDir()
	p, err := testpeer.StartProcess(cmd, filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Stop(syscall.SIGTERM, 10*time.Second)
		if t.Failed() {
			t.Logf("%s log:\n%s", name, tail(p.Log(), 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// waitLog waits until the process's log contains s.
func waitLog(t *testing.T, p *testpeer.Process, within time.Duration, s string) {
	t.Helper()
	if err := testpeer.Poll(within, 50*time.Millisecond, func() bool { return strings.Contains(p.Log(), s) || !p.Alive() }); err != nil || !strings.Contains(p.Log(), s) {
		t.Fatalf("log never showed %q (alive %v):\n%s", s, p.Alive(), tail(p.Log(), 4000))
	}
}

// stopCicada sends SIGINT and wants exit 0 within 20 s.
func stopCicada(t *testing.T, p *testpeer.Process) {
	t.Helper()
	if err := p.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exited, err := p.Wait(20 * time.Second)
	if !exited || err != nil {
		t.Fatalf("cicada after SIGINT: exited %v, %v; want exit 0\n%s", exited, err, tail(p.Log(), 4000))
	}
}

func ip4(s string) uint32 { return binary.BigEndian.Uint32(net.ParseIP(s).To4()) }

// TestTargetDataplaneHoldsConnections runs `cicada target --dataplane
// afpacket` in the lab's server namespace and holds connections on it from
// a client stack over AF_PACKET in the client namespace: every page served,
// the counters printed, SIGINT ends it with exit 0 and the totals.
func TestTargetDataplaneHoldsConnections(t *testing.T) {
	const conns = 5000
	l := newDataplaneLab(t)
	p, err := l.StackPair()
	if err != nil {
		t.Fatalf("StackPair = %v", err)
	}
	ports := "10000-" + strconv.Itoa(10000+conns-1)
	tg := startCicada(t, p.Server, "target", "target", "--dataplane", "afpacket", "--interface", p.Peer.Name,
		"--listen", lab.ServerIP+":80", "--client-ips", lab.ClientIP, "--client-ports", ports, "--dataplane-cores", "2", "--report-every", "200ms")
	waitLog(t, tg, labTimeout, "cicada target serving http://"+lab.ServerIP+":80/")

	var link *afpacket.Link
	if err := p.Client.Do(func() (err error) {
		link, err = afpacket.Open(afpacket.Config{Index: p.Cicada.Index, BlockSize: 64 << 10, Blocks: 512, RetireTimeout: time.Millisecond})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	client, err := stack.New(stack.Config{Mode: stack.Client, Link: link, ClientIP: ip4(lab.ClientIP), ServerIP: ip4(lab.ServerIP),
		PortMin: 10000, PortMax: 10000 + conns - 1, Hold: true, RetransmitTimeout: time.Second, MaxRetries: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), labTimeout)
	defer cancel()
	// In steps of 1,000, each once the previous has its responses, so at
	// most 1,000 handshakes are in flight (as the lab's own tests).
	const step = 1000
	for k := step; k <= conns && err == nil; k += step {
		loop := &engine.Loop{Stack: client, Waiter: link, Total: step, MaxOpen: k,
			Until: func(c *stack.Counters, n int) bool { return n == step && c.HTTP2xx == uint64(k) || c.SocketsFailed > 0 }}
		err = loop.Run(ctx)
	}
	c := client.Counters()
	if err != nil || c.HTTP2xx != conns || c.SocketsCurrent != conns || c.RstIn != 0 {
		t.Fatalf("client (%v): 2xx %d, open %d, RstIn %d, failed %d; want %d held", err, c.HTTP2xx, c.SocketsCurrent, c.RstIn, c.SocketsFailed, conns)
	}
	waitLog(t, tg, 10*time.Second, "open "+strconv.Itoa(conns)+", opened "+strconv.Itoa(conns)+", closed 0, failed 0, served "+strconv.Itoa(conns))
	stopCicada(t, tg)
	if want := "cicada target served " + strconv.Itoa(conns) + " pages on " + strconv.Itoa(conns) + " connections"; !strings.Contains(tg.Log(), want) {
		t.Errorf("target log lacks %q:\n%s", want, tail(tg.Log(), 2000))
	}
}
