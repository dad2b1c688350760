package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/target"
)

const rateScenario = `users:
  - name: RateUser
    tasks:
      - path: /
`

// startStallTarget runs the built-in target with a scripted stall of
// stallFor, stallAfter after it starts.
func startStallTarget(t *testing.T, stallAfter, stallFor time.Duration) *target.Server {
	t.Helper()
	srv, err := target.New(target.Options{Listen: "127.0.0.1:0", StallAfter: stallAfter, StallFor: stallFor})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the target", 0, func(ctx context.Context) { _ = srv.Run(ctx) })
	return srv
}

func csvFloat(t *testing.T, row map[string]string, col string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(row[col], 64)
	if err != nil {
		t.Fatalf("column %q of %v: %v", col, row, err)
	}
	return v
}

// TestRateStallClosedVersusOpen runs the same 5 s test against a target
// that stalls every response for 1.5 s, 2 s after it starts: closed model
// (20 users, no wait) and open model (200 iterations/s, at most 20 in
// flight). The closed model's p99 hides the stall (its 20 users wait with
// the server, and the few stalled requests are under 1 % of the many fast
// ones); the open model's corrected p99 shows it, and it drops the
// iterations due while all 20 users are stuck: rate × stall − in-flight
// cap = 200 × 1.5 − 20 = 280, within ±60 (0.3 s of the rate: the stall's
// edges against the pacer's schedule and this busy machine's scheduling),
// and up to 100 more that a loaded machine may drop outside the stall.
func TestRateStallClosedVersusOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two 5 s load tests")
	}
	const (
		rate      = 200
		inFlight  = 20
		stall     = 1500 * time.Millisecond
		wantDrops = rate*1.5 - inFlight
		slack     = rate * 0.3
	)
	path := writeScenario(t, rateScenario)
	dir := t.TempDir()
	runOne := func(name string, args ...string) (string, string) {
		t.Helper()
		srv := startStallTarget(t, 2*time.Second, stall)
		prefix := filepath.Join(dir, name)
		var out, errb syncBuffer
		code := run(append([]string{"-f", path, "--headless", "-t", "5s", "-H", srv.URL(), "--csv", prefix, "--only-summary"}, args...), &out, &errb)
		if code != 0 {
			t.Fatalf("%s: exit code %d; log:\n%s", name, code, errb.String())
		}
		return prefix, errb.String()
	}
	closed, _ := runOne("closed", "-u", strconv.Itoa(inFlight), "-r", strconv.Itoa(inFlight))
	open, openLog := runOne("open", "--arrival-rate", strconv.Itoa(rate), "--max-in-flight", strconv.Itoa(inFlight))

	cRow := testpeer.CSVRow(closed+"_stats.csv", "")
	oRow := testpeer.CSVRow(open+"_stats.csv", "")
	rRow := testpeer.CSVRow(open+"_rate.csv", "")
	if cRow == nil || oRow == nil || rRow == nil {
		t.Fatalf("missing Aggregated rows: closed %v, open %v, rate %v", cRow, oRow, rRow)
	}
	closedP99 := csvFloat(t, cRow, "99%")
	openP99 := csvFloat(t, rRow, "Corrected 99%")
	dropped := csvFloat(t, rRow, "Dropped Iterations")
	t.Logf("closed: %s requests, p99 %v ms; open: %s requests, Locust p99 %s ms, corrected p99 %v ms, dropped %v (want %v ± %v)",
		cRow["Request Count"], closedP99, oRow["Request Count"], oRow["99%"], openP99, dropped, wantDrops, slack)
	if closedP99 >= 500 {
		t.Errorf("closed model p99 = %v ms: it should hide the 1.5 s stall", closedP99)
	}
	if openP99 < 1000 {
		t.Errorf("open model corrected p99 = %v ms: it should show the 1.5 s stall", openP99)
	}
	// Above: plus up to 10 % of the run's 1,000 iterations that a loaded
	// machine may drop outside the stall (users slowed by a busy CPU).
	if dropped < wantDrops-slack || dropped > wantDrops+slack+100 {
		t.Errorf("dropped %v iterations, want %v - %v .. + %v", dropped, wantDrops, slack, slack+100)
	}
	if !strings.Contains(openLog, "Arrival rate (cicada") || !strings.Contains(openLog, "Response time from the due time") {
		t.Errorf("the summary has no arrival-rate table:\n%s", openLog)
	}
	if strings.Contains(readFile(t, closed+"_stats.csv"), "Dropped") {
		t.Error("the Locust stats CSV changed its columns")
	}
	// One task: the worker attributes every drop to its request.
	if row := testpeer.CSVRow(open+"_rate.csv", "GET"); row == nil || row["Name"] != "/" || csvFloat(t, row, "Dropped Iterations") != dropped {
		t.Errorf("the GET / row of the rate CSV: %v; want all %v drops\n%s", row, dropped, readFile(t, open+"_rate.csv"))
	}
	if dropped > 0 && !strings.Contains(openLog, "Dropped iterations by name") {
		t.Errorf("the summary has no per-name drops:\n%s", openLog)
	}
}

