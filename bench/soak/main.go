// Command soak runs a cicada master under a steady stream of hostile inputs
// for a while and checks that it stays healthy: a master process (the
// binary given by -cicada) with N real cicada worker processes loading the
// built-in target (`cicada target`), and M fake workers in this process
// that keep sending malformed frames, mistyped messages, client_ready
// floods, huge, negative and NaN stats values under ever new names, unknown
// user classes, churned identities, and slow web requests. Every -interval
// it samples the master's RSS, CPU, open fds (/proc/PID/fd) and threads
// (the master exposes no goroutine count, so goroutines are not sampled),
// and prints a table; at the end it checks that the master's count of the
// real workers' requests equals what the target served, and that RSS and
// fds are flat (the mean of the last third of the samples against the
// first third).
//
// Everything runs on 127.0.0.1; every loop is bounded by -duration and by a
// count. Usage (after `make build`):
//
//	go run ./bench/soak -cicada bin/cicada -duration 60s
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cicada-load/cicada/protocol/zmtp"
)

// The real workers' scenario: one class, one GET / per user every wait.
const scenarioFmt = "users:\n  - name: SoakUser\n    wait: constant(%g)\n    tasks: [{path: /}]\n"

type config struct {
	cicada    string
	duration  time.Duration
	interval  time.Duration
	workers   int
	fakes     int
	users     int
	rate      float64
	wait      float64
	pace      time.Duration
	slowConns int
	dir       string
	secret    string
}

