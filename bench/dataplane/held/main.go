//go:build linux

// Command held measures how many connections one client stack holds against
// one server stack, each in its own process over AF_PACKET on a veth of the
// data plane lab (dataplane/lab StackPair), and the bytes per connection on
// each side. Run as root; see bench/dataplane/README.md.
//
// The driver (default role) builds the lab, starts the server and the
// client as child processes inside their namespaces (ip netns exec, this
// binary again with -role), and talks to them over stdin/stdout, one JSON
// object a line. The client ramps in steps (each step's connections
// launched once the previous step is answered, so at most -step handshakes
// are in flight), then holds; the driver samples both sides, asks the
// client for the second round where the stack has one, and prints a
// report. Everything is bounded by -timeout; the lab's Close (also on
// SIGINT/SIGTERM) removes the namespaces, which ends the children's links,
// and the driver kills the children it started, by PID.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
	"github.com/cicada-load/cicada/dataplane/stack"
)

type options struct {
	role    string
	ifname  string
	conns   int
	ips     int
	step    int
	timeout time.Duration
	rto     time.Duration
	retries int
	hold    time.Duration
	maxFail float64
	blocks  int
	window  int
	dut     bool
}

func main() {
	var o options
	flag.StringVar(&o.role, "role", "driver", "driver, or (children) client or server")
	flag.StringVar(&o.ifname, "if", "", "children: the veth end to open")
	flag.IntVar(&o.conns, "conns", 10_000_000, "connections to hold (client addresses x ports)")
	flag.IntVar(&o.ips, "ips", 200, "client addresses from "+lab.ClientIP)
	flag.IntVar(&o.step, "step", 8192, "launch step: connections launched once the previous step is answered")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "bound on the whole run")
	flag.DurationVar(&o.rto, "rto", time.Second, "retransmission timeout of both stacks")
	flag.IntVar(&o.retries, "retries", 12, "retransmissions before a connection fails")
	flag.DurationVar(&o.hold, "hold", 10*time.Second, "time held after the ramp before the second round")
	flag.Float64Var(&o.maxFail, "max-fail", 0.01, "stop the ramp when this share of launches failed")
	flag.IntVar(&o.blocks, "blocks", 1024, "AF_PACKET RX blocks of 64 KiB per side")
	flag.IntVar(&o.window, "window", 0, "second round's requests in flight (stack.Config.SecondRoundWindow; 0: stack.DefaultSecondRoundWindow)")
	flag.BoolVar(&o.dut, "dut", false, "through a device under test (lab.DUTChain: a namespace forwarding with conntrack) instead of one veth; at most nf_conntrack_max connections")
	flag.Parse()
	var err error
	switch o.role {
	case "driver":
		err = drive(o)
	case "client", "server":
		err = child(o)
	default:
		err = fmt.Errorf("held: unknown role %q", o.role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "held:", err)
		os.Exit(1)
	}
}

// ports returns the client port range for conns over ips addresses.
func ports(o options) (uint16, uint16, error) {
	if o.ips < 1 || o.ips > 253 || o.conns < 1 || o.conns%o.ips != 0 {
		return 0, 0, fmt.Errorf("held: -conns %d must be a multiple of -ips %d (1..253)", o.conns, o.ips)
	}
	per := o.conns / o.ips
	if per > 55000 {
		return 0, 0, fmt.Errorf("held: %d ports per address; at most 55,000 (10000..64999)", per)
	}
	return 10000, uint16(10000 + per - 1), nil
}

// sample is a child's report line.
type sample struct {
	Event    string         `json:"event"`
	Role     string         `json:"role"`
	Elapsed  float64        `json:"elapsed_s"`
	Conns    int            `json:"table_records"`
	TableB   uint64         `json:"table_bytes"`
	BaseRSS  uint64         `json:"base_rss"`
	RSS      uint64         `json:"rss"`
	Counters stack.Counters `json:"counters"`
	Link     afpacket.Stats `json:"link"`
	Note     string         `json:"note,omitempty"`
}