// TestRateMixedClusterPythonWorker: a cicada master with an arrival rate,
// one cicada worker and one Python Locust worker. The master says once that
// the Python worker keeps its user count; the Python worker runs its users
// (closed model, its own wait) and the cicada worker takes the whole rate.
func TestRateMixedClusterPythonWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 6 s cluster test")
	}
	srv := startTarget(t)
	dir := t.TempDir()
	port := freePort(t)
	prefix := filepath.Join(dir, "OUT")
	var mout, merr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"-f", writeScenario(t, rateScenario), "--master", "--headless", "--expect-workers", "2",
			"--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(port),
			"--arrival-rate", "50", "--max-in-flight", "4", "-t", "6s", "-H", srv.URL(), "--csv", prefix}, &mout, &merr)
	}()
	py := testpeer.StartLocust(t, testpeer.LocustConfig{Dir: dir, Locustfile: `from locust import HttpUser, task, constant
class RateUser(HttpUser):
    wait_time = constant(0.5)
    @task
    def index(self):
        self.client.get("/py")
`, Args: []string{"--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(port)}})
	var wout, werr syncBuffer
	wdone := make(chan int, 1)
	go func() {
		wdone <- run([]string{"-f", writeScenario(t, rateScenario), "--worker", "--master-host", "127.0.0.1",
			"--master-port", strconv.Itoa(port)}, &wout, &werr)
	}()
	var code int
	select {
	case code = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the master did not end; log:\n%s", merr.String())
	}
	select {
	case <-wdone:
	case <-time.After(20 * time.Second):
		t.Errorf("the cicada worker did not quit")
	}
	if exited, _ := py.Wait(20 * time.Second); !exited {
		t.Errorf("the Python worker did not quit; log:\n%s", py.Log())
	}
	log := merr.String()
	if code != 0 {
		t.Fatalf("master exit code %d; log:\n%s", code, log)
	}
	if n := strings.Count(log, "Python Locust worker(s) cannot pace a rate and keep their user counts"); n != 1 {
		t.Errorf("%d lines about the Python worker, want 1; log:\n%s", n, log)
	}
	// The cicada worker paced 50/s for about 6 s on / (some 300 requests);
	// the Python worker sent about 2 per second per user on /py.
	cicada := testpeer.CSVRow(prefix+"_stats.csv", "GET")
	rows := readFile(t, prefix+"_stats.csv")
	t.Logf("stats CSV:\n%s", rows)
	if cicada == nil {
		t.Fatalf("no GET rows")
	}
	var slash, pyN float64
	for _, line := range strings.Split(rows, "\n") {
		f := strings.Split(line, ",")
		if len(f) > 2 && f[0] == "GET" && f[1] == "/" {
			slash, _ = strconv.ParseFloat(f[2], 64)
		}
		if len(f) > 2 && f[0] == "GET" && f[1] == "/py" {
			pyN, _ = strconv.ParseFloat(f[2], 64)
		}
	}
	// Iterations (sent or dropped) of the cicada worker: 50/s for the 6 s
	// less the ramp-up before the schedule starts.
	dropped := csvFloat(t, testpeer.CSVRow(prefix+"_rate.csv", ""), "Dropped Iterations")
	if n := slash + dropped; n < 200 || n > 330 {
		t.Errorf("the cicada worker ran %v iterations (%v dropped), want about 50/s × 6 s", n, dropped)
	}
	if pyN < 4 || pyN > 40 {
		t.Errorf("the Python worker sent %v requests, want its 2 users' closed-model load (about 24)", pyN)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRateScenarioStages: the scenario's load: form with a ramp, no -t:
// 0 → 100/s over 2 s, then 100/s until 4 s, 300 iterations; the test ends
// with the last stage.
func TestRateScenarioStages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4 s load test")
	}
	srv := startTarget(t)
	path := writeScenario(t, rateScenario+`load:
  max_in_flight: 10
  stages:
    - {duration: 2s, rate: 100, ramp: true}
    - {duration: 4s, rate: 100}
`)
	prefix := filepath.Join(t.TempDir(), "OUT")
	var out, errb syncBuffer
	begin := time.Now()
	if code := run([]string{"-f", path, "--headless", "-H", srv.URL(), "--csv", prefix, "--only-summary"}, &out, &errb); code != 0 {
		t.Fatalf("exit code %d; log:\n%s", code, errb.String())
	}
	took := time.Since(begin)
	r := testpeer.CSVRow(prefix+"_rate.csv", "")
	if r == nil {
		t.Fatalf("no rate CSV; log:\n%s", errb.String())
	}
	n := csvFloat(t, r, "Request Count") + csvFloat(t, r, "Dropped Iterations")
	t.Logf("%v iterations (%s dropped), requested mean %s/s, took %v", n, r["Dropped Iterations"], r["Requested Rate"], took)
	if n < 285 || n > 315 {
		t.Errorf("%v iterations, want 300 ± 15", n)
	}
	if req := csvFloat(t, r, "Requested Rate"); req < 74 || req > 76 {
		t.Errorf("requested mean rate %v, want 75", req)
	}
	if took > 20*time.Second {
		t.Errorf("the test took %v: it should end with the last stage (4 s)", took)
	}
}

// TestRateDroppedThreshold: with a rate, the dropped count feeds the
// thresholds: against a 1 s stall at 100/s with 5 users (about 95 dropped),
// dropped<10 fails with the thresholds' exit code and dropped<1000
// passes; without a rate a dropped threshold is refused.
func TestRateDroppedThreshold(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two 3 s load tests")
	}
	path := writeScenario(t, rateScenario)
	tests := []struct {
		threshold string
		rate      bool
		want      int
	}{
		{"dropped<10", true, master.ExitCodeThresholds},
		{"dropped<1000", true, 0},
		{"dropped<10", false, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s rate=%v", tt.threshold, tt.rate), func(t *testing.T) {
			srv := startStallTarget(t, time.Second, time.Second)
			args := []string{"-f", path, "--headless", "-t", "3s", "-H", srv.URL(), "--only-summary", "--threshold", tt.threshold}
			if tt.rate {
				args = append(args, "--arrival-rate", "100", "--max-in-flight", "5")
			} else {
				args = append(args, "-u", "5", "-r", "5")
			}
			var out, errb syncBuffer
			if code := run(args, &out, &errb); code != tt.want {
				t.Errorf("exit code %d, want %d; log:\n%s", code, tt.want, errb.String())
			}
			if !tt.rate && !strings.Contains(errb.String(), "counts no dropped iterations") {
				t.Errorf("the refusal does not say why; log:\n%s", errb.String())
			}
		})
	}
}
