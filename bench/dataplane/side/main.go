//go:build linux

// Command side measures, in one run against one nginx (one worker process)
// in the data plane lab's server namespace, side by side:
//
//   - new connections per second (SYN, GET, 128 B page, close; at most
//     -open open) and
//   - requests per second on -held keep-alive connections,
//
// for the client stack over AF_PACKET and over AF_XDP (on the cicada end
// of the KernelPair veth), for the kernel-socket cicada (standalone,
// headless, GOMAXPROCS=1) and for wrk (-t1), both in the lab's kernel
// client namespace. Each figure is also divided by the client's CPU time
// (user + system of the measuring process or of the child: the kernel
// work charged to it, veth included) to give a rate per client core.
// Run as root; see bench/dataplane/README.md.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/link/afxdp"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/internal/testpeer"
)

type options struct {
	dur    time.Duration
	open   int
	held   int
	cicada string
	only   string
}

func main() {
	var o options
	flag.DurationVar(&o.dur, "d", 10*time.Second, "duration of each measurement")
	flag.IntVar(&o.open, "open", 2048, "short connections: most open at once (wrk -c)")
	flag.IntVar(&o.held, "held", 256, "keep-alive: connections")
	flag.StringVar(&o.cicada, "cicada", "bin/cicada", "the cicada binary (make build)")
	flag.StringVar(&o.only, "only", "", "comma-separated clients to run (afpacket,afxdp,cicada,wrk); empty: all")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "side:", err)
		os.Exit(1)
	}
}

// figure is one client's measurement.
type figure struct {
	client, what string
	count        uint64
	secs, cpu    float64
	sys          float64 // of cpu, in the kernel
	note         string
}

func (f figure) String() string {
	perCore := "-"
	if f.cpu > 0 {
		perCore = strconv.FormatFloat(float64(f.count)/f.cpu, 'f', 0, 64)
	}
	sys := "-"
	if f.cpu > 0 {
		sys = strconv.FormatFloat(100*f.sys/f.cpu, 'f', 0, 64) + " %"
	}
	return fmt.Sprintf("| %s | %s | %.0f | %.2f | %s | %s | %s |", f.what, f.client, float64(f.count)/f.secs, f.cpu/f.secs, sys, perCore, f.note)
}

func ip4(s string) uint32 { return binary.BigEndian.Uint32(net.ParseIP(s).To4()) }