func main() {
	var c config
	flag.StringVar(&c.cicada, "cicada", "bin/cicada", "cicada binary to soak (master, workers and target)")
	flag.DurationVar(&c.duration, "duration", 10*time.Minute, "how long the hostile load runs")
	flag.DurationVar(&c.interval, "interval", 5*time.Second, "sampling interval")
	flag.IntVar(&c.workers, "workers", 2, "real cicada worker processes")
	flag.IntVar(&c.fakes, "fakes", 4, "fake (hostile) workers in this process")
	flag.IntVar(&c.users, "users", 20, "users of the real test")
	flag.Float64Var(&c.rate, "rate", 10, "spawn rate of the real test")
	flag.Float64Var(&c.wait, "wait", 0.2, "seconds each real user waits between requests")
	flag.DurationVar(&c.pace, "pace", 50*time.Millisecond, "pause between two hostile actions of one fake worker")
	flag.IntVar(&c.slowConns, "slow-conns", 2, "slow web connections each fake worker holds at most")
	flag.StringVar(&c.secret, "cluster-secret", "", "run the master and real workers with this CICADA_CLUSTER_SECRET (the fake workers have none: the master must refuse them all)")
	flag.StringVar(&c.dir, "dir", "", "directory for logs and the scenario (default: a new temporary directory, kept)")
	flag.Parse()
	if c.duration <= 0 || c.interval <= 0 || c.workers < 1 || c.fakes < 0 || c.users < 1 || c.rate <= 0 || c.pace <= 0 {
		fmt.Fprintln(os.Stderr, "soak: -duration, -interval, -pace, -rate must be > 0, -workers and -users >= 1, -fakes >= 0")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Start-up and the final checks take well under 3 minutes: past that,
	// everything is stopped whatever state it is in.
	ctx, cancel := context.WithTimeout(ctx, c.duration+3*time.Minute)
	defer cancel()
	ok, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// proc is a started cicada process.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func start(dir, name, bin string, env []string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

// stop sends SIGTERM and waits up to grace, then SIGKILL. It reports whether
// the process ended by itself within grace.
func (p *proc) stop(grace time.Duration) bool {
	select {
	case <-p.done:
		return true
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.done
		return false
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func run(ctx context.Context, c config) (bool, error) {
	if _, err := os.Stat(c.cicada); err != nil {
		return false, fmt.Errorf("-cicada %s: %w (run make build)", c.cicada, err)
	}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "cicada-soak-")
		if err != nil {
			return false, err
		}
		c.dir = d
	} else if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return false, err
	}
	scen := filepath.Join(c.dir, "scenario.yaml")
	if err := os.WriteFile(scen, fmt.Appendf(nil, scenarioFmt, c.wait), 0o644); err != nil {
		return false, err
	}
	var ports [3]int
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return false, err
		}
		ports[i] = p
	}
	tport, mport, wport := ports[0], ports[1], ports[2]
	targetURL := fmt.Sprintf("http://127.0.0.1:%d", tport)
	webURL := fmt.Sprintf("http://127.0.0.1:%d", wport)

	var procs []*proc
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop(5 * time.Second)
		}
	}()
	var env []string
	if c.secret != "" {
		env = []string{"CICADA_CLUSTER_SECRET=" + c.secret}
	}
	tgt, err := start(c.dir, "target", c.cicada, nil, "target", "--listen", fmt.Sprintf("127.0.0.1:%d", tport))
	if err != nil {
		return false, err
	}
	procs = append(procs, tgt)
	master, err := start(c.dir, "master", c.cicada, env, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(mport),
		"--web-host", "127.0.0.1", "--web-port", strconv.Itoa(wport), "-f", scen, "-H", targetURL,
		// Users stopped when the master moves them (every fake client_ready
		// makes it dispatch again) finish their request: a user stopped
		// forcibly mid-request leaves a request the target served and no
		// worker counted, which would spoil the exact-count check.
		"--stop-timeout", "10")
	if err != nil {
		return false, err
	}
	procs = append(procs, master)
	if err := waitHTTP(ctx, webURL+"/stats/requests", 30*time.Second); err != nil {
		return false, fmt.Errorf("master web UI: %w (log %s)", err, master.log)
	}
	if err := waitHTTP(ctx, targetURL+"/_cicada/stats", 30*time.Second); err != nil {
		return false, fmt.Errorf("target: %w", err)
	}
	for i := range c.workers {
		w, err := start(c.dir, fmt.Sprintf("worker-%d", i), c.cicada, env, "--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(mport),
			"-f", scen, "--node-id", fmt.Sprintf("soak-real-%d", i), "--loglevel", "WARNING")
		if err != nil {
			return false, err
		}
		procs = append(procs, w)
	}
	if err := waitWorkers(ctx, webURL, c.workers, 60*time.Second); err != nil {
		return false, err
	}
	form := url.Values{"user_count": {strconv.Itoa(c.users)}, "spawn_rate": {strconv.FormatFloat(c.rate, 'f', -1, 64)}, "host": {targetURL}}
	resp, err := http.PostForm(webURL+"/swarm", form)
	if err != nil {
		return false, fmt.Errorf("POST /swarm: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("POST /swarm: %s", resp.Status)
	}
	fmt.Printf("# cicada soak: %s, %d real workers, %d users (wait %gs), %d fake workers (pace %v), %v, samples every %v; logs in %s\n",
		c.cicada, c.workers, c.users, c.wait, c.fakes, c.pace, c.duration, c.interval, c.dir)

	loadCtx, stopLoad := context.WithTimeout(ctx, c.duration)
	defer stopLoad()
	h := &hostile{mport: mport, wport: wport, pace: c.pace, slow: c.slowConns}
	var fakes sync.WaitGroup
	for i := range c.fakes {
		fakes.Add(1)
		go func() { defer fakes.Done(); h.run(loadCtx, i) }()
	}
	samples := sample(loadCtx, master.pid(), webURL, c.interval)
	stopLoad()
	fakes.Wait()

	// Stop the test and let the last reports arrive, then compare.
	if resp, err := http.Get(webURL + "/stop"); err == nil {
		resp.Body.Close()
	}
	got, served, exact := checkExact(ctx, webURL, targetURL, 30*time.Second)
	if len(samples) > 0 {
		last := sampleOnce(master.pid(), webURL, samples[len(samples)-1], time.Now())
		printRow(last)
	}
	logInfo, _ := os.Stat(master.log)
	var logBytes int64
	if logInfo != nil {
		logBytes = logInfo.Size()
	}
	alive := true
	select {
	case <-master.done:
		alive = false
	default:
	}
	quit := master.stop(15 * time.Second)

	fmt.Println()
	fmt.Println("hostile actions:", h.summary())
	fmt.Printf("master log: %d bytes (%.1f KiB/min)\n", logBytes, float64(logBytes)/1024/c.duration.Minutes())
	pass := true
	check := func(ok bool, format string, args ...any) {
		verdict := "PASS"
		if !ok {
			verdict, pass = "FAIL", false
		}
		fmt.Printf("%s  %s\n", verdict, fmt.Sprintf(format, args...))
	}
	check(alive, "master alive at the end of the load")
	check(exact && got > 0, "real requests counted by the master (GET /): %d; served by the target: %d", got, served)
	if n := len(samples); n >= 3 {
		first, last := samples[:n/3], samples[n-n/3:]
		r1, r2 := mean(first, func(s row) float64 { return s.rssMiB }), mean(last, func(s row) float64 { return s.rssMiB })
		f1, f2 := mean(first, func(s row) float64 { return float64(s.fds) }), mean(last, func(s row) float64 { return float64(s.fds) })
		c1, c2 := mean(first, func(s row) float64 { return s.cores }), mean(last, func(s row) float64 { return s.cores })
		check(r2 <= r1*1.10+4, "RSS flat: first third %.1f MiB, last third %.1f MiB (limit +10%% +4 MiB)", r1, r2)
		check(f2 <= f1+16, "fds flat: first third %.1f, last third %.1f (limit +16)", f1, f2)
		fmt.Printf("info  master CPU: first third %.3f cores, last third %.3f cores, mean %.3f\n", c1, c2, mean(samples, func(s row) float64 { return s.cores }))
	} else {
		check(false, "at least 3 samples (got %d): lengthen -duration or shorten -interval", n)
	}
	check(quit, "master quits within 15 s of SIGTERM")
	return pass, nil
}

