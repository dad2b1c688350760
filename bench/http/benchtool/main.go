// Command benchtool drives the HTTP benchmarks of bench/http/run.sh.
//
//	benchtool load -url U -users 50 -duration 5s
//	    closed-loop load with worker/httpc: one goroutine and one Client
//	    (one keep-alive connection) per user, no wait.
//	benchtool idle -url U -users 15000 -rate 2000
//	    starts users that make one request each and then wait 900 s,
//	    like a Locust user with wait_time = constant(900).
//	benchtool measure -log access.log [-rss-at 5000,15000] -- cmd args...
//	    runs cmd and samples its CPU time (/proc/<pid>/stat) and the
//	    nginx access log. Prints the steady-state requests/s and
//	    requests per CPU-second of cmd, or with -rss-at the RSS of cmd
//	    when the log reached each request count (then stops cmd).
//	benchtool nginx -dir D -root D/www -port P
//	    runs the benchmark's nginx (internal/testpeer: one process,
//	    access log D/access.log) until SIGINT or SIGTERM; prints
//	    "nginx pid=N url=U log=L" once it accepts connections.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/worker/httpc"
)

// nginx runs the target of the benchmark until a signal.
func nginx(args []string) error {
	fs := flag.NewFlagSet("nginx", flag.ExitOnError)
	bin := fs.String("bin", "", "nginx executable (default: testpeer's)")
	dir := fs.String("dir", "", "directory for the config and logs")
	root := fs.String("root", "", "directory of the files served")
	port := fs.Int("port", 0, "port on 127.0.0.1")
	_ = fs.Parse(args)
	if *dir == "" || *root == "" || *port == 0 {
		return errors.New("nginx: need -dir, -root and -port")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := testpeer.NginxConfig{
		Bin: *bin, Dir: *dir, Root: *root, Port: *port, AccessLog: true,
		Connections: 19000, Backlog: 4096, Keepalive: 600 * time.Second,
	}.Start()
	if err != nil {
		return err
	}
	fmt.Printf("nginx pid=%d url=%s log=%s\n", n.Pid(), n.URL(), filepath.Join(*dir, "access.log"))
	select {
	case <-ctx.Done():
	case <-n.Done():
		return fmt.Errorf("nginx exited: %s", n.Log())
	}
	return n.StopWithin(syscall.SIGQUIT, 10*time.Second)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool load|idle|measure|nginx ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "load":
		err = load(os.Args[2:])
	case "idle":
		err = idle(os.Args[2:])
	case "measure":
		err = measure(os.Args[2:])
	case "nginx":
		err = nginx(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	url := fs.String("url", "http://127.0.0.1:8080", "base URL")
	users := fs.Int("users", 50, "users (connections)")
	duration := fs.Duration("duration", 5*time.Second, "test duration")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var ok, failed atomic.Int64
	var kinds [httpc.NumKinds]atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < *users; i++ {
		c, err := httpc.New(*url, httpc.Options{})
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			req := &httpc.Request{Path: "/"}
			var resp httpc.Response
			for ctx.Err() == nil {
				err := c.DoInto(ctx, req, &resp)
				if err == nil {
					err = resp.StatusError()
				}
				switch {
				case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded): // the test ended
				case err != nil:
					if failed.Add(1) <= 3 {
						fmt.Fprintf(os.Stderr, "httpc: failure: %v (%#v)\n", err, errors.Unwrap(err))
					}
					kinds[httpc.Classify(err)].Add(1)
				default:
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	for k := range kinds {
		if n := kinds[k].Load(); n > 0 {
			fmt.Printf("httpc: %d failures of kind %s\n", n, httpc.Kind(k))
		}
	}
	t := httpc.Totals()
	fmt.Printf("httpc: %d requests (%d failed) in %.2fs = %.0f req/s; connects %d reconnects %d\n",
		ok.Load()+failed.Load(), failed.Load(), el, float64(ok.Load()+failed.Load())/el, t.Connects, t.Reconnects)
	return nil
}

func idle(args []string) error {
	fs := flag.NewFlagSet("idle", flag.ExitOnError)
	url := fs.String("url", "http://127.0.0.1:8080", "base URL")
	users := fs.Int("users", 15000, "users")
	rate := fs.Float64("rate", 2000, "users started per second")
	hold := fs.Duration("hold", 2*time.Minute, "how long to keep the users")
	fs.Parse(args)
	cfg, err := httpc.NewConfig(*url, httpc.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *hold)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for i := 0; i < *users && ctx.Err() == nil; i++ {
		if d := time.Duration(float64(i) / *rate * float64(time.Second)); time.Since(start) < d {
			time.Sleep(d - time.Since(start))
		}
		wg.Add(1)
		go func() { // one user: a request, then wait_time = constant(900)
			defer wg.Done()
			c := cfg.NewClient()
			defer c.Close()
			for ctx.Err() == nil {
				if _, err := c.Do(ctx, &httpc.Request{Path: "/"}); err != nil && ctx.Err() == nil {
					failed.Add(1)
				}
				t := time.NewTimer(900 * time.Second)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
			}
		}()
	}
	select {
	case <-sig:
		// Still holding every user: Go's own account of the memory.
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		n := float64(*users)
		fmt.Printf("idle: per user after GC: heap %.0f B, stacks %.0f B, runtime other %.0f B (Go Sys %.1f MB)\n",
			float64(ms.HeapAlloc)/n, float64(ms.StackInuse)/n, float64(ms.MSpanInuse+ms.OtherSys+ms.GCSys)/n, float64(ms.Sys)/1e6)
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	fmt.Printf("idle: %d users, %d failed requests, %d connects\n", *users, failed.Load(), httpc.Totals().Connects)
	return nil
}

func measure(args []string) error {
	fs := flag.NewFlagSet("measure", flag.ExitOnError)
	logPath := fs.String("log", "", "nginx access log to count requests in")
	rssAt := fs.String("rss-at", "", "comma-separated request counts at which to sample RSS, then stop")
	name := fs.String("name", "", "label for the output")
	timeout := fs.Duration("timeout", 90*time.Second, "stop the command after this long")
	fs.Parse(args)
	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 || *logPath == "" {
		return errors.New("measure: need -log and a command")
	}
	var thresholds []int64
	for _, f := range strings.Split(*rssAt, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return err
		}
		thresholds = append(thresholds, n)
	}
	lc, err := newLineCounter(*logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	type sample struct {
		t    time.Time
		cpu  float64 // seconds
		reqs int64
	}
	var samples []sample
	var rss []int64
	deadline := time.After(*timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var waitErr error
loop:
	for {
		select {
		case waitErr = <-done:
			break loop
		case <-deadline:
			cmd.Process.Signal(syscall.SIGINT)
			select {
			case waitErr = <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				waitErr = <-done
			}
			break loop
		case <-tick.C:
		}
		n := lc.count()
		cpu, err := procCPU(pid)
		if err != nil {
			continue
		}
		samples = append(samples, sample{time.Now(), cpu, n})
		for len(rss) < len(thresholds) && n >= thresholds[len(rss)] {
			time.Sleep(time.Second) // let the last users settle
			r, _ := procRSS(pid)
			rss = append(rss, r)
			if len(rss) == len(thresholds) {
				cmd.Process.Signal(syscall.SIGINT)
			}
		}
	}
	_ = waitErr
	if len(thresholds) > 0 {
		if len(rss) < len(thresholds) {
			return fmt.Errorf("%s reached only %d requests; RSS samples %v", *name, lc.count(), rss)
		}
		out := fmt.Sprintf("%s: RSS", *name)
		for i, r := range rss {
			out += fmt.Sprintf(" %d users %.1f MB;", thresholds[i], float64(r)/1e6)
		}
		first, last := len(rss)-2, len(rss)-1
		if first >= 0 {
			per := float64(rss[last]-rss[first]) / float64(thresholds[last]-thresholds[first])
			out += fmt.Sprintf(" growth %.0f bytes per idle user (%d -> %d)", per, thresholds[first], thresholds[last])
			fmt.Printf("RESULT %s idle_bytes_per_user=%.0f\n", *name, per)
		}
		fmt.Println(out)
		return nil
	}
	// Steady window: from the first sample with requests flowing to the
	// last sample with requests still growing.
	first, last := -1, -1
	for i := 1; i < len(samples); i++ {
		if samples[i].reqs > samples[i-1].reqs {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || last <= first {
		return fmt.Errorf("%s: no requests seen in %s", *name, *logPath)
	}
	a, b := samples[first], samples[last]
	wall := b.t.Sub(a.t).Seconds()
	reqs := b.reqs - a.reqs
	cpu := b.cpu - a.cpu
	fmt.Printf("RESULT %s reqs=%d wall=%.2f cpu=%.2f rps=%.0f cpu_cores=%.2f rps_per_core=%.0f\n",
		*name, reqs, wall, cpu, float64(reqs)/wall, cpu/wall, float64(reqs)/cpu)
	return nil
}

// lineCounter counts the lines appended to a file since it was created.
type lineCounter struct {
	f   *os.File
	n   int64
	buf []byte
}

func newLineCounter(path string) (*lineCounter, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return nil, err
	}
	return &lineCounter{f: f, buf: make([]byte, 1<<20)}, nil
}

func (lc *lineCounter) count() int64 {
	for {
		n, _ := lc.f.Read(lc.buf)
		if n == 0 {
			return lc.n
		}
		lc.n += int64(bytes.Count(lc.buf[:n], []byte{'\n'}))
	}
}

// procCPU returns utime+stime of pid in seconds.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, errors.New("bad stat")
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

// procRSS returns VmRSS of pid in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}