// cpuSelf returns this process's CPU time and the system part of it.
func cpuSelf() (total, sys float64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return tv(ru.Utime) + tv(ru.Stime), tv(ru.Stime)
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

type env struct {
	o      options
	p      *lab.Pair
	k      *lab.Netns
	nginx  *testpeer.Nginx
	nextIP int // client addresses are not reused between runs (nginx's TIME_WAIT)
}

func run(o options) error {
	want := map[string]bool{}
	for _, c := range strings.Split(o.only, ",") {
		if c != "" {
			want[c] = true
		}
	}
	on := func(c string) bool { return len(want) == 0 || want[c] }
	l, err := lab.New()
	if err != nil {
		return err
	}
	defer l.Close()
	p, err := l.KernelPair()
	if err != nil {
		return err
	}
	k, err := l.KernelClient(p)
	if err != nil {
		return err
	}
	ng, err := testpeer.NginxConfig{Host: lab.ServerIP, Wrap: []string{"ip", "netns", "exec", p.Server.Name},
		Dial: p.Server.Dial, Connections: 19000}.Start()
	if err != nil {
		return fmt.Errorf("side: nginx: %w", err)
	}
	defer func() { _ = ng.Stop() }()
	e := &env{o: o, p: p, k: k, nginx: ng, nextIP: 1}
	fmt.Printf("load average at start: %s\n\n", loadavg())
	fmt.Println("| figure | client | rate /s | client CPU (cores) | of it in the kernel | per client core /s | note |")
	fmt.Println("|---|---|---:|---:|---:|---:|---|")
	type m struct {
		name string
		fn   func(short bool) (figure, error)
	}
	for _, short := range []bool{true, false} {
		for _, c := range []m{{"afpacket", e.stackRun(false)}, {"afxdp", e.stackRun(true)}, {"cicada", e.cicadaRun}, {"wrk", e.wrkRun}} {
			if !on(c.name) {
				continue
			}
			f, err := c.fn(short)
			if err != nil {
				fmt.Printf("| %s | %s | error: %v |\n", what(short), c.name, err)
				continue
			}
			fmt.Println(f)
		}
	}
	fmt.Printf("\nload average at the end: %s\n", loadavg())
	return nil
}

func what(short bool) string {
	if short {
		return "new conn/s"
	}
	return "req/s held"
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// stackRun measures the client stack over AF_PACKET or AF_XDP on the
// cicada end.
func (e *env) stackRun(xdp bool) func(bool) (figure, error) {
	return func(short bool) (figure, error) {
		name := "stack/AF_PACKET"
		if xdp {
			name = "stack/AF_XDP"
		}
		f := figure{client: name, what: what(short)}
		var lk link.Link
		var waiter interface{ Wait(time.Duration) }
		var closeLink func() error
		err := e.p.Client.Do(func() error {
			if xdp {
				x, err := afxdp.Open(afxdp.Config{Interface: e.p.Cicada.Name, FillRing: 4096, RXRing: 4096, TXRing: 2048, CompletionRing: 2048})
				lk, waiter, closeLink = x, xdpWaiter{x}, x.Close
				return err
			}
			a, err := afpacket.Open(afpacket.Config{Index: e.p.Cicada.Index, BlockSize: 64 << 10, Blocks: 1024, RetireTimeout: time.Millisecond})
			lk, waiter, closeLink = a, a, a.Close
			return err
		})
		if err != nil {
			return f, err
		}
		defer func() { _ = closeLink() }()
		ip := net.ParseIP(lab.ClientIP).To4()
		ip[3] = byte(e.nextIP)
		e.nextIP++
		cfg := stack.Config{Mode: stack.Client, Link: lk, ClientIP: binary.BigEndian.Uint32(ip), ServerIP: ip4(lab.ServerIP),
			ServerPort: uint16(e.nginx.Port), PortMin: 10000, PortMax: 59999, RetransmitTimeout: time.Second, MaxRetries: 8}
		n := e.o.open
		if !short {
			n = e.o.held
			cfg.PortMax = uint16(10000 + n - 1)
			cfg.RequestsPerConn, cfg.Hold = 65535, true
		}
		s, err := stack.New(cfg)
		if err != nil {
			return f, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.o.dur+30*time.Second)
		defer cancel()
		// Warm up (resolve the gateway, open the held connections), then
		// measure, on one clock (lab.Driver) with at most n launched
		// connections awaiting their response.
		d := &lab.Driver{Stack: s, Waiter: waiter, Window: n}
		if err := d.Run(ctx, n, func(c *stack.Counters) bool {
			return d.Launched() == n && (short || c.HTTP2xx >= uint64(n)) || c.SocketsFailed > 0
		}); err != nil {
			return f, fmt.Errorf("side: warm-up: %w: %+v", err, s.Counters())
		}
		total := n
		if short {
			total = 1 << 40
		}
		c0, t0 := s.Counters(), time.Now()
		cpu0, sys0 := cpuSelf()
		end := t0.Add(e.o.dur)
		if err := d.Run(ctx, total, func(c *stack.Counters) bool { return c.SocketsFailed > 0 || time.Now().After(end) }); err != nil {
			return f, err
		}
		c1 := s.Counters()
		cpu1, sys1 := cpuSelf()
		f.secs, f.cpu, f.sys = time.Since(t0).Seconds(), cpu1-cpu0, sys1-sys0
		if short {
			f.count = c1.SocketsClosed - c0.SocketsClosed
		} else {
			f.count = c1.HTTP2xx - c0.HTTP2xx
		}
		f.note = fmt.Sprintf("failed %d, RST in %d, retransmits %d", c1.SocketsFailed, c1.RstIn,
			c1.RetransSyn+c1.RetransData+c1.RetransFin)
		if c1.SocketsFailed > 0 {
			return f, fmt.Errorf("side: %s: %d connections failed: %+v", name, c1.SocketsFailed, c1)
		}
		return f, nil
	}
}

var wrkRate = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

func childCPU(ps *os.ProcessState) (total, sys float64) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0
	}
	return tv(ru.Utime) + tv(ru.Stime), tv(ru.Stime)
}

func (e *env) url() string { return "http://" + lab.ServerIP + ":" + strconv.Itoa(e.nginx.Port) }