func mean(rs []row, f func(row) float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	var s float64
	for _, r := range rs {
		s += f(r)
	}
	return s / float64(len(rs))
}

var httpc = &http.Client{Timeout: 10 * time.Second}

func waitHTTP(ctx context.Context, u string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := httpc.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not up after %v: %w", u, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// requestsJSON is the part of GET /stats/requests the soak reads.
type requestsJSON struct {
	Stats []struct {
		Method      string `json:"method"`
		Name        string `json:"name"`
		NumRequests int64  `json:"num_requests"`
	} `json:"stats"`
	UserCount int `json:"user_count"`
	Workers   []struct {
		ID        string `json:"id"`
		State     string `json:"state"`
		UserCount int    `json:"user_count"`
	} `json:"workers"`
	State string `json:"state"`
}

func getRequests(webURL string) (*requestsJSON, error) {
	resp, err := httpc.Get(webURL + "/stats/requests")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r requestsJSON
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// realRequests is the master's count of GET / (only the real workers
// request it; the fake workers report other names).
func (r *requestsJSON) realRequests() int64 {
	for _, s := range r.Stats {
		if s.Method == "GET" && s.Name == "/" {
			return s.NumRequests
		}
	}
	return 0
}

// realUsers is the number of users the real workers report running.
func (r *requestsJSON) realUsers() int {
	n := 0
	for _, w := range r.Workers {
		if strings.HasPrefix(w.ID, "soak-real-") {
			n += w.UserCount
		}
	}
	return n
}

func waitWorkers(ctx context.Context, webURL string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if r, err := getRequests(webURL); err == nil {
			ready := 0
			for _, w := range r.Workers {
				if strings.HasPrefix(w.ID, "soak-real-") && w.State == "ready" {
					ready++
				}
			}
			if ready == n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d real workers not ready after %v", n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func targetServed(targetURL string) (int64, error) {
	resp, err := httpc.Get(targetURL + "/_cicada/stats")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var c struct {
		Requests int64 `json:"requests"`
	}
	err = json.NewDecoder(resp.Body).Decode(&c)
	return c.Requests, err
}

// checkExact waits (up to timeout) for the master's count of real requests
// to equal the target's, once the users stopped.
func checkExact(ctx context.Context, webURL, targetURL string, timeout time.Duration) (got, served int64, exact bool) {
	deadline := time.Now().Add(timeout)
	for {
		r, err := getRequests(webURL)
		s, err2 := targetServed(targetURL)
		if err == nil && err2 == nil {
			got, served = r.realRequests(), s
			if got == served && r.realUsers() == 0 {
				return got, served, true
			}
		}
		if time.Now().After(deadline) {
			return got, served, false
		}
		select {
		case <-ctx.Done():
			return got, served, false
		case <-time.After(time.Second):
		}
	}
}

// ---- sampling ----

type row struct {
	at      time.Time
	elapsed time.Duration
	rssMiB  float64
	cores   float64
	fds     int
	threads int
	ticks   int64
	users   int // all users the master counts (fake workers claim some)
	real    int // users on the real workers
	reqs    int64
}

func sample(ctx context.Context, pid int, webURL string, interval time.Duration) []row {
	start := time.Now()
	prev := row{at: start, ticks: cpuTicks(pid)}
	fmt.Printf("%8s %9s %9s %6s %8s %6s %10s %10s\n", "elapsed", "rss_MiB", "cpu_cores", "fds", "threads", "users", "real_users", "real_reqs")
	var rows []row
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return rows
		case now := <-t.C:
			r := sampleOnce(pid, webURL, prev, now)
			r.elapsed = now.Sub(start)
			printRow(r)
			rows = append(rows, r)
			prev = r
		}
	}
}

func sampleOnce(pid int, webURL string, prev row, now time.Time) row {
	r := row{at: now, elapsed: prev.elapsed + now.Sub(prev.at), ticks: cpuTicks(pid), rssMiB: float64(statusKiB(pid, "VmRSS:")) / 1024, threads: int(statusKiB(pid, "Threads:"))}
	if dt := now.Sub(prev.at).Seconds(); dt > 0 && prev.ticks > 0 {
		r.cores = float64(r.ticks-prev.ticks) / 100 / dt // USER_HZ is 100 on Linux
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		r.fds = len(ents)
	}
	if q, err := getRequests(webURL); err == nil {
		r.users, r.real, r.reqs = q.UserCount, q.realUsers(), q.realRequests()
	}
	return r
}

func printRow(r row) {
	fmt.Printf("%8s %9.1f %9.3f %6d %8d %6d %10d %10d\n", r.elapsed.Round(time.Second), r.rssMiB, r.cores, r.fds, r.threads, r.users, r.real, r.reqs)
}

func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64) // utime, field 14 of the line
	st, _ := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	return ut + st
}

