//go:build linux

package target

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// emfileLimit is the RLIMIT_NOFILE of the target child process: room for
// the runtime's own descriptors and a few dozen connections.
const emfileLimit = 48

// TestHelperTargetLowFileLimit is not a test: TestTargetSurvivesEMFILE runs
// the test binary again with TARGET_EMFILE_CHILD=1, and this function then
// lowers its RLIMIT_NOFILE, serves a target, prints its address and serves
// until stdin closes.
func TestHelperTargetLowFileLimit(t *testing.T) {
	if os.Getenv("TARGET_EMFILE_CHILD") != "1" {
		t.Skip("helper process for TestTargetSurvivesEMFILE")
	}
	lim := syscall.Rlimit{Cur: emfileLimit, Max: emfileLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stdout, "ERR setrlimit:", err)
		os.Exit(1)
	}
	s, err := New(Options{Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stdout, "ERR", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Fprintln(os.Stdout, "ADDR", s.Addr())
	if err := s.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "RUN ENDED:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// TestTargetSurvivesEMFILE runs a target with a low file limit in a child
// process, exhausts its descriptors with connections, releases them, and
// checks that the target serves again (issue 20 item 6: `cicada target`
// exited for good on EMFILE, so a load test could kill its own target).
func TestTargetSurvivesEMFILE(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := testpeer.SelfCommand(ctx, "TestHelperTargetLowFileLimit", []string{"TARGET_EMFILE_CHILD=1"})
	var stderr testpeer.SyncBuffer
	cmd.Stderr = &stderr
	stdin, out := startPipedChild(t, cmd)
	exited := make(chan error, 1)
	defer func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			t.Errorf("target child did not exit after stdin closed")
			cmd.Process.Kill()
		}
	}()
	addr, err := testpeer.ChildLine(bufio.NewScanner(out), "ADDR ")
	if err != nil {
		t.Fatalf("target child gave no address: %v; stderr:\n%s", err, stderr.String())
	}
	go func() { io.Copy(io.Discard, out); exited <- cmd.Wait() }()

	// Open far more connections than the child has descriptors; the
	// kernel completes them into the accept queue, the child accepts until
	// EMFILE.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 4*emfileLimit; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v (did the target exit?); stderr:\n%s", i, err, stderr.String())
		}
		conns = append(conns, c)
	}
	if err := testpeer.Poll(20*time.Second, 10*time.Millisecond, func() bool { return strings.Contains(stderr.String(), "accept failed") }); err != nil {
		t.Fatalf("target child never ran out of descriptors; stderr:\n%s", stderr.String())
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil

	// Released: the target must serve again.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var getErr error
	serves := func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("target child exited (%v) after running out of descriptors; stderr:\n%s", err, stderr.String())
		default:
		}
		res, err := client.Get("http://" + addr + "/")
		if getErr = err; err != nil {
			return false
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}
	if err := testpeer.Poll(20*time.Second, 20*time.Millisecond, serves); err != nil {
		t.Fatalf("target does not serve 20 s after the connections closed: %v; stderr:\n%s", getErr, stderr.String())
	}
	if !strings.Contains(stderr.String(), "accepting again") {
		t.Errorf("no recovery logged; stderr:\n%s", stderr.String())
	}
}
