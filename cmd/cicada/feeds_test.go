package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStandaloneUniqueFeedLogin: standalone cicada runs a scenario whose
// users log in with unique accounts from a CSV feed (handed out by the
// in-process master), capture the token and send it; the built-in target
// answers 401 without it, and the checks compare the user it names.
func TestStandaloneUniqueFeedLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 2 s load test")
	}
	srv := startTarget(t)
	path := writeScenario(t, `
feeds:
  - {name: accounts, file: accounts.csv, mode: unique, on_exhausted: fail}
users:
  - name: Web
    wait: constant(0.05)
    feed: accounts
    on_start:
      - method: POST
        path: /auth/login
        json: {user: "${username}", password: "${password}"}
        capture: {token: {json: $.token}}
    tasks:
      - path: /auth/account
        headers: {Authorization: "Bearer ${token}"}
        checks: {json: {$.user: "${username}"}}
`)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "accounts.csv"), []byte("username,password\nann,1\nbob,2\ncid,3\ndee,4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(t.TempDir(), "run")
	var out syncBuffer
	var stdout bytes.Buffer
	code := run([]string{"-f", path, "--headless", "-u", "4", "-r", "4", "-t", "2s", "-H", srv.URL(), "--csv", prefix}, &stdout, &out)
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, out.String())
	}
	stats, err := os.ReadFile(prefix + "_stats.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stats), `"GET","/auth/account"`) && !strings.Contains(string(stats), "GET,/auth/account") {
		t.Errorf("no /auth/account row in the stats:\n%s", stats)
	}
	fails, err := os.ReadFile(prefix + "_failures.csv")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimSpace(string(fails)), "\n"); n != 0 {
		t.Errorf("failures:\n%s", fails)
	}
}