// statusKiB returns the first number of a /proc/PID/status line.
func statusKiB(pid int, key string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			v, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return v
		}
	}
	return 0
}

// ---- hostile fake workers ----

// hostile holds the fake workers' targets and counts their actions.
type hostile struct {
	mport, wport int
	pace         time.Duration
	slow         int
	names        atomic.Int64 // next distinct hostile request name
	mu           sync.Mutex
	counts       map[string]int
}

func (h *hostile) count(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = map[string]int{}
	}
	h.counts[kind]++
}

func (h *hostile) summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k.name, h.counts[k.name]))
	}
	return strings.Join(parts, ", ")
}

type kind struct {
	name string
	do   func(h *hostile, ctx context.Context, f *fake) error
}

// kinds are the hostile actions, taken in turn by each fake worker.
var kinds = []kind{
	{"garbage-tcp", (*hostile).garbageTCP},
	{"bad-frames", (*hostile).badFrames},
	{"mistyped", (*hostile).mistyped},
	{"client-ready-flood", (*hostile).clientReadyFlood},
	{"bad-stats", (*hostile).badStats},
	{"unknown-classes", (*hostile).unknownClasses},
	{"churn", (*hostile).churn},
	{"slow-web", (*hostile).slowWeb},
}

// fake is one fake worker: a long-lived registered Dealer plus whatever
// each action opens.
type fake struct {
	id   string
	d    *zmtp.Dealer
	slow atomic.Int32 // slow web connections held
	wg   sync.WaitGroup
}

// maxActions bounds each fake worker's actions whatever the duration.
const maxActions = 1_000_000

