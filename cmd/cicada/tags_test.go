package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStandaloneTags runs cicada standalone headless with -T and -E: only
// the selected tasks' requests are counted, and a tag that matches no
// task is a warning.
func TestStandaloneTags(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 1 s load test")
	}
	srv := startTarget(t)
	path := writeScenario(t, `users:
  - name: Web
    wait: constant(0.02)
    tasks:
      - {path: /login, tags: [login, smoke]}
      - {path: /health, tags: [smoke, slow]}
      - {path: /browse}
`)
	prefix := filepath.Join(t.TempDir(), "OUT")
	var out bytes.Buffer
	var errb syncBuffer // tables and log from two goroutines, as on os.Stderr
	code := run([]string{"-f", path, "--headless", "-u", "2", "-r", "100", "-t", "1s", "-H", srv.URL(), "--csv", prefix,
		"-T", "smoke,nosuch", "-E", "slow"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errb.String())
	}
	data, err := os.ReadFile(prefix + "_stats.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range rows[1:] {
		counts[r[1]], _ = strconv.Atoi(r[2])
	}
	if counts["/login"] < 5 || counts["/health"] != 0 || counts["/browse"] != 0 {
		t.Errorf("counts %v; want /login only (tag smoke, not slow)", counts)
	}
	if !strings.Contains(errb.String(), `tag "nosuch" matches no task`) {
		t.Errorf("no warning for the tag that matches nothing; stderr:\n%s", errb.String())
	}
}
