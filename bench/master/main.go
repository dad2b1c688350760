// Command master measures how many workers one master handles: N simulated
// workers (real ZeroMQ over loopback, all Dealers in this process) each send
// a heartbeat every second and a 20-name stats report every 3 seconds to a
// master process, and the master's CPU (utime+stime from /proc) is sampled
// over a steady-state window once every worker runs its users. The same
// load is put on a cicada master (this binary re-executed with -role
// master) and on a Python Locust master (/usr/bin/locust --master
// --headless), one after the other, for each worker count.
//
// Usage: go run ./bench/master -workers 100,500,1000,2000 -window 30s
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cicada-load/cicada/internal/locustlog"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/stats"
)

var (
	exact       bool
	profileDir  string
	masterProcs int
)

var classes = []master.UserClass{{Name: "WebUser", Weight: 3}, {Name: "ApiUser", Weight: 1}}

const locustfile = `from locust import User, task, constant

class WebUser(User):
    weight = 3
    wait_time = constant(1)
    @task
    def t(self):
        pass

class ApiUser(User):
    wait_time = constant(1)
    @task
    def t(self):
        pass
`

func main() {
	role := flag.String("role", "driver", "driver, or master (internal: the cicada master process)")
	port := flag.Int("port", 0, "master port (role master)")
	n := flag.Int("n", 0, "expected workers (role master)")
	workersFlag := flag.String("workers", "100,500,1000,2000", "worker counts to measure")
	targets := flag.String("targets", "cicada,locust", "masters to measure")
	window := flag.Duration("window", 30*time.Second, "CPU measurement window")
	warmup := flag.Duration("warmup", 6*time.Second, "steady-state wait before measuring")
	names := flag.Int("names", 20, "request names per stats report")
	locustBin := flag.String("locust", "/usr/bin/locust", "Locust executable")
	flag.BoolVar(&exact, "exact", true, "send cicada's exact latency histograms in the stats reports, as cicada workers do (Python workers do not)")
	cpuprofile := flag.String("cpuprofile", "", "role master: write a CPU profile here")
	flag.StringVar(&profileDir, "profiledir", "", "driver: have the cicada master write CPU profiles into this directory")
	flag.IntVar(&masterProcs, "master-procs", 1, "driver: run the cicada master with this GOMAXPROCS, 1 as `cicada --master` does (0: Go's default, the number of cores)")
	locustMax := flag.Int("locust-max", 3500, "measure Locust only up to this many workers (its master passes half a core near 3,000)")
	flag.Parse()
	if *role == "master" {
		os.Exit(runCicadaMaster(*port, *n, *cpuprofile))
	}
	var counts []int
	for _, s := range strings.Split(*workersFlag, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad -workers:", err)
			os.Exit(2)
		}
		counts = append(counts, c)
	}
	fmt.Printf("# master CPU under N simulated workers (heartbeat 1/s, %d-name stats every 3 s, exact histograms %v), window %v, cicada master GOMAXPROCS %d (0 = default), load average %s\n",
		*names, exact, *window, masterProcs, loadavg())
	fmt.Printf("%-8s %-8s %10s %10s %9s %9s %8s %8s %8s %s\n", "master", "workers", "cpu_cores", "rss_MiB", "acked", "running", "drv_cpu", "msg/s", "us/msg", "notes")
	curves := map[string][][2]float64{} // target → (workers, cores)
	for _, c := range counts {
		for _, tgt := range strings.Split(*targets, ",") {
			if tgt == "locust" && c > *locustMax {
				continue
			}
			res, err := measure(tgt, c, *window, *warmup, *names, *locustBin)
			if err != nil {
				fmt.Printf("%-8s %-8d error: %v\n", tgt, c, err)
				continue
			}
			// Workers lost in the measured window disqualify a row; late
			// heartbeats while thousands register do not.
			if res.running == int64(c) && (!strings.Contains(res.notes, "missing") || strings.Contains(res.notes, "(0 in the window)")) {
				curves[tgt] = append(curves[tgt], [2]float64{float64(c), res.cores})
			}
			fmt.Printf("%-8s %-8d %10.3f %10.1f %9d %9d %8.2f %8.0f %8.1f %s\n", tgt, c, res.cores, res.rssMiB, res.acked, res.running, res.driverCores, res.msgRate, res.usPerMsg, res.notes)
		}
	}
	for _, tgt := range strings.Split(*targets, ",") {
		if pts := curves[tgt]; len(pts) > 0 {
			fmt.Println(halfCore(tgt, pts))
		}
	}
}

