package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/dataplane/ifcheck"
	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/dataplane/stack"
	"github.com/cicada-load/cicada/target"
)

const targetUsage = `Usage: cicada target [--listen 127.0.0.1:8080]
       cicada target --dataplane afpacket|afxdp --interface IF --listen 198.18.1.1:80 --client-ips RANGE
       cicada target --dataplane dpdk --dpdk-eal EAL --dpdk-port PORT --listen 198.18.1.1:80 --client-ips RANGE

A small HTTP server to point load tests at: a 128-byte page on every GET path,
/status/<code>, /delay/<ms>, /bytes/<n> (an n-byte object), and its counters
at /_cicada/stats.

--tls-self-signed (a new certificate, its fingerprint printed) or
--tls-cert/--tls-key serve the same routes over HTTPS (HTTP/1.1).

With --dataplane a userspace TCP stack serves the page and /bytes/<n> instead
(GET and HEAD), on the
interface, to any number of connections (no file descriptor per connection):
run one beside a cicada --dataplane worker to test far past a kernel server's
file limit. Counters are printed every --report-every and at SIGINT/SIGTERM.

Options:`

// targetDataplaneOnly are the target's options that need --dataplane.
var targetDataplaneOnly = []string{"interface", "client-ips", "client-ports", "gateway", "dataplane-cores", "dataplane-dedicated", "body-size", "report-every", "dpdk-eal", "dpdk-port"}

