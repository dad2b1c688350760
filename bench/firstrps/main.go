// Command firstrps measures, side by side, what a Locust user meets first in
// standalone mode: the time from POST /swarm to the first requests counted
// in /stats/requests and to the first non-zero total RPS there, for cicada
// standalone (the binary given by -cicada) and Python Locust standalone
// (Debian's python3-locust), with the same scenario (-users users, one
// GET / every -wait) against the same built-in target (`cicada target`).
//
// Everything runs on 127.0.0.1; each run is bounded by -timeout and -runs.
// Usage (after `make build`):
//
//	go run ./bench/firstrps -cicada bin/cicada -runs 3
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

type config struct {
	cicada  string
	users   int
	wait    float64
	runs    int
	timeout time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.cicada, "cicada", "bin/cicada", "cicada binary")
	flag.IntVar(&c.users, "users", 20, "users")
	flag.Float64Var(&c.wait, "wait", 0.1, "each user's wait between requests, seconds")
	flag.IntVar(&c.runs, "runs", 3, "runs of each tool")
	flag.DurationVar(&c.timeout, "timeout", 15*time.Second, "longest wait for a non-zero RPS in one run")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "firstrps:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.runs < 1 || c.runs > 20 || c.users < 1 || c.users > 1000 {
		return fmt.Errorf("-runs must be 1-20 and -users 1-1000")
	}
	dir, err := os.MkdirTemp("", "firstrps")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tport, err := testpeer.PickPort()
	if err != nil {
		return err
	}
	target := fmt.Sprintf("127.0.0.1:%d", tport)
	tp, err := testpeer.StartProcess(exec.Command(c.cicada, "target", "--listen", target), filepath.Join(dir, "target.log"))
	if err != nil {
		return fmt.Errorf("cicada target: %w", err)
	}
	defer func() { _ = tp.Stop(syscall.SIGTERM, 10*time.Second) }()
	host := "http://" + target
	if err := testpeer.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		resp, err := http.Get(host + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}); err != nil {
		return fmt.Errorf("the target did not answer: %w", err)
	}
	yaml := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(yaml, fmt.Appendf(nil, "users:\n  - name: FirstUser\n    wait: constant(%g)\n    tasks: [{path: /}]\n", c.wait), 0o600); err != nil {
		return err
	}
	locustfile := fmt.Sprintf("from locust import HttpUser, task, constant\n\nclass FirstUser(HttpUser):\n    wait_time = constant(%g)\n\n    @task\n    def index(self):\n        self.client.get(\"/\")\n", c.wait)

	fmt.Printf("%d users, one GET / every %g s, against cicada target at %s; %d runs each\n", c.users, c.wait, target, c.runs)
	fmt.Printf("%-8s %4s %22s %22s\n", "tool", "run", "first requests (s)", "first non-zero RPS (s)")
	for i := 1; i <= c.runs; i++ {
		for _, tool := range []string{"cicada", "locust"} {
			port, err := testpeer.PickPort()
			if err != nil {
				return err
			}
			web := []string{"--web-host", "127.0.0.1", "--web-port", strconv.Itoa(port), "-H", host}
			var p *testpeer.Process
			if tool == "cicada" {
				p, err = testpeer.StartProcess(exec.Command(c.cicada, append([]string{"-f", yaml}, web...)...), filepath.Join(dir, fmt.Sprintf("cicada%d.log", i)))
			} else {
				ldir := filepath.Join(dir, fmt.Sprintf("locust%d", i))
				if err := os.Mkdir(ldir, 0o700); err != nil {
					return err
				}
				p, err = testpeer.LocustConfig{Dir: ldir, Locustfile: locustfile, Args: web}.Start()
			}
			if err != nil {
				return fmt.Errorf("%s: %w", tool, err)
			}
			reqs, rps, err := measure(fmt.Sprintf("http://127.0.0.1:%d", port), c)
			_ = p.Stop(syscall.SIGTERM, 20*time.Second)
			if err != nil {
				return fmt.Errorf("%s run %d: %w; log:\n%s", tool, i, err, p.Log())
			}
			fmt.Printf("%-8s %4d %22.2f %22.2f\n", tool, i, reqs.Seconds(), rps.Seconds())
		}
	}
	return nil
}

// measure waits for the web UI, POSTs /swarm and polls /stats/requests
// every 20 ms; it returns the times to the first counted request and to the
// first non-zero total_rps.
func measure(base string, c config) (reqs, rps time.Duration, err error) {
	cl := &http.Client{Timeout: 2 * time.Second}
	type stats struct {
		TotalRPS float64 `json:"total_rps"`
		Stats    []struct {
			Name        string `json:"name"`
			NumRequests int64  `json:"num_requests"`
		} `json:"stats"`
	}
	get := func() (stats, error) {
		var s stats
		resp, err := cl.Get(base + "/stats/requests")
		if err != nil {
			return s, err
		}
		defer resp.Body.Close()
		return s, json.NewDecoder(resp.Body).Decode(&s)
	}
	if err := testpeer.Poll(20*time.Second, 20*time.Millisecond, func() bool { _, err := get(); return err == nil }); err != nil {
		return 0, 0, fmt.Errorf("the web UI did not answer: %w", err)
	}
	start := time.Now()
	resp, err := cl.PostForm(base+"/swarm", url.Values{"user_count": {strconv.Itoa(c.users)}, "spawn_rate": {strconv.Itoa(c.users)}})
	if err != nil {
		return 0, 0, err
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for reqs == 0 || rps == 0 {
		select {
		case <-ctx.Done():
			return reqs, rps, fmt.Errorf("no non-zero RPS within %v", c.timeout)
		case <-t.C:
		}
		s, err := get()
		if err != nil {
			continue
		}
		for _, e := range s.Stats {
			if e.Name == "Aggregated" && e.NumRequests > 0 && reqs == 0 {
				reqs = time.Since(start)
			}
		}
		if s.TotalRPS > 0 && rps == 0 {
			rps = time.Since(start)
		}
	}
	return reqs, rps, nil
}