// halfCore says how many workers the master handles within half a core:
// interpolated between the two measured counts around 0.5 cores, or, when
// every count stayed below, extrapolated from the largest one as if its
// whole CPU grew in proportion to the workers (no fixed part), which
// errs low.
func halfCore(target string, pts [][2]float64) string {
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if a[1] <= 0.5 && b[1] >= 0.5 && b[1] > a[1] {
			w := a[0] + (0.5-a[1])*(b[0]-a[0])/(b[1]-a[1])
			return fmt.Sprintf("# %s: half a core at about %.0f workers (interpolated between %.0f and %.0f)", target, w, a[0], b[0])
		}
	}
	last := pts[len(pts)-1]
	if last[1] >= 0.5 {
		w := last[0] * 0.5 / last[1]
		return fmt.Sprintf("# %s: already %.3f cores at %.0f workers (half a core at about %.0f, in proportion)", target, last[1], last[0], w)
	}
	w := last[0] * 0.5 / last[1]
	return fmt.Sprintf("# %s: %.3f cores at %.0f workers, the most measured (%.1f µcores per worker); half a core at about %.0f workers, extrapolated in proportion",
		target, last[1], last[0], last[1]/last[0]*1e6, w)
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// runCicadaMaster is the master process: a headless cicada master that
// waits for n workers and gives each one user.
func runCicadaMaster(port, n int, cpuprofile string) int {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if cpuprofile != "" {
		// The driver sends SIGUSR1 when its window starts and SIGUSR2 when
		// it ends, so that the profile shows the steady state only.
		sig := make(chan os.Signal, 2)
		signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
		go func() {
			var f *os.File
			for s := range sig {
				switch {
				case s == syscall.SIGUSR1 && f == nil:
					var err error
					if f, err = os.Create(cpuprofile); err == nil {
						err = pprof.StartCPUProfile(f)
					}
					if err != nil {
						fmt.Fprintln(os.Stderr, err)
					}
				case s == syscall.SIGUSR2 && f != nil:
					pprof.StopCPUProfile()
					f.Close()
					f = nil
				}
			}
		}()
	}
	m, err := master.New(master.Options{
		BindHost:      "127.0.0.1",
		BindPort:      port,
		Headless:      true,
		ExpectWorkers: n,
		Users:         n,
		SpawnRate:     float64(n),
		RunTime:       time.Hour,
		OnlySummary:   true,
		UserClasses:   classes,
		Logger:        slog.New(locustlog.New(os.Stderr, slog.LevelInfo)),
		// Zero final wait: the driver kills us.
		FinalReportTimeout: time.Millisecond,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res, _ := m.Run(ctx)
	return res.ExitCode()
}

type result struct {
	cores, rssMiB, driverCores float64
	msgRate, usPerMsg          float64 // messages sent to the master per second; master CPU µs per message
	acked, running             int64
	notes                      string
}

func measure(target string, n int, window, warmup time.Duration, names int, locustBin string) (result, error) {
	var res result
	port, err := testpeer.PickPort()
	if err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp("", "cicada-bench-master")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	var p *testpeer.Process
	switch target {
	case "cicada":
		self, err := os.Executable()
		if err != nil {
			return res, err
		}
		args := []string{"-role", "master", "-port", strconv.Itoa(port), "-n", strconv.Itoa(n)}
		if profileDir != "" {
			args = append(args, "-cpuprofile", filepath.Join(profileDir, fmt.Sprintf("cicada-%d.prof", n)))
		}
		cmd := exec.Command(self, args...)
		if masterProcs > 0 {
			cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(masterProcs))
		}
		p, err = testpeer.StartProcess(cmd, filepath.Join(dir, "master.log"))
		if err != nil {
			return res, err
		}
	case "locust":
		p, err = testpeer.LocustConfig{Bin: locustBin, Dir: dir, Locustfile: locustfile, Args: []string{
			"--master", "--headless", "--master-bind-host", "127.0.0.1",
			"--master-bind-port", strconv.Itoa(port), "--expect-workers", strconv.Itoa(n),
			"-u", strconv.Itoa(n), "-r", strconv.Itoa(n), "-t", "1h", "--only-summary"}}.Start()
		if err != nil {
			return res, err
		}
	default:
		return res, fmt.Errorf("unknown target %q", target)
	}
	defer func() { _ = p.Stop(syscall.SIGTERM, 3*time.Second) }()
	logPath, exited := p.LogPath, p.Done()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim, err := newSimulation(ctx, n, port, names)
	if err != nil {
		return res, err
	}
	defer sim.close()

	// Wait for every worker to be acked and running its users.
	deadline := time.Now().Add(60*time.Second + time.Duration(n)*20*time.Millisecond)
	for sim.running.Load() < int64(n) && time.Now().Before(deadline) {
		select {
		case <-exited:
			return res, fmt.Errorf("master exited; log: %s", tail(logPath))
		case <-time.After(200 * time.Millisecond):
		}
	}
	time.Sleep(warmup)
	pid := p.Pid()
	c0, err := cpuTicks(pid)
	if err != nil {
		return res, err
	}
	d0 := selfCPU()
	s0 := sim.sent.Load()
	missing0 := countMissing(logPath)
	t0 := time.Now()
	profiling := target == "cicada" && profileDir != ""
	if profiling {
		_ = p.Signal(syscall.SIGUSR1)
	}
	time.Sleep(window)
	c1, err := cpuTicks(pid)
	if profiling {
		_ = p.Signal(syscall.SIGUSR2)
	}
	if err != nil {
		return res, err
	}
	s1 := sim.sent.Load()
	elapsed := time.Since(t0).Seconds()
	res.cores = float64(c1-c0) / clkTck / elapsed
	res.msgRate = float64(s1-s0) / elapsed
	if s1 > s0 {
		res.usPerMsg = float64(c1-c0) / clkTck * 1e6 / float64(s1-s0)
	}
	res.driverCores = (selfCPU() - d0).Seconds() / elapsed
	res.rssMiB = float64(rssKiB(pid)) / 1024
	res.notes = "load " + loadavg() + "; "
	res.acked = sim.acked.Load()
	res.running = sim.running.Load()
	logText, _ := os.ReadFile(logPath)
	if profileDir != "" {
		_ = os.WriteFile(filepath.Join(profileDir, fmt.Sprintf("%s-%d.log", target, n)), logText, 0o644)
	}
	if c := bytes.Count(logText, []byte("setting state to missing")); c > 0 {
		res.notes += fmt.Sprintf("%d missing-worker events (%d in the window); ", c, countMissing(logPath)-missing0)
	}
	if c := sim.sendErrors.Load(); c > 0 {
		res.notes += fmt.Sprintf("%d send errors; ", c)
	}
	return res, nil
}

// countMissing counts the master's "missing" log lines so far.
func countMissing(logPath string) int {
	b, _ := os.ReadFile(logPath)
	return bytes.Count(b, []byte("setting state to missing"))
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

const clkTck = 100 // USER_HZ on Linux

func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+2:])
	// fields after the command: state(0) ... utime is field 14 overall = index 11 here
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st, nil
}

