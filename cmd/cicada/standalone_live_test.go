package main

import (
	"context"
	encsv "encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// liveScenario is the measurement: 20 users, 0.1 s wait.
const liveScenario = `users:
  - name: LiveUser
    wait: constant(0.1)
    tasks:
      - path: /
`

// TestStandaloneStatsAreLive runs cicada standalone with its web UI (a
// child process), starts 20 users with POST /swarm and polls
// /stats/requests: requests are counted within 1.5 s of the start (they
// were not for over 4 s with the in-process worker's 3 s reports), the
// count keeps moving at least once a second, and the log has none of the
// worker chatter a Locust standalone user never sees (issue #19 item 1).
func TestStandaloneStatsAreLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4 s test")
	}
	srv := startTarget(t)
	webPort := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	csv := filepath.Join(t.TempDir(), "OUT")
	cmd := testpeer.SelfCommand(ctx, "TestHelperProcess", []string{"CICADA_TEST_HELPER=1", "HOME=" + t.TempDir()},
		"--", "-f", writeScenario(t, liveScenario), "-H", "http://"+srv.Addr().String(),
		"--web-host", "127.0.0.1", "--web-port", strconv.Itoa(webPort), "--csv", csv)
	checkLive(t, cmd, webPort)
	// The CSV history moves every second: no repeated rows while 20
	// users run.
	f, err := os.Open(csv + "_stats_history.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := encsv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var counts []string
	for _, r := range rows[1:] {
		if r[1] == "20" && r[3] == "Aggregated" {
			counts = append(counts, r[17])
		}
	}
	if len(counts) < 2 {
		t.Fatalf("history has %d rows with 20 users; want at least 2: %q", len(counts), rows)
	}
	for i := 1; i < len(counts); i++ {
		prev, _ := strconv.Atoi(counts[i-1])
		cur, _ := strconv.Atoi(counts[i])
		if cur <= prev {
			t.Errorf("history's Total Request Count %v does not grow every second", counts)
			break
		}
	}
}

// TestStandaloneProcessesStatsAreLive: the same with --processes 1, whose
// worker is a child process of the cicada binary.
func TestStandaloneProcessesStatsAreLive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cicada and runs a 4 s test")
	}
	bin := buildCicada(t)
	srv := startTarget(t)
	webPort := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--processes", "1", "-f", writeScenario(t, liveScenario), "-H", "http://"+srv.Addr().String(),
		"--web-host", "127.0.0.1", "--web-port", strconv.Itoa(webPort))
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	checkLive(t, cmd, webPort)
}

// checkLive starts cmd (cicada standalone with its web UI on webPort), starts
// 20 users and checks that stats are live and the log has no worker chatter.
func checkLive(t *testing.T, cmd *exec.Cmd, webPort int) {
	t.Helper()
	cmd.Dir = t.TempDir()
	var stderr testpeer.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("cicada did not exit after SIGINT; log:\n%s", stderr.String())
		}
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", webPort)
	c := &http.Client{Timeout: 5 * time.Second}
	requests := func() int64 {
		resp, err := c.Get(base + "/stats/requests")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		var body struct {
			Stats []struct {
				Name        string `json:"name"`
				NumRequests int64  `json:"num_requests"`
			} `json:"stats"`
		}
		if json.NewDecoder(resp.Body).Decode(&body) != nil {
			return -1
		}
		for _, s := range body.Stats {
			if s.Name == "Aggregated" {
				return s.NumRequests
			}
		}
		return -1
	}
	testpeer.Eventually(t, 20*time.Second, "the web UI", func() bool { return requests() == 0 })

	start := time.Now()
	resp, err := c.PostForm(base+"/swarm", url.Values{"user_count": {"20"}, "spawn_rate": {"20"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var first time.Duration
	testpeer.Eventually(t, 10*time.Second, "requests counted", func() bool {
		if requests() > 0 {
			first = time.Since(start)
			return true
		}
		return false
	})
	t.Logf("first requests counted %v after POST /swarm", first)
	if first > 1500*time.Millisecond {
		t.Errorf("first requests counted %v after the start; want within 1.5 s", first)
	}
	// Live: the count moves in each of the next three seconds.
	prev := requests()
	for i := range 3 {
		var now int64
		testpeer.Eventually(t, 1100*time.Millisecond, fmt.Sprintf("the count to move in second %d", i+1), func() bool {
			now = requests()
			return now > prev
		})
		prev = now
	}
	log := stderr.String()
	for _, chatter := range []string{"Waiting for workers", "registered again", "Connections (worker)", "reported as ready",
		"Sending spawn jobs", "peer disconnected"} {
		if strings.Contains(log, chatter) {
			t.Errorf("standalone log has worker chatter %q:\n%s", chatter, log)
		}
	}
	if !strings.Contains(log, "Ramping to 20 users at a rate of 20.00 per second") {
		t.Errorf("standalone log lacks Locust standalone's 'Ramping to 20 users' line:\n%s", log)
	}
}
