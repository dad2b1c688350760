package main

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// TestConnectionsCSVTLS: a standalone run against an HTTPS server fills
// the TLS columns of PREFIX_connections.csv: every user's connection made
// one full handshake (session resumption is off by default), none failed,
// and the mean handshake time is a positive number of milliseconds.
func TestConnectionsCSVTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 2 s load test")
	}
	hs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer hs.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scenario.yaml")
	scenario := "http:\n  tls:\n    ca_file: ca.pem\n    server_name: example.com\nusers:\n  - name: U\n    wait: constant(0.1)\n    tasks: [{path: /}]\n"
	if err := os.WriteFile(path, []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, "run")
	var out, errb syncBuffer
	if code := run([]string{"-f", path, "--headless", "-u", "3", "-r", "3", "-t", "2s", "-H", hs.URL, "--csv", prefix, "--only-summary"}, &out, &errb); code != 0 {
		t.Fatalf("exit code %d; log:\n%s", code, errb.String())
	}
	tot := testpeer.CSVRow(prefix+"_connections.csv", "Total")
	if tot == nil {
		t.Fatalf("no Total row:\n%s", readFile(t, prefix+"_connections.csv"))
	}
	full, _ := strconv.Atoi(tot["TLS handshakes"])
	mean, err := strconv.ParseFloat(tot["Mean TLS handshake (ms)"], 64)
	if full != 3 || tot["TLS resumed"] != "0" || tot["TLS handshake failures"] != "0" || err != nil || mean <= 0 {
		t.Errorf("TLS columns %v; want 3 full handshakes, none resumed or failed, a positive mean\n%s", tot, readFile(t, prefix+"_connections.csv"))
	}
}
