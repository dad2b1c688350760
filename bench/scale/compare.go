package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// pairResult is one generator's figures in the comparison.
type pairResult struct {
	name        string
	held        int
	ramp        time.Duration
	rssGrowth   int64
	rssTotal    int64
	cpuIdle     float64 // % of one core over the idle window
	cpuRamp     float64 // CPU seconds the worker used during the ramp
	failures    string
	nginxGrowth int64
}

// compare runs a cicada worker and a Locust FastHttpUser worker, each under
// its own master and against its own nginx (a fresh port, so no TIME_WAIT
// of the previous run is in the way), holding o.users idle users from one
// source address, and prints their memory and CPU per connection.
func (r *runner) compare(ctx context.Context) error {
	var err error
	if r.dir, err = os.MkdirTemp("", "cicada-compare-"); err != nil {
		return err
	}
	if r.o.out != "" {
		r.dir = r.o.out
		_ = os.MkdirAll(r.dir, 0o755)
	}
	if _, err := exec.LookPath("/usr/bin/locust"); err != nil {
		return fmt.Errorf("-compare needs Locust (Debian python3-locust): %w", err)
	}
	locustfile, err := filepath.Abs(r.o.locustfile)
	if err != nil {
		return err
	}
	var results []pairResult
	for i, kind := range []string{"cicada", "locust"} {
		res, err := r.pair(ctx, kind, r.o.port+i, locustfile)
		r.cleanup()
		r.master, r.workers, r.nginx = nil, nil, nil
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		results = append(results, res)
	}
	fmt.Println()
	fmt.Printf("| %d idle keep-alive users, one worker process, spawn rate %.0f/s | %s | %s |\n", r.o.users, r.o.rate, results[0].name, results[1].name)
	fmt.Println("|---|---:|---:|")
	row := func(label string, f func(p pairResult) string) {
		fmt.Printf("| %s | %s | %s |\n", label, f(results[0]), f(results[1]))
	}
	row("connections held (ss)", func(p pairResult) string { return strconv.Itoa(p.held) })
	row("request failures", func(p pairResult) string { return p.failures })
	row("ramp time", func(p pairResult) string { return p.ramp.Round(100 * time.Millisecond).String() })
	row("worker CPU during the ramp (s)", func(p pairResult) string { return fmt.Sprintf("%.1f", p.cpuRamp) })
	row("worker RSS at hold", func(p pairResult) string { return fmt.Sprintf("%.0f MiB", mib(p.rssTotal)) })
	row("worker RSS growth per connection", func(p pairResult) string {
		return fmt.Sprintf("%.2f KB", float64(p.rssGrowth)/float64(max(p.held, 1))/1000)
	})
	row("nginx RSS growth per connection", func(p pairResult) string {
		return fmt.Sprintf("%.2f KB", float64(p.nginxGrowth)/float64(max(p.held, 1))/1000)
	})
	row(fmt.Sprintf("worker CPU while idle (%% of a core, %s)", r.o.idle), func(p pairResult) string { return fmt.Sprintf("%.2f", p.cpuIdle) })
	row("worker CPU while idle per 1,000 connections (% of a core)", func(p pairResult) string {
		return fmt.Sprintf("%.4f", p.cpuIdle/float64(max(p.held, 1))*1000)
	})
	fmt.Println()
	return nil
}

func (r *runner) pair(ctx context.Context, kind string, port int, locustfile string) (pairResult, error) {
	res := pairResult{name: kind}
	saved := r.o.port
	r.o.port = port
	err := r.startNginx(1)
	r.o.port = saved
	if err != nil {
		return res, err
	}
	nginx0 := treeRSS(r.nginx)
	masterPort, err := testpeer.PickPort()
	if err != nil {
		return res, err
	}
	host := fmt.Sprintf("http://127.0.0.1:%d", port)
	// The seed scenario under the Locust class name, for both masters.
	scenario := filepath.Join(r.dir, "idle.yaml")
	if err := os.WriteFile(scenario, []byte("users:\n  - name: IdleUser\n    wait: constant(900)\n    tasks:\n      - path: /\n"), 0o644); err != nil {
		return res, err
	}
	users, rate := strconv.Itoa(r.o.users), strconv.FormatFloat(r.o.rate, 'f', -1, 64)
	var mbin, wbin string
	var margs, wargs []string
	switch kind {
	case "cicada":
		res.name = "cicada"
		mbin, wbin = r.o.bin, r.o.bin
		margs = []string{"--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(masterPort),
			"--expect-workers", "1", "-u", users, "-r", rate, "-H", host, "--only-summary", "--loglevel", "INFO", "-f", scenario}
		wargs = []string{"--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(masterPort), "--loglevel", "INFO", "-f", scenario}
	default:
		// Under a cicada master too: Debian's Locust 2.12.1 master rejects
		// its own workers (their version is ""), a cicada master does not.
		res.name = "Locust 2.12.1 FastHttpUser"
		mbin, wbin = r.o.bin, "/usr/bin/locust"
		margs = []string{"--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(masterPort),
			"--expect-workers", "1", "-u", users, "-r", rate, "-H", host, "--only-summary", "--loglevel", "INFO", "-f", scenario}
		wargs = []string{"-f", locustfile, "--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(masterPort), "--loglevel", "INFO"}
	}
	if r.master, err = r.start(kind+"-master", nil, mbin, margs...); err != nil {
		return res, err
	}
	w, err := r.start(kind+"-worker", nil, wbin, wargs...)
	if err != nil {
		return res, err
	}
	r.workers = []*testpeer.Process{w}
	pid := w.Pid()
	masterLog := filepath.Join(r.dir, kind+"-master.log")
	startLine, err := waitLog(ctx, masterLog, "Sending spawn jobs", r.master)
	if err != nil {
		return res, err
	}
	rss0, cpu0 := rss(pid), cpuSeconds(pid)
	// The ramp ends when every user holds its connection (ss), which for
	// Locust comes after its "All users spawned" (users start their first
	// request then).
	var t1 time.Time
	for {
		if n := ssEstablished(port); n >= r.o.users {
			t1 = time.Now()
			break
		}
		if !w.Alive() || !r.master.Alive() {
			return res, fmt.Errorf("%s exited during the ramp (logs in %s)", kind, r.dir)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	t0, _ := logTime(startLine)
	res.ramp = t1.Sub(t0)
	res.cpuRamp = cpuSeconds(pid) - cpu0
	r.logf("%s: %d connections after %v", kind, r.o.users, res.ramp.Round(100*time.Millisecond))
	select {
	case <-time.After(r.o.settle):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.held = ssEstablished(port)
	res.rssTotal = rss(pid)
	res.rssGrowth = res.rssTotal - rss0
	res.nginxGrowth = treeRSS(r.nginx) - nginx0
	c0, start := cpuSeconds(pid), time.Now()
	select {
	case <-time.After(r.o.idle):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.cpuIdle = (cpuSeconds(pid) - c0) / time.Since(start).Seconds() * 100
	_ = r.master.Signal(syscall.SIGINT)
	select {
	case <-r.master.Done():
	case <-time.After(2 * time.Minute):
	}
	out, _ := os.ReadFile(masterLog)
	res.failures = strconv.Itoa(aggregatedFailures(string(out)))
	return res, nil
}

// ssEstablished counts established client sockets to 127.0.0.1:port.
func ssEstablished(port int) int {
	out, err := exec.Command("ss", "-Htn", "state", "established", "dport", "=", ":"+strconv.Itoa(port)).Output()
	if err != nil {
		return 0
	}
	return strings.Count(string(out), "\n")
}