func (e *env) wrkRun(short bool) (figure, error) {
	f := figure{client: "wrk -t1 (kernel)", what: what(short)}
	d := strconv.Itoa(int(e.o.dur.Seconds())) + "s"
	args := []string{"-t1", "-c" + strconv.Itoa(e.o.held), "-d" + d, e.url() + "/"}
	if short {
		args = []string{"-t1", "-c" + strconv.Itoa(e.o.open), "-d" + d, "-H", "Connection: close", e.url() + "/"}
	}
	cmd := e.k.Command("wrk", args...)
	out, err := cmd.CombinedOutput()
	m := wrkRate.FindSubmatch(out)
	if err != nil {
		return f, fmt.Errorf("side: wrk: %w: %s", err, out)
	}
	if m == nil {
		return f, fmt.Errorf("side: wrk printed no rate: %s", out)
	}
	rate, _ := strconv.ParseFloat(string(m[1]), 64)
	f.secs = e.o.dur.Seconds()
	f.cpu, f.sys = childCPU(cmd.ProcessState)
	f.count = uint64(rate * f.secs)
	if i := strings.Index(string(out), "Socket errors"); i >= 0 {
		f.note = strings.TrimSpace(strings.SplitN(string(out[i:]), "\n", 2)[0])
	}
	return f, nil
}

func (e *env) cicadaRun(short bool) (figure, error) {
	f := figure{client: "cicada, kernel sockets, GOMAXPROCS=1", what: what(short)}
	bin, err := filepath.Abs(e.o.cicada)
	if err != nil {
		return f, fmt.Errorf("side: %w", err)
	}
	if _, err := os.Stat(bin); err != nil {
		return f, fmt.Errorf("side: cicada binary (make build): %w", err)
	}
	dir, err := os.MkdirTemp("", "cicada-side-*")
	if err != nil {
		return f, fmt.Errorf("side: %w", err)
	}
	defer os.RemoveAll(dir)
	users, headers := e.o.held, ""
	if short {
		users, headers = e.o.open, "\n        headers: {Connection: close}"
	}
	scenario := fmt.Sprintf("host: %s\nusers:\n  - name: Bench\n    wait: constant(0)\n    tasks:\n      - path: /%s\n", e.url(), headers)
	sf := filepath.Join(dir, "side.yaml")
	if err := os.WriteFile(sf, []byte(scenario), 0o644); err != nil {
		return f, fmt.Errorf("side: %w", err)
	}
	// The spawn takes users / spawn-rate = 0.1 s of the run.
	secs := int(e.o.dur.Seconds())
	cmd := e.k.Command(bin, "--headless", "-f", sf, "-u", strconv.Itoa(users), "-r", strconv.Itoa(users*10),
		"-t", strconv.Itoa(secs)+"s", "--csv", filepath.Join(dir, "side"), "--only-summary", "--exit-code-on-error", "0", "-L", "WARNING")
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), e.o.dur+time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
		case <-done:
		}
	}()
	err = cmd.Run()
	close(done)
	if err != nil {
		return f, fmt.Errorf("side: cicada: %w: %s", err, stderr.String())
	}
	// cicada accepts --json but prints nothing with it yet: the CSV's
	// Aggregated row (first column empty) has the counts.
	row := testpeer.CSVRow(filepath.Join(dir, "side_stats.csv"), "")
	if row == nil {
		return f, fmt.Errorf("side: cicada wrote no Aggregated row in side_stats.csv: %s", stderr.String())
	}
	var fails uint64
	var perr error
	if f.count, perr = strconv.ParseUint(row["Request Count"], 10, 64); perr != nil {
		return f, fmt.Errorf("side: cicada CSV Request Count: %w", perr)
	}
	if fails, perr = strconv.ParseUint(row["Failure Count"], 10, 64); perr != nil {
		return f, fmt.Errorf("side: cicada CSV Failure Count: %w", perr)
	}
	f.secs = float64(secs)
	f.cpu, f.sys = childCPU(cmd.ProcessState)
	conns := "?"
	if c := testpeer.CSVRow(filepath.Join(dir, "side_connections.csv"), "Total"); c != nil {
		conns = c["Connects"]
	}
	f.note = fmt.Sprintf("failures %d, connects %s; CPU includes the spawn and stop", fails, conns)
	return f, nil
}

// xdpWaiter adapts the AF_XDP link's Wait (which returns poll's error) to
// engine.Waiter: an error there only ends the wait early.
type xdpWaiter struct{ *afxdp.Link }

func (w xdpWaiter) Wait(d time.Duration) { _ = w.Link.Wait(d) }
