package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// TestHelperProcess is not a test: TestWebUIFailureExitCode runs the test
// binary again with CICADA_TEST_HELPER=1 so that this function runs cicada's
// main with the arguments after "--" and exits with its exit code.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("CICADA_TEST_HELPER") != "1" {
		t.Skip("helper process for process-level tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	childArgs = func(args []string) []string { // --worker --processes: children run this helper too
		return testpeer.SelfArgs("TestHelperProcess", append([]string{"--"}, args...)...)[1:] // [0] is the binary
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// runProcess runs cicada in a child process (the test binary with
// TestHelperProcess) and returns its exit code and stderr; it fails the
// test if the process has not ended within 30 s.
func runProcess(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A fresh home and working directory: no ~/.locust.conf or
	// ./locust.conf of this machine is read.
	cmd := testpeer.SelfCommand(ctx, "TestHelperProcess", []string{"CICADA_TEST_HELPER=1", "HOME=" + t.TempDir()}, append([]string{"--"}, args...)...)
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("cicada %q did not exit within 30 s; stderr:\n%s", args, stderr.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("cicada %q: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// TestWebUIFailureExitCode checks that a web UI that cannot start ends
// cicada with a non-zero exit code and a clear error (issue 20 item 8:
// --web-port 99999 and a missing --tls-cert exited with 0).
func TestWebUIFailureExitCode(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // after the parallel subtests
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	free := strconv.Itoa(freePort(t))
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"web port out of range", []string{"--web-port", "99999"}, 2, "--web-port: invalid port 99999"},
		{"web port busy", []string{"--web-host", "127.0.0.1", "--web-port", busyPort}, 1, "web interface cannot start: web: listen tcp 127.0.0.1:" + busyPort},
		{"missing tls files", []string{"--web-host", "127.0.0.1", "--web-port", free, "--tls-cert", missing, "--tls-key", missing}, 1, "web interface cannot start: web: tls: open " + missing},
		{"tls cert without key", []string{"--web-host", "127.0.0.1", "--web-port", free, "--tls-cert", missing}, 1, "web interface cannot start: web: a TLS certificate and its key must be given together"},
		{"master with busy web port", []string{"--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(freePort(t)), "--web-host", "127.0.0.1", "--web-port", busyPort}, 1, "web interface cannot start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stderr := runProcess(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.msg) {
				t.Errorf("cicada %q = exit %d, stderr:\n%s\nwant exit %d and %q", tt.args, code, stderr, tt.code, tt.msg)
			}
		})
	}
}