func rssKiB(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ---- simulated workers ----

type simulation struct {
	cancel     context.CancelFunc
	workers    []*simWorker
	acked      atomic.Int64
	running    atomic.Int64
	sent       atomic.Int64 // messages queued to the master
	sendErrors atomic.Int64
	wg         sync.WaitGroup

	mu    sync.RWMutex
	stats []byte // encoded stats message, node id placeholder at the end
}

const idLen = len("benchhost_") + 32

var placeholder = strings.Repeat("X", idLen)

type simWorker struct {
	id string
	d  *zmtp.Dealer
}

func newSimulation(parent context.Context, n, port, names int) (*simulation, error) {
	ctx, cancel := context.WithCancel(parent)
	s := &simulation{cancel: cancel}
	if err := s.buildStats(names); err != nil {
		return nil, err
	}
	// Refresh the report every second, with current timestamps.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = s.buildStats(names)
			}
		}
	}()
	endpoint := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	for i := range n {
		id := fmt.Sprintf("benchhost_%032x", i+1)
		d, err := zmtp.Dial(endpoint, id, zmtp.Options{SendQueue: 100})
		if err != nil {
			s.close()
			return nil, err
		}
		w := &simWorker{id: id, d: d}
		s.workers = append(s.workers, w)
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.run(ctx, w) }()
	}
	return s, nil
}