// runTarget is `cicada target`: the built-in target server, until SIGINT or
// SIGTERM; it prints what it served when it stops.
func runTarget(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("cicada target", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	listen := fs.String("listen", target.DefaultListen, "Address to listen on (host:port; port 0 picks a free port; with --dataplane the address the stack answers for, port 0 is 80)")
	h2c := fs.Bool("h2c", false, "Also serve HTTP/2 cleartext with prior knowledge (h2c) on the same port (not with --dataplane)")
	tcpEcho := fs.String("tcp-echo", "", "Also echo raw TCP on this address (host:port) for tcp users; the WebSocket echo is always on /ws")
	idle := fs.Duration("idle-timeout", 0, "Close keep-alive connections idle this long (0: never; 24h with --dataplane)")
	stallAfter := fs.Duration("stall-after", 0, "Script a stall: hold every response from this long after the start, for --stall-for")
	stallFor := fs.Duration("stall-for", 0, "Length of the stall of --stall-after (0: none; /_cicada/stall?ms=N stalls at any time)")
	dp := fs.String("dataplane", "", "Serve from a userspace TCP stack: afpacket, afxdp or dpdk (Linux, root; dpdk: make build-dpdk)")
	iface := fs.String("interface", "", "Data plane: the interface to serve on")
	clientIPs := fs.String("client-ips", "", "Data plane: the clients' address range (as the worker's --client-ips)")
	clientPorts := fs.String("client-ports", config.DefaultClientPorts, "Data plane: the clients' port range (as the worker's --client-ports)")
	gateway := fs.String("gateway", "", "Data plane: next hop towards the clients (default: the MAC of the first client frame)")
	cores := fs.Int("dataplane-cores", 0, "Data plane: polling loops, one per core (default 1; more need afpacket)")
	dedicated := fs.Bool("dataplane-dedicated", false, "Data plane: the interface is dedicated to the test; its safety refusals become warnings")
	body := fs.Int("body-size", stack.DefaultBodySize, "Data plane: the page's body size in bytes")
	every := fs.Duration("report-every", target.DefaultReportEvery, "Data plane: print the counters this often")
	dpdkEAL := fs.String("dpdk-eal", "", "Data plane dpdk: DPDK's EAL arguments as one string (doc/dpdk.md)")
	dpdkPort := fs.String("dpdk-port", "", "Data plane dpdk: the port, by number, PCI address or device name")
	dpdkIdle := fs.String("dpdk-idle-sleep", "", "Data plane dpdk: how long a core with nothing to do sleeps, e.g. 50us (default: poll without pause)")
	var tlsOpts targetTLS
	tlsOpts.flags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stdout, targetUsage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cicada target: error: unexpected arguments %q\n", fs.Args())
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if *dp == "" {
		for _, name := range targetDataplaneOnly {
			if fs.Lookup(name).Changed {
				fmt.Fprintf(stderr, "cicada target: error: --%s requires --dataplane\n", name)
				return 2
			}
		}
		if *stallAfter < 0 || *stallFor < 0 {
			fmt.Fprintf(stderr, "cicada target: error: --stall-after and --stall-for must not be negative\n")
			return 2
		}
		tc, err := tlsOpts.config(*listen, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "cicada target: error: %v\n", err)
			return 2
		}
		return runKernelTarget(ctx, target.Options{Listen: *listen, IdleTimeout: *idle, H2C: *h2c, Logger: log, StallAfter: *stallAfter, StallFor: *stallFor, TLS: tc}, *tcpEcho, stderr)
	}
	if tlsOpts.set() {
		fmt.Fprintln(stderr, "cicada target: error: --tls-cert, --tls-key and --tls-self-signed are the kernel target's (the data plane serves plain HTTP)")
		return 2
	}
	if *h2c {
		fmt.Fprintln(stderr, "cicada target: error: --h2c is not served by the data plane (it speaks HTTP/1.1 only)")
		return 2
	}
	if *tcpEcho != "" {
		fmt.Fprintln(stderr, "cicada target: error: --tcp-echo is served by the kernel target, not with --dataplane")
		return 2
	}
	o := target.DataplaneOptions{Link: *dp, Interface: *iface, Cores: *cores, BodySize: *body, IdleTimeout: *idle,
		Dedicated: *dedicated, ReportEvery: *every, Logger: log}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "cicada target: error: "+format+"\n", a...)
		return 2
	}
	var err error
	switch {
	case fs.Lookup("stall-after").Changed || fs.Lookup("stall-for").Changed:
		return usage("--stall-after and --stall-for are the kernel target's (not with --dataplane)")
	case *dp != "afpacket" && *dp != "afxdp" && *dp != "dpdk":
		return usage("argument --dataplane: invalid choice %q (choose from afpacket, afxdp, dpdk)", *dp)
	case *dp != "dpdk" && (fs.Lookup("dpdk-eal").Changed || fs.Lookup("dpdk-port").Changed || fs.Lookup("dpdk-idle-sleep").Changed):
		return usage("--dpdk-eal, --dpdk-port and --dpdk-idle-sleep require --dataplane dpdk")
	case *dp == "dpdk" && !dpdk.Available:
		return usage("argument --dataplane: %v", dpdk.ErrUnsupported)
	case *dp == "dpdk" && *dpdkPort == "":
		return usage("--dataplane dpdk requires --dpdk-port (a number, PCI address or device name)")
	case *dp != "dpdk" && *iface == "":
		return usage("--dataplane requires --interface")
	case !fs.Lookup("listen").Changed:
		return usage("--dataplane requires --listen ADDR:PORT, the server address the stack answers for (the kernel must not own it)")
	case *clientIPs == "":
		return usage("--dataplane requires --client-ips, the clients' address range")
	case *cores < 0 || *cores > config.MaxDataplaneCores:
		return usage("argument --dataplane-cores: must be 0-%d, got %d", config.MaxDataplaneCores, *cores)
	case *body < 0 || *body > stack.MaxBodySize:
		return usage("argument --body-size: must be 0-%d, got %d", stack.MaxBodySize, *body)
	case *every <= 0:
		return usage("argument --report-every: must be positive, got %v", *every)
	case *idle < 0:
		return usage("argument --idle-timeout: must not be negative, got %v", *idle)
	}
	if *dp == "dpdk" {
		eal, err := dpdk.SplitArgs(*dpdkEAL)
		if err != nil {
			return usage("argument --dpdk-eal: %v", err)
		}
		idle, err := dpdk.ParseIdleSleep(*dpdkIdle)
		if err != nil {
			return usage("argument --dpdk-idle-sleep: %v", err)
		}
		o.DPDK = dpdk.Config{EAL: eal, Port: *dpdkPort, IdleSleep: idle}
	}
	if o.Listen, err = netip.ParseAddrPort(*listen); err != nil || !o.Listen.Addr().Is4() {
		return usage("argument --listen: %q is not an IPv4 address and port", *listen)
	}
	if o.Clients, err = ifcheck.ParseRange(*clientIPs); err != nil {
		return usage("argument --client-ips: %v", err)
	}
	if o.PortMin, o.PortMax, err = ifcheck.ParsePorts(*clientPorts); err != nil {
		return usage("argument --client-ports: %v", err)
	}
	if *gateway != "" {
		if o.Gateway, err = netip.ParseAddr(*gateway); err != nil || !o.Gateway.Is4() {
			return usage("argument --gateway: %q is not an IPv4 address", *gateway)
		}
	}
	return runDataplaneTarget(ctx, o, stderr)
}