func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseUint(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

func ip4(s string) uint32 { return binary.BigEndian.Uint32(net.ParseIP(s).To4()) }

// child runs one stack in the namespace it was started in until stdin
// says "quit" or closes, or -timeout passes.
func child(o options) error {
	pmin, pmax, err := ports(o)
	if err != nil {
		return err
	}
	ifc, err := net.InterfaceByName(o.ifname)
	if err != nil {
		return fmt.Errorf("held: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	base := rss()
	l, err := afpacket.Open(afpacket.Config{Index: ifc.Index, BlockSize: 64 << 10, Blocks: o.blocks, RetireTimeout: time.Millisecond})
	if err != nil {
		return fmt.Errorf("held: %w", err)
	}
	defer l.Close()
	cfg := stack.Config{Link: l, ClientIP: ip4(lab.ClientIP), ClientIPs: o.ips, PortMin: pmin, PortMax: pmax,
		ServerIP: ip4(lab.ServerIP), RetransmitTimeout: o.rto, MaxRetries: o.retries}
	if o.role == "client" && o.dut {
		cfg.Gateway = ip4(lab.Gateway)
	}
	if o.role == "client" {
		// The seed's scenario: GET /, then wait an hour; SecondRound sends
		// the request again on every waiting user's connection, -window
		// in flight at a time.
		cfg.Mode, cfg.SecondRoundWindow, cfg.Program = stack.Client, o.window, &stack.Program{
			Requests: []stack.ProgramRequest{{Raw: stack.BuildRequest("GET", "/", lab.ServerIP, nil)}},
			Classes: []stack.ProgramClass{{Tasks: []stack.ProgramTask{{Weight: 1, Requests: []int{0}}},
				Wait: stack.Wait{Kind: stack.WaitConstant, Min: time.Hour}}},
		}
	} else {
		cfg.Mode, cfg.IdleTimeout = stack.Server, 2*o.timeout
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	s, err := stack.New(cfg)
	if err != nil {
		return fmt.Errorf("held: %w", err)
	}
	runtime.ReadMemStats(&ms1)
	// The table has no pointers: the collector has nothing to scan in it,
	// but a doubling heap target would let garbage grow to its size.
	debug.SetGCPercent(25)
	start := time.Now()
	out := json.NewEncoder(os.Stdout)
	report := func(event, note string) {
		_ = out.Encode(sample{Event: event, Role: o.role, Elapsed: time.Since(start).Seconds(), Conns: s.Conns(),
			TableB: ms1.HeapAlloc - ms0.HeapAlloc, BaseRSS: base, RSS: rss(), Counters: s.Counters(), Link: l.Stats(), Note: note})
	}
	cmds := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			cmds <- strings.TrimSpace(sc.Text())
		}
		close(cmds)
	}()
	report("ready", "")
	quit := false
	var handle func() bool
	// One clock for the stack's whole life (lab.Driver); the window keeps
	// at most -step launches awaiting their response.
	d := &lab.Driver{Stack: s, Waiter: l, Window: o.step}
	total := 0
	if o.role == "client" {
		total = o.conns
	}
	last, held := time.Now(), false
	handle = func() bool {
		select {
		case c, ok := <-cmds:
			switch {
			case !ok || c == "quit":
				quit = true
				return true
			case c == "stats":
				report("stats", "")
			case c == "second":
				sent := s.SecondRound(d.Now())
				report("second-sent", strconv.Itoa(sent))
			}
		default:
		}
		return false
	}
	err = d.Run(ctx, total, func(c *stack.Counters) bool {
		if total > 0 && !held {
			switch {
			case float64(c.SocketsFailed) > o.maxFail*float64(d.Launched()) && c.SocketsFailed > 100:
				held = true
				report("held", "ramp stopped: too many failures")
			case d.Launched() == total && lab.Answered(c) >= uint64(total):
				held = true
				report("held", "")
			case time.Since(last) >= 5*time.Second:
				last = time.Now()
				report("progress", "")
			}
		}
		return handle()
	})
	if err != nil && !quit {
		report("held", fmt.Sprintf("stopped: %v", err))
		return fmt.Errorf("held: %s: %w", o.role, err)
	}
	return nil
}

// childProc is a started child and its report lines.
type childProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan sample
}

func start(n *lab.Netns, ifname string, o options, role string) (*childProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("held: %w", err)
	}
	cmd := n.Command(self, "-role", role, "-if", ifname, "-conns", strconv.Itoa(o.conns), "-ips", strconv.Itoa(o.ips),
		"-step", strconv.Itoa(o.step), "-timeout", o.timeout.String(), "-rto", o.rto.String(),
		"-retries", strconv.Itoa(o.retries), "-max-fail", strconv.FormatFloat(o.maxFail, 'g', -1, 64),
		"-blocks", strconv.Itoa(o.blocks), "-window", strconv.Itoa(o.window), "-dut="+strconv.FormatBool(o.dut))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("held: %w", err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("held: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("held: %w", err)
	}
	c := &childProc{cmd: cmd, in: in, lines: make(chan sample, 16)}
	go func() {
		sc := bufio.NewScanner(outp)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var s sample
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				fmt.Fprintf(os.Stderr, "held: %s: %s\n", role, sc.Text())
				continue
			}
			c.lines <- s
		}
		close(c.lines)
	}()
	return c, nil
}