func (s *simulation) close() {
	s.cancel()
	for _, w := range s.workers {
		w.d.Close()
	}
	s.wg.Wait()
}

func (s *simulation) buildStats(names int) error {
	r := stats.NewRecorder(nil)
	r.Clear()
	for i := range names {
		name := fmt.Sprintf("/api/endpoint/%d", i)
		for k := range 10 {
			r.Record("GET", name, time.Duration(2+k*3)*time.Millisecond, 512, "")
		}
		if i%5 == 0 {
			r.Record("GET", name, 40*time.Millisecond, 0, "HTTPError('500 Server Error')")
		}
	}
	rep := r.Report(map[string]int64{"WebUser": 1, "ApiUser": 0}, 1)
	if !exact {
		for i := range rep.Stats {
			rep.Stats[i].Exact = nil
		}
		rep.Total.Exact = nil
	}
	b, err := protocol.Encode(protocol.Message{Type: protocol.TypeStats, Data: rep, NodeID: placeholder})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.stats = b
	s.mu.Unlock()
	return nil
}

// withID copies a message encoded with the placeholder node id and puts
// the worker's id in its place (the node id is the envelope's last field).
func withID(tmpl []byte, id string) []byte {
	b := append([]byte(nil), tmpl...)
	copy(b[len(b)-idLen:], id)
	return b
}

func (s *simulation) send(w *simWorker, b []byte) {
	if err := w.d.Send(b); err != nil {
		s.sendErrors.Add(1)
		return
	}
	s.sent.Add(1)
}

func (s *simulation) run(ctx context.Context, w *simWorker) {
	enc := func(typ string, data any) []byte {
		b, _ := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: w.id})
		return b
	}
	state := atomic.Value{}
	state.Store("ready")
	hbReady := enc(protocol.TypeHeartbeat, &protocol.Heartbeat{State: "ready", CPUUsage: 3.5, MemoryUsage: 60 << 20})
	hbRunning := enc(protocol.TypeHeartbeat, &protocol.Heartbeat{State: "running", CPUUsage: 3.5, MemoryUsage: 60 << 20})
	s.send(w, enc(protocol.TypeClientReady, &protocol.ClientReady{VersionSkipCheck: true}))

	acked := make(chan struct{})
	var ackOnce sync.Once
	// Receive loop: ack, spawn, quit.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		counted := false
		for {
			frames, err := w.d.Recv(ctx)
			if err != nil {
				return
			}
			m, err := protocol.Decode(frames[0])
			if err != nil {
				continue
			}
			switch m.Type {
			case protocol.TypeAck:
				ackOnce.Do(func() { s.acked.Add(1); close(acked) })
			case protocol.TypeSpawn:
				sp := m.Data.(*protocol.Spawn)
				s.send(w, enc(protocol.TypeSpawning, nil))
				var total int64
				for _, c := range sp.UserClassesCount {
					total += c
				}
				s.send(w, enc(protocol.TypeSpawningComplete, &protocol.SpawningComplete{UserClassesCount: sp.UserClassesCount, UserCount: total}))
				state.Store("running")
				if !counted {
					counted = true
					s.running.Add(1)
				}
			case protocol.TypeQuit:
				return
			}
		}
	}()
	// Resend client_ready every 5 s until acked, as Locust workers do.
	for {
		select {
		case <-ctx.Done():
			return
		case <-acked:
		case <-time.After(5 * time.Second):
			s.send(w, enc(protocol.TypeClientReady, &protocol.ClientReady{VersionSkipCheck: true}))
			continue
		}
		break
	}
	// Heartbeat every second and stats every 3 s, each with a random phase.
	time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
	hb := time.NewTicker(time.Second)
	defer hb.Stop()
	statsPhase := rand.IntN(3)
	for tick := 0; ; tick++ {
		if state.Load() == "running" {
			s.send(w, hbRunning)
		} else {
			s.send(w, hbReady)
		}
		if tick%3 == statsPhase {
			s.mu.RLock()
			b := withID(s.stats, w.id)
			s.mu.RUnlock()
			s.send(w, b)
		}
		select {
		case <-ctx.Done():
			return
		case <-hb.C:
		}
	}
}