func runKernelTarget(ctx context.Context, o target.Options, tcpEcho string, stderr io.Writer) int {
	srv, err := target.New(o)
	if err != nil {
		fmt.Fprintf(stderr, "cicada target: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "cicada target serving %s\n", srv.URL())
	if tcpEcho != "" {
		a, err := srv.ListenTCPEcho(tcpEcho)
		if err != nil {
			srv.Close()
			fmt.Fprintf(stderr, "cicada target: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "cicada target echoing TCP on %s\n", a)
	}
	err = srv.Run(ctx)
	c := srv.Counters()
	fmt.Fprintf(stderr, "cicada target served %d requests on %d connections\n", c.Requests, c.ConnectionsAccepted)
	if c.AcceptErrors > 0 {
		fmt.Fprintf(stderr, "cicada target: %d accepts failed and were retried (out of file descriptors?)\n", c.AcceptErrors)
	}
	if err != nil && !errors.Is(err, target.ErrClosed) && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "cicada target: %v\n", err)
		return 1
	}
	return 0
}

func runDataplaneTarget(ctx context.Context, o target.DataplaneOptions, stderr io.Writer) int {
	o.Report = func(c stack.Counters, l link.Counters) {
		fmt.Fprintf(stderr, "cicada target: %s\n", dataplaneLine(c, l))
	}
	d, err := target.NewDataplane(o)
	if err != nil {
		fmt.Fprintf(stderr, "cicada target: %v\n", err)
		if errors.Is(err, target.ErrDataplane) || errors.Is(err, ifcheck.ErrUnsafe) || errors.Is(err, ifcheck.ErrInterface) {
			return 2
		}
		return 1
	}
	where := o.Interface
	if o.Link == "dpdk" {
		where = "port " + o.DPDK.Port
	}
	fmt.Fprintf(stderr, "cicada target serving http://%s/ on %s (%s), %d client records\n", o.Listen, where, o.Link, d.Conns())
	if err := d.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "cicada target: %v\n", err)
		return 1
	}
	c, _ := d.Counters()
	fmt.Fprintf(stderr, "cicada target served %d pages on %d connections\n", c.Served200, c.SocketsOpened)
	return 0
}

// dataplaneLine formats the data plane target's counters on one line.
func dataplaneLine(c stack.Counters, l link.Counters) string {
	return fmt.Sprintf("open %d, opened %d, closed %d, failed %d, served %d (405: %d, 400: %d), syn in %d, rst in %d out %d, retransmits %d, drops not-for-us %d no-socket %d checksum %d; link rx %d tx %d frames, tx no buffer %d dropped %d",
		c.SocketsCurrent, c.SocketsOpened, c.SocketsClosed, c.SocketsFailed, c.Served200, c.Served405, c.Served400, c.SynIn, c.RstIn, c.RstOut,
		c.RetransSyn+c.RetransData+c.RetransFin+c.FastRetransmit, c.DropNotForUs, c.DropNoSocket, c.DropChecksum,
		l.RxFrames, l.TxFrames, l.TxNoBuffer, l.TxDropped)
}
