package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol/zmtp"
)

// TestClusterSecret runs a master and a worker that share a cluster secret
// file: a NULL peer (what a Python Locust worker or a cicada worker without
// the secret is) is refused and logged by the master, the worker with the
// secret runs the test, and its requests are all counted.
func TestClusterSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 2 s distributed test")
	}
	srv := startTarget(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("correct horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	scen := writeScenario(t, "users:\n  - name: Web\n    wait: constant(0.05)\n    tasks: [{path: /}]\n")
	prefix := filepath.Join(dir, "run")
	port := strconv.Itoa(freePort(t))

	var mlog syncBuffer
	masterDone := make(chan int, 1)
	go func() {
		var stdout bytes.Buffer
		masterDone <- run([]string{"--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", port,
			"--expect-workers", "1", "--expect-workers-max-wait", "60", "-u", "4", "-r", "4", "-t", "2s", "-H", srv.URL(),
			"-f", scen, "--csv", prefix, "--cluster-secret-file", secret}, &stdout, &mlog)
	}()

	intruder, err := zmtp.Dial("tcp://127.0.0.1:"+port, "intruder", zmtp.Options{ReconnectMin: 50 * time.Millisecond, Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(mlog.String(), "zmtp: refused peer") {
		if time.Now().After(deadline) {
			t.Fatalf("master did not log a refused NULL peer; stderr:\n%s", mlog.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	intruder.Close()

	var wlog syncBuffer
	workerDone := make(chan int, 1)
	go func() {
		var stdout bytes.Buffer
		workerDone <- run([]string{"--worker", "--master-host", "127.0.0.1", "--master-port", port, "-f", scen,
			"--cluster-secret-file", secret}, &stdout, &wlog)
	}()
	for name, ch := range map[string]chan int{"master": masterDone, "worker": workerDone} {
		select {
		case code := <-ch:
			if code != 0 {
				t.Fatalf("%s exit code %d; master stderr:\n%s\nworker stderr:\n%s", name, code, mlog.String(), wlog.String())
			}
		case <-time.After(90 * time.Second):
			t.Fatalf("%s still running after 90 s; master stderr:\n%s", name, mlog.String())
		}
	}
	total := csvAggregatedRequests(t, prefix+"_stats.csv")
	if served := srv.Counters().Requests; int64(total) != served || total == 0 {
		t.Errorf("CSV Aggregated requests = %d; target served %d", total, served)
	}
	if !strings.Contains(mlog.String(), "Cluster secret set") {
		t.Errorf("master did not say that the cluster secret is set; stderr:\n%s", mlog.String())
	}
}

// TestClusterSecretRefused: a cluster secret that cannot be used is a usage
// error (exit code 2), never ignored.
func TestClusterSecretRefused(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, "long")
	if err := os.WriteFile(long, bytes.Repeat([]byte("x"), 300), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"directory", []string{"--worker", "--cluster-secret-file", dir}, "not a regular file"},
		{"too long", []string{"--master", "--cluster-secret-file", long}, "longer than 255"},
		{"missing", []string{"--master", "--cluster-secret-file", filepath.Join(dir, "missing")}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tt.want) {
				t.Fatalf("run(%q) = %d, stderr %q; want 2 and %q", tt.args, code, errb.String(), tt.want)
			}
		})
	}
}

// TestStandaloneClusterSecret: standalone, the in-process worker presents
// the secret its master requires (CICADA_CLUSTER_SECRET).
func TestStandaloneClusterSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 1 s load test")
	}
	t.Setenv("CICADA_CLUSTER_SECRET", "standalone secret")
	srv := startTarget(t)
	path := writeScenario(t, "users:\n  - name: Web\n    wait: constant(0.05)\n    tasks: [{path: /}]\n")
	prefix := filepath.Join(t.TempDir(), "run")
	var out syncBuffer
	var stdout bytes.Buffer
	code := run([]string{"-f", path, "--headless", "-u", "2", "-r", "2", "-t", "1s", "-H", srv.URL(), "--csv", prefix,
		"--expect-workers-max-wait", "20"}, &stdout, &out)
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, out.String())
	}
	total := csvAggregatedRequests(t, prefix+"_stats.csv")
	if served := srv.Counters().Requests; int64(total) != served || total == 0 {
		t.Errorf("CSV Aggregated requests = %d; target served %d", total, served)
	}
}