func (h *hostile) run(ctx context.Context, i int) {
	f := &fake{id: fmt.Sprintf("soak-fake-%d", i)}
	d, err := zmtp.Dial(h.endpoint(), f.id, zmtp.Options{SendQueue: 1000, Linger: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: fake worker:", err)
		return
	}
	f.d = d
	defer func() { f.wg.Wait(); d.Close() }()
	h.send(f, "client_ready", "2.0.0")
	go drain(ctx, d)
	for n := 0; n < maxActions; n++ {
		k := kinds[(n+i)%len(kinds)]
		if err := k.do(h, ctx, f); err == nil {
			h.count(k.name)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(h.pace):
		}
	}
}

// drain reads and drops what the master sends a fake worker (acks, spawns).
func drain(ctx context.Context, d *zmtp.Dealer) {
	for {
		if _, err := d.Recv(ctx); err != nil {
			return
		}
	}
}

func (h *hostile) endpoint() string { return fmt.Sprintf("tcp://127.0.0.1:%d", h.mport) }

func encode(typ string, data any, id string) []byte {
	b, err := msgpack.Marshal([]any{typ, data, id})
	if err != nil {
		panic(err) // only our own literals are encoded
	}
	return b
}

func (h *hostile) send(f *fake, typ string, data any) error {
	return f.d.Send(encode(typ, data, f.id))
}

func dialMaster(h *hostile) (net.Conn, error) {
	return net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", h.mport), 2*time.Second)
}

// garbageTCP connects and sends bytes that are not ZMTP.
func (h *hostile) garbageTCP(_ context.Context, _ *fake) error {
	nc, err := dialMaster(h)
	if err != nil {
		return err
	}
	defer nc.Close()
	buf := make([]byte, 256)
	for i := range buf {
		buf[i] = byte(rand.IntN(256))
	}
	buf[0] = 0x01 // never a valid signature
	nc.SetDeadline(time.Now().Add(2 * time.Second))
	_, err = nc.Write(buf)
	return err
}

// greeting is a ZMTP 3.1 NULL greeting, READY announces a DEALER.
func nullHello(identity string) []byte {
	b := []byte{0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 1}
	b = append(b, "NULL"...)
	b = append(b, make([]byte, 16+1+31)...)
	prop := func(dst []byte, name, value string) []byte {
		dst = append(dst, byte(len(name)))
		dst = append(dst, name...)
		dst = append(dst, byte(len(value)>>24), byte(len(value)>>16), byte(len(value)>>8), byte(len(value)))
		return append(dst, value...)
	}
	body := append([]byte{5}, "READY"...)
	body = prop(body, "Socket-Type", "DEALER")
	body = prop(body, "Identity", identity)
	b = append(b, 0x04, byte(len(body)))
	return append(b, body...)
}

// badFrames completes a handshake by hand, then sends broken frames: a
// reserved flag, a 2^50-byte header, a message cut short.
func (h *hostile) badFrames(_ context.Context, f *fake) error {
	nc, err := dialMaster(h)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(2 * time.Second))
	bad := [][]byte{
		{0xF9, 3, 'a', 'b', 'c'},
		{0x02, 0, 4, 0, 0, 0, 0, 0, 0},
		{0x01, 10, 'x'},
	}
	msg := append(nullHello(fmt.Sprintf("%s-raw-%d", f.id, rand.IntN(1000))), bad[rand.IntN(len(bad))]...)
	_, err = nc.Write(msg)
	if err == nil {
		io.Copy(io.Discard, io.LimitReader(nc, 4096)) // until the master drops us, or the deadline
	}
	return nil
}

// mistyped sends well-framed messages of the wrong shape.
func (h *hostile) mistyped(_ context.Context, f *fake) error {
	junk := make([]byte, 64)
	for i := range junk {
		junk[i] = byte(rand.IntN(256))
	}
	msgs := [][]byte{
		junk,
		encode("stats", "not a map", f.id),
		encode("heartbeat", map[string]any{"state": 7, "current_cpu_usage": "high", "current_memory_usage": -1}, f.id),
		encode("spawning_complete", map[string]any{"user_classes_count": "none", "user_count": "x"}, f.id),
		encode("no_such_type", []any{1, 2, 3}, f.id),
		mustMarshal([]any{1, 2, 3}),
		mustMarshal(map[string]any{"type": "stats"}),
		encode("exception", map[string]any{"msg": 5, "traceback": nil}, f.id),
	}
	for _, m := range msgs {
		if err := f.d.Send(m); err != nil {
			return err
		}
	}
	return nil
}