// next waits for the child's next line of the event, up to the deadline.
func (c *childProc) next(event string, deadline time.Time) (sample, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		select {
		case s, ok := <-c.lines:
			if !ok {
				return s, errors.New("held: child ended")
			}
			if s.Event == event {
				return s, nil
			}
			if s.Event == "progress" {
				fmt.Fprintf(os.Stderr, "%6.1fs %s: %d held, %d failed, %d SYN retransmitted, RSS %d MiB\n", s.Elapsed, s.Role,
					s.Counters.SocketsCurrent, s.Counters.SocketsFailed, s.Counters.RetransSyn, s.RSS>>20)
			}
		case <-t.C:
			return sample{}, fmt.Errorf("held: no %q before the deadline", event)
		}
	}
}

func (c *childProc) ask(cmd, event string, deadline time.Time) (sample, error) {
	if _, err := fmt.Fprintln(c.in, cmd); err != nil {
		return sample{}, fmt.Errorf("held: %w", err)
	}
	return c.next(event, deadline)
}

func (c *childProc) end() {
	_, _ = fmt.Fprintln(c.in, "quit")
	_ = c.in.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

func drive(o options) error {
	if _, _, err := ports(o); err != nil {
		return err
	}
	deadline := time.Now().Add(o.timeout)
	l, err := lab.New()
	if err != nil {
		return err
	}
	defer l.Close()
	var p *lab.Pair
	var dut *lab.DUT
	if o.dut {
		if dut, err = l.DUTChain(lab.DUTConfig{ClientIPs: o.ips, Conns: o.conns}); err != nil {
			return err
		}
		p = &lab.Pair{Client: dut.Client, Server: dut.Server, Cicada: dut.Cicada, Peer: dut.Peer}
	} else if p, err = l.StackPair(); err != nil {
		return err
	}
	// conntrack reads the device's table (with -dut) for the report.
	conntrack := func() string {
		if dut == nil {
			return ""
		}
		ct, err := dut.Device.Conntrack()
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d entries, %d ESTABLISHED, others %v", ct.Total, ct.Established, ct.Other)
	}
	srv, err := start(p.Server, p.Peer.Name, o, "server")
	if err != nil {
		return err
	}
	defer srv.end()
	if _, err := srv.next("ready", deadline); err != nil {
		return err
	}
	cli, err := start(p.Client, p.Cicada.Name, o, "client")
	if err != nil {
		return err
	}
	defer cli.end()
	if _, err := cli.next("ready", deadline); err != nil {
		return err
	}
	load0 := loadavg()
	held, err := cli.next("held", deadline)
	if err != nil {
		return err
	}
	ramp := held.Elapsed
	fmt.Fprintf(os.Stderr, "held: ramp done in %.1f s (%s)\n", ramp, held.Note)
	time.Sleep(min(o.hold, time.Until(deadline)/4)) // the hold itself is the measurement, not synchronisation
	ctHeld := conntrack()
	cs, err := cli.ask("stats", "stats", deadline)
	if err != nil {
		return err
	}
	ss, err := srv.ask("stats", "stats", deadline)
	if err != nil {
		return err
	}
	sentLine, err := cli.ask("second", "second-sent", deadline)
	if err != nil {
		return err
	}
	sent, _ := strconv.ParseUint(sentLine.Note, 10, 64)
	secStart := time.Now()
	// Leave the last 20 s of the bound for the report.
	secEnd := deadline.Add(-20 * time.Second)
	var sec sample
	for {
		if sec, err = cli.ask("stats", "stats", deadline); err != nil {
			return err
		}
		c := sec.Counters
		if c.SecondRoundOK+c.SecondRoundFailed >= sent {
			break
		}
		if time.Now().After(secEnd) {
			fmt.Fprintln(os.Stderr, "held: second round not done before the time bound")
			break
		}
		time.Sleep(500 * time.Millisecond) // polling the child, bounded by the deadline
	}
	sec.Note = fmt.Sprintf("%d sent, %d OK, %d failed in %.1f s", sent, sec.Counters.SecondRoundOK, sec.Counters.SecondRoundFailed, time.Since(secStart).Seconds())
	ss2, err := srv.ask("stats", "stats", deadline)
	if err != nil {
		return err
	}
	printReport(o, load0, ramp, held, cs, ss, sec, ss2)
	if dut != nil {
		fmt.Printf("device conntrack             %s after the ramp; %s after the second round\n", ctHeld, conntrack())
	}
	return nil
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func printReport(o options, load0 string, ramp float64, held, cs, ss, sec, ss2 sample) {
	c, s := cs.Counters, ss.Counters
	per := func(b uint64, n uint64) string {
		if n == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(b)/float64(n), 'f', 1, 64)
	}
	w := os.Stdout
	fmt.Fprintf(w, "connections requested        %d (%d client addresses x %d ports)\n", o.conns, o.ips, o.conns/o.ips)
	fmt.Fprintf(w, "held: client / server        %d / %d\n", c.SocketsCurrent, s.SocketsCurrent)
	fmt.Fprintf(w, "ramp                         %.1f s (%.0f conn/s), step %d; %s\n", ramp, float64(held.Counters.HTTP2xx)/ramp, o.step, held.Note)
	fmt.Fprintf(w, "responses 2xx / failed       %d / %d\n", c.HTTP2xx, c.SocketsFailed)
	fmt.Fprintf(w, "retransmitted SYN / data     %d / %d (client), %d / %d (server)\n", c.RetransSyn, c.RetransData, s.RetransSyn, s.RetransData)
	fmt.Fprintf(w, "resets in / out              %d / %d (client), %d / %d (server)\n", c.RstIn, c.RstOut, s.RstIn, s.RstOut)
	fmt.Fprintf(w, "link drops (kernel)          %d (client), %d (server)\n", cs.Link.KernelDrops, ss.Link.KernelDrops)
	for _, x := range []sample{cs, ss} {
		n := x.Counters.SocketsCurrent
		fmt.Fprintf(w, "%-6s table %d records, %d MiB: %s B/record, %s B/held conn; RSS %d MiB (base %d): %s B/held conn\n",
			x.Role, x.Conns, x.TableB>>20, per(x.TableB, uint64(x.Conns)), per(x.TableB, n), x.RSS>>20, x.BaseRSS>>20, per(x.RSS-x.BaseRSS, n))
	}
	sc := sec.Counters
	window := o.window
	if window == 0 {
		window = stack.DefaultSecondRoundWindow
	}
	fmt.Fprintf(w, "second round                 %s, window %d; requests %d -> %d, 2xx %d -> %d, SYN out %d -> %d, reconnects %d, server served %d -> %d\n",
		sec.Note, window, c.HTTPRequests, sc.HTTPRequests, c.HTTP2xx, sc.HTTP2xx, c.SynOut, sc.SynOut, sc.Reconnects, s.Served200, ss2.Counters.Served200)
	fmt.Fprintf(w, "second round: retransmitted  %d data, %d dropped for want of a TX buffer (client); link drops %d (client), %d (server)\n",
		sc.RetransData-c.RetransData, sc.DropNoTxBuffer-c.DropNoTxBuffer, sec.Link.KernelDrops, ss2.Link.KernelDrops)
	fmt.Fprintf(w, "load average                 %s at ramp start, %s at the end\n", load0, loadavg())
}
