package main

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

const slowLocustfile = `from locust import HttpUser, task, constant

class SlowUser(HttpUser):
    wait_time = constant(30)

    @task
    def slow(self):
        self.client.get("/delay/4000")
`

const slowScenario = `users:
  - name: SlowUser
    wait: constant(30)
    tasks:
      - path: /delay/4000
`

// TestStopTimeoutAtRunTimeEnd: 5 users whose one request takes 4 s, with
// -t 3s -s 6. The run time ends while every request is in flight; the stop
// timeout lets them finish, so the run records 5 requests. Python Locust
// standalone runs the same test side by side against the same built-in
// target and records 5 too (issue #19 item 10: cicada recorded 0).
func TestStopTimeoutAtRunTimeEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 5 s test")
	}
	srv := startTarget(t)
	host := "http://" + srv.Addr().String()
	dir := t.TempDir()
	lout := filepath.Join(dir, "LOCUST")
	lp := testpeer.StartLocust(t, testpeer.LocustConfig{Dir: dir, Locustfile: slowLocustfile, Args: []string{
		"--headless", "-u", "5", "-r", "5", "-t", "3s", "-s", "6", "-H", host, "--csv", lout,
	}})
	cout := filepath.Join(dir, "CICADA")
	var out, errb syncBuffer
	begin := time.Now()
	code := run([]string{"-f", writeScenario(t, slowScenario), "--headless", "-u", "5", "-r", "5", "-t", "3s", "-s", "6",
		"-H", host, "--csv", cout}, &out, &errb)
	took := time.Since(begin)
	if code != 0 {
		t.Fatalf("cicada exit code %d; log:\n%s", code, errb.String())
	}
	if exited, _ := lp.Wait(30 * time.Second); !exited {
		t.Fatalf("Locust did not exit; log:\n%s", lp.Log())
	}
	// Locust writes its CSV files before the users stop: its final
	// console table is the reference. cicada's table and CSV agree.
	want := regexp.MustCompile(`GET +/delay/4000 +5 +0\(0\.00%\)`)
	if !want.MatchString(lp.Log()) {
		t.Errorf("Locust's final table does not count 5 requests; log:\n%s", lp.Log())
	}
	if !want.MatchString(errb.String()) {
		t.Errorf("cicada's final table does not count 5 requests; log:\n%s", errb.String())
	}
	row := testpeer.CSVRow(cout+"_stats.csv", "GET")
	if row == nil || row["Request Count"] != "5" || row["Failure Count"] != "0" {
		t.Errorf("cicada's stats CSV row %v; want 5 requests, 0 failures", row)
	}
	// The quit waits for the users, not for the whole stop timeout.
	if took > 8*time.Second {
		t.Errorf("cicada took %v; want the 4 s requests, not the 3+6 s bound", took)
	}
	t.Logf("cicada took %v", took)
}