func mustMarshal(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// clientReadyFlood sends 100 client_ready messages at once.
func (h *hostile) clientReadyFlood(_ context.Context, f *fake) error {
	for range 100 {
		if err := h.send(f, "client_ready", "2.0.0"); err != nil {
			return err
		}
	}
	return nil
}

// badStats sends a stats report with huge, negative and non-finite values,
// under names never seen before (10 new names per report).
func (h *hostile) badStats(_ context.Context, f *fake) error {
	now := float64(time.Now().Unix())
	entry := func(name string, n int64, rt float64, start float64) map[string]any {
		return map[string]any{
			"name": name, "method": "GET", "last_request_timestamp": now, "start_time": start,
			"num_requests": n, "num_none_requests": 0, "num_failures": n / 2,
			"total_response_time": rt, "max_response_time": rt, "min_response_time": rt,
			"total_content_length": n, "response_times": map[int64]int64{10: n},
			"num_reqs_per_sec": map[int64]int64{int64(now): n}, "num_fail_per_sec": map[int64]int64{},
		}
	}
	var entries []any
	for range 10 {
		name := fmt.Sprintf("/hostile/%d", h.names.Add(1))
		switch rand.IntN(5) {
		case 0:
			entries = append(entries, entry(name, math.MaxInt64/2, 1e300, now))
		case 1:
			entries = append(entries, entry(name, -1000, -5, now))
		case 2:
			entries = append(entries, entry(name, 10, math.NaN(), math.NaN()))
		case 3:
			entries = append(entries, entry(name, 10, math.Inf(1), math.Inf(1)))
		default:
			entries = append(entries, entry(name, 1, 3, now))
		}
	}
	data := map[string]any{
		"stats": entries, "stats_total": entry("Aggregated", 10, math.NaN(), now),
		"errors": map[string]any{}, "user_classes_count": map[string]int64{"SoakUser": 0}, "user_count": 0,
	}
	return h.send(f, "stats", data)
}

// unknownClasses reports users of classes the master does not know.
func (h *hostile) unknownClasses(_ context.Context, f *fake) error {
	cls := fmt.Sprintf("NoSuchClass%d", rand.IntN(100000))
	if err := h.send(f, "spawning_complete", map[string]any{"user_classes_count": map[string]int64{cls: 5}, "user_count": 5}); err != nil {
		return err
	}
	return h.send(f, "heartbeat", map[string]any{"state": "running", "current_cpu_usage": 1.0, "current_memory_usage": 1 << 20})
}

// churn registers a new identity and leaves at once.
func (h *hostile) churn(ctx context.Context, f *fake) error {
	id := fmt.Sprintf("%s-churn-%d", f.id, h.names.Add(1))
	d, err := zmtp.Dial(h.endpoint(), id, zmtp.Options{Linger: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Send(encode("client_ready", "2.0.0", id)); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = d.Recv(rctx) // the ack, or give up after a second
	return err
}

// slowWeb opens a web connection that sends a request one byte a second,
// for at most 20 s, holding at most h.slow such connections per fake.
func (h *hostile) slowWeb(ctx context.Context, f *fake) error {
	if int(f.slow.Load()) >= h.slow {
		return errors.New("enough slow connections")
	}
	nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", h.wport), 2*time.Second)
	if err != nil {
		return err
	}
	f.slow.Add(1)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer f.slow.Add(-1)
		defer nc.Close()
		req := "POST /soak-nonexistent HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n"
		if rand.IntN(2) == 0 {
			req = "GET /stats/requests HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + strings.Repeat("z", 40)
		}
		end := time.Now().Add(20 * time.Second)
		for i := 0; i < len(req) && time.Now().Before(end); i++ {
			nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if _, err := nc.Write([]byte{req[i]}); err != nil {
				return // the server closed it: what a read timeout does
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return nil
}
