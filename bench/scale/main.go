// Command scale is issue 7's scale benchmark: on one machine, a cicada
// master, as many cicada worker processes as the open-files limit per
// process needs, and nginx with as many worker processes, hold N idle
// keep-alive users (the seed scenario: GET / then a 900 s wait) spawned at
// a fixed rate, with source addresses from 127.0.0.0/8; then a second round
// proves every connection still works. It reports connections held with
// zero failures, ramp time, user-space memory per connection (workers,
// nginx), kernel memory per connection pair (Slab), and CPU while idle.
//
// Every process it starts is ended by PID at exit (also on SIGINT/SIGTERM
// and on its overall -timeout).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

type options struct {
	bin          string
	users        int
	perWorker    int
	perNginx     int
	rate         float64
	settle       time.Duration
	idle         time.Duration
	timeout      time.Duration
	out          string
	sourceIPs    int
	port         int
	skipMemCheck bool
	compare      bool
	locustfile   string
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/cicada", "the cicada binary")
	flag.IntVar(&o.users, "users", 1000000, "users (connections) to hold")
	flag.IntVar(&o.perWorker, "per-worker", 19500, "users per cicada worker process (open-files limit 20,000)")
	flag.IntVar(&o.perNginx, "per-nginx", 17000, "connections per nginx worker process (worker_connections 19,500, reuseport spreads unevenly)")
	flag.Float64Var(&o.rate, "rate", 1600, "spawn rate, users per second")
	flag.DurationVar(&o.settle, "settle", 15*time.Second, "wait after the second round before measuring")
	flag.DurationVar(&o.idle, "idle", 30*time.Second, "window over which idle CPU is measured")
	flag.DurationVar(&o.timeout, "timeout", 0, "overall time bound (0: ramp time x 2 + 10 min)")
	flag.StringVar(&o.out, "out", "", "directory for logs and CSV (default: a temporary directory)")
	flag.IntVar(&o.sourceIPs, "source-ips", 0, "source addresses 127.0.0.2... (0: enough to keep each under half of its port range, x 1.5)")
	flag.IntVar(&o.port, "port", 18080, "nginx port on 127.0.0.1")
	flag.BoolVar(&o.skipMemCheck, "skip-memory-check", false, "run even if the memory estimate exceeds MemAvailable")
	flag.BoolVar(&o.compare, "compare", false, "instead: one cicada worker and one Locust FastHttpUser worker (each under its own master) hold -users each, side by side")
	flag.StringVar(&o.locustfile, "locustfile", "bench/http/locust_idle.py", "the Locust FastHttpUser idle scenario for -compare")
	flag.Parse()
	if o.timeout == 0 {
		o.timeout = time.Duration(float64(o.users)/o.rate*2*float64(time.Second)) + 10*time.Minute
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	r := &runner{o: o}
	var err error
	if o.compare {
		err = r.compare(ctx)
	} else {
		err = r.run(ctx)
	}
	r.cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

type runner struct {
	o       options
	dir     string
	nginx   *testpeer.Nginx
	master  *testpeer.Process
	workers []*testpeer.Process
}

func (r *runner) logf(format string, args ...any) {
	fmt.Printf("[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// start runs bin with its output in name.log under the run's directory.
func (r *runner) start(name string, env []string, bin string, args ...string) (*testpeer.Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	p, err := testpeer.StartProcess(cmd, filepath.Join(r.dir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

func (r *runner) cleanup() {
	if r.master != nil {
		_ = r.master.Stop(syscall.SIGINT, 60*time.Second)
	}
	for _, w := range r.workers {
		_ = w.Stop(syscall.SIGINT, 20*time.Second)
	}
	if r.nginx != nil {
		_ = r.nginx.StopWithin(syscall.SIGTERM, 30*time.Second)
	}
}

func (r *runner) run(ctx context.Context) error {
	o := r.o
	var err error
	if o.out == "" {
		if r.dir, err = os.MkdirTemp("", "cicada-scale-"); err != nil {
			return err
		}
	} else {
		r.dir = o.out
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return err
		}
	}
	nWorkers := (o.users + o.perWorker - 1) / o.perWorker
	nNginx := (o.users + o.perNginx - 1) / o.perNginx
	lo, hi := portRange()
	ips := o.sourceIPs
	if ips == 0 {
		// Keep every source address below half of its port range: past it,
		// Linux's connect() scans all even ports before each odd one and
		// the host's CPU goes to the kernel (diag.KindPortsSlow).
		ips = int(float64(o.users)/float64((hi-lo+1)/2)*1.5) + 1
	}
	if ips > 250 {
		return fmt.Errorf("%d source addresses needed; at most 250 (127.0.0.2-127.0.0.251)", ips)
	}
	srcRange := fmt.Sprintf("127.0.0.2-127.0.0.%d", 1+ips)
	// Memory budget: 8.3 KB kernel per loopback pair, about 3 KB per user in
	// a worker, 1.5 KB per nginx connection, 20 MB per process.
	estimate := int64(o.users)*(8500+3000+1500) + int64(nWorkers+nNginx+1)*20<<20
	avail := meminfo("MemAvailable") * 1024
	r.logf("%d users: %d cicada workers x %d, nginx with %d workers, %d source addresses (%s), spawn rate %.0f/s; estimated memory %.1f GiB of %.1f GiB available; logs in %s",
		o.users, nWorkers, o.perWorker, nNginx, ips, srcRange, o.rate, gib(estimate), gib(avail), r.dir)
	if estimate > avail && !o.skipMemCheck {
		return fmt.Errorf("estimated memory %.1f GiB exceeds MemAvailable %.1f GiB: lower -users", gib(estimate), gib(avail))
	}

	slab0 := meminfo("Slab")
	if err := r.startNginx(nNginx); err != nil {
		return err
	}
	nginxRSS0 := treeRSS(r.nginx)

	masterPort, err := testpeer.PickPort()
	if err != nil {
		return err
	}
	prefix := filepath.Join(r.dir, "run")
	r.master, err = r.start("master", nil, o.bin, "--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(masterPort),
		"--expect-workers", strconv.Itoa(nWorkers), "--expect-workers-max-wait", "300", "-u", strconv.Itoa(o.users), "-r", strconv.FormatFloat(o.rate, 'f', -1, 64),
		"--second-round", "-H", fmt.Sprintf("http://127.0.0.1:%d", o.port), "--csv", prefix, "--only-summary", "--loglevel", "INFO")
	if err != nil {
		return err
	}
	for i := 0; i < nWorkers; i++ {
		w, err := r.start(fmt.Sprintf("worker%02d", i), nil, o.bin, "--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(masterPort),
			"--source-ips", srcRange, "--loglevel", "INFO")
		if err != nil {
			return err
		}
		r.workers = append(r.workers, w)
	}
	masterLog := filepath.Join(r.dir, "master.log")
	if _, err := waitLog(ctx, masterLog, "Sending spawn jobs", r.master); err != nil {
		return fmt.Errorf("the test did not start: %w", err)
	}
	var workersRSS0 int64
	for _, w := range r.workers {
		workersRSS0 += rss(w.Pid())
	}
	r.logf("test started; baseline: workers RSS %.0f MiB, nginx RSS %.0f MiB, Slab %.0f MiB", mib(workersRSS0), mib(nginxRSS0), float64(slab0)/1024)

	last, lastAt := r.cpuTimes(), time.Now()
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
	spawned := make(chan string, 1)
	go func() {
		line, err := waitLog(ctx, masterLog, "All users spawned", r.master)
		if err != nil {
			line = "error: " + err.Error()
		}
		spawned <- line
	}()
	var spawnLine string
wait:
	for {
		select {
		case spawnLine = <-spawned:
			break wait
		case <-progress.C:
			tot := testpeer.CSVRow(prefix+"_connections.csv", "Total")
			c := r.cpuTimes()
			now := time.Now()
			dt := now.Sub(lastAt).Seconds()
			load, _ := os.ReadFile("/proc/loadavg")
			r.logf("ramp: established %s, connect errors %s, Slab %.0f MiB; CPU %% of a core: workers %.0f, master %.0f, nginx %.0f; load %s",
				tot["Established"], tot["Connect errors"], float64(meminfo("Slab"))/1024,
				(c["workers"]-last["workers"])/dt*100, (c["master"]-last["master"])/dt*100, (c["nginx"]-last["nginx"])/dt*100, strings.Join(strings.Fields(string(load))[:3], " "))
			last, lastAt = c, now
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if strings.HasPrefix(spawnLine, "error: ") {
		return errors.New(spawnLine)
	}
	startT, _ := logTime(firstLine(masterLog, "Sending spawn jobs"))
	endT, _ := logTime(spawnLine)
	ramp := endT.Sub(startT)
	r.logf("all users spawned after %v", ramp.Round(time.Second))

	roundLine, err := waitLog(ctx, masterLog, "reused their connection", r.master)
	if err != nil {
		return fmt.Errorf("no second round result: %w", err)
	}
	r.logf("%s", logMessage(roundLine))
	select {
	case <-time.After(o.settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	// Hold: memory and idle CPU.
	tot := testpeer.CSVRow(prefix+"_connections.csv", "Total")
	established, _ := strconv.ParseInt(tot["Established"], 10, 64)
	var workersRSS int64
	for _, w := range r.workers {
		workersRSS += rss(w.Pid())
	}
	nginxRSS := treeRSS(r.nginx)
	slab := meminfo("Slab")
	cpu0 := r.cpuTimes()
	t0 := time.Now()
	select {
	case <-time.After(o.idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	cpu1 := r.cpuTimes()
	wall := time.Since(t0).Seconds()
	tot2 := testpeer.CSVRow(prefix+"_connections.csv", "Total")

	// End the test: the master quits its workers and prints the summary.
	_ = r.master.Signal(syscall.SIGINT)
	select {
	case <-r.master.Done():
	case <-time.After(3 * time.Minute):
		return errors.New("the master did not exit within 3 minutes of SIGINT")
	}
	code := r.master.Cmd.ProcessState.ExitCode()
	summary, _ := os.ReadFile(masterLog)
	fails := aggregatedFailures(string(summary))
	connErrs := tot2["Connect errors"] + "/" + tot2["Errors"]

	pct := func(key string) float64 { return (cpu1[key] - cpu0[key]) / wall * 100 }
	fmt.Println()
	fmt.Println("| figure | value |")
	fmt.Println("|---|---:|")
	fmt.Printf("| users (target) | %d |\n", o.users)
	fmt.Printf("| connections held (established, all workers) | %d |\n", established)
	fmt.Printf("| request failures / connect errors / errors on open connections | %d / %s |\n", fails, connErrs)
	fmt.Printf("| %s | |\n", logMessage(roundLine))
	fmt.Printf("| master exit code | %d |\n", code)
	fmt.Printf("| ramp time (spawn rate %.0f/s) | %v |\n", o.rate, ramp.Round(time.Second))
	fmt.Printf("| processes | %d cicada workers, %d nginx workers, %d source IPs |\n", nWorkers, nNginx, ips)
	if established > 0 {
		fmt.Printf("| cicada workers RSS per connection (growth) | %.2f KB |\n", float64(workersRSS-workersRSS0)/float64(established)/1000)
		fmt.Printf("| nginx RSS per connection (growth) | %.2f KB |\n", float64(nginxRSS-nginxRSS0)/float64(established)/1000)
		fmt.Printf("| kernel Slab per connection pair (growth) | %.2f KB |\n", float64(slab-slab0)*1024/float64(established)/1000)
	}
	fmt.Printf("| workers RSS total / nginx RSS total / Slab growth | %.0f / %.0f / %.0f MiB |\n", mib(workersRSS), mib(nginxRSS), float64(slab-slab0)/1024)
	fmt.Printf("| CPU while idle, %s window (%% of one core): workers / master / nginx | %.1f / %.1f / %.1f |\n", o.idle, pct("workers"), pct("master"), pct("nginx"))
	fmt.Println()
	if established < int64(o.users) || fails > 0 || code != 0 {
		return fmt.Errorf("not every user held its connection: %d of %d, %d failures, master exit code %d", established, o.users, fails, code)
	}
	return nil
}

func (r *runner) startNginx(workers int) error {
	dir := filepath.Join(r.dir, fmt.Sprintf("nginx-%d", r.o.port))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var err error
	r.nginx, err = testpeer.NginxConfig{
		Dir: dir, Port: r.o.port, Workers: workers, Connections: 19500,
		ReusePort: true, Keepalive: time.Hour,
	}.Start()
	return err
}

// cpuTimes returns CPU seconds used so far by the workers, the master and
// nginx (master and workers).
func (r *runner) cpuTimes() map[string]float64 {
	m := map[string]float64{}
	for _, w := range r.workers {
		m["workers"] += cpuSeconds(w.Pid())
	}
	m["master"] = cpuSeconds(r.master.Pid())
	m["nginx"] = cpuSeconds(r.nginx.Pid())
	for _, c := range r.nginx.Children() {
		m["nginx"] += cpuSeconds(c)
	}
	return m
}

// ---- /proc helpers ----

func meminfo(key string) int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			f := strings.Fields(v)
			n, _ := strconv.ParseInt(f[0], 10, 64)
			return n
		}
	}
	return 0
}

func rss(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			n, _ := strconv.ParseInt(f[0], 10, 64)
			return n * 1024
		}
	}
	return 0
}

// treeRSS is the resident memory of nginx and its workers.
func treeRSS(n *testpeer.Nginx) int64 {
	total := rss(n.Pid())
	for _, c := range n.Children() {
		total += rss(c)
	}
	return total
}

func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

func portRange() (int, int) {
	b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768, 60999
	}
	lo, _ := strconv.Atoi(f[0])
	hi, _ := strconv.Atoi(f[1])
	return lo, hi
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }
func mib(b int64) float64 { return float64(b) / (1 << 20) }

// ---- logs and CSV ----

// waitLog polls a log file until a line contains sub; it fails when p
// exits first or ctx ends.
func waitLog(ctx context.Context, path, sub string, p *testpeer.Process) (string, error) {
	for {
		if line := firstLine(path, sub); line != "" {
			return line, nil
		}
		if !p.Alive() {
			return "", fmt.Errorf("%s exited before logging %q (see %s)", filepath.Base(p.Cmd.Path), sub, path)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %q: %w", sub, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func firstLine(path, sub string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), sub) {
			return sc.Text()
		}
	}
	return ""
}

var logTS = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]`)

func logTime(line string) (time.Time, error) {
	m := logTS.FindStringSubmatch(line)
	if m == nil {
		return time.Time{}, fmt.Errorf("no timestamp in %q", line)
	}
	t, err := time.ParseInLocation("2006-01-02 15:04:05", m[1], time.Local)
	ms, _ := strconv.Atoi(m[2])
	return t.Add(time.Duration(ms) * time.Millisecond), err
}

// logMessage strips the "[time] host/LEVEL/logger: " prefix.
func logMessage(line string) string {
	if i := strings.Index(line, ": "); i >= 0 && strings.HasPrefix(line, "[") {
		return line[i+2:]
	}
	return line
}

// aggregatedFailures reads the failures of the last Aggregated row of the
// summary table.
func aggregatedFailures(out string) int {
	n := -1
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[0] == "Aggregated" {
			if i := strings.IndexByte(f[2], '('); i > 0 {
				n, _ = strconv.Atoi(f[2][:i])
			}
		}
	}
	return n
}
