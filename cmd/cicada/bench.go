package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/cluster"
	"github.com/cicada-load/cicada/capacity/probe"
)

const benchUsage = `Usage: cicada bench TEST -H http[s]://IP:PORT [OPTIONS]

Finds the highest load a device under test (a firewall, load balancer or
server between cicada and its target) sustains, by RFC 3511 / RFC 9411's
methodology: trials of --trial-time, first stepping the load up by
--step-factor from --start, then a binary search between the highest pass
and the lowest failure to --resolution. A trial passes with no failed
connection or transaction (--failure-ratio allows some), within
--latency-bound, achieving --min-achieved of the offered load, and (concurrent)
every held connection answering the second round. A trial where the
generator itself was the limit (open files, ports, CPU, pacing) is INVALID:
it is repeated --retry-invalid times (a stall on a busy machine passes), then
the search stops and says so instead of reporting a false maximum.

Tests:
  concurrent   connections held at once, then a second round (RFC 3511 5.2, RFC 9411 7.5)
  cps          new connections per second (RFC 3511 5.3, RFC 9411 7.2; --http: one GET each)
  teardown     connections closed per second (RFC 3511 5.4)
  tps          HTTP transactions per second on --conns keep-alive connections (RFC 3511 5.7)
  throughput   Mbit/s of --object-size objects from /bytes/N (RFC 3511 5.6, RFC 9411 7.3)
  latency      the search of --of (cps or tps), then a trial at --fraction of its maximum
               (RFC 3511 5.10, RFC 9411 7.4); --load skips the search

HTTPS (-H https://IP:PORT; RFC 9411 7.6-7.9): every new connection makes a
full TLS handshake unless --tls-resume; cps and concurrent send their GET
inside it; the report states the TLS options and the trials what was
negotiated. --mix SIZE:WEIGHT,... (tps, throughput; RFC 9411 7.1) fetches
/bytes/N objects whose sizes are drawn by weight per arrival, the same
sequence in every run.

Kernel sockets, standalone. --dataplane afpacket|afxdp|dpdk runs every test
on the userspace data plane instead (one client address, its own client
ports, one core; dpdk in a binary from make build-dpdk, with --dpdk-eal and
--dpdk-port as the worker's), each trial the same contract as the kernel's;
--http, --window, --hold, https and --mix are refused there (one GET per
connection always; connections open at 2,000/s).
Cluster: --master --expect-workers N waits (--expect-workers-max-wait) for N
cicada workers (cicada --worker --master-host H) and splits every trial
between them (rates and connections evenly; tps/throughput's --conns is the
total); a worker lost during a trial makes it INVALID (exit 3). A worker
started with --dataplane afpacket runs every test on its data plane (other
links, https and --mix are refused there).
HTTPS (the TLS flags as given; the CA, certificate and key files are read
on each worker), --mix and each worker's generator strain travel with the
trials to kernel-socket workers.
Exit status: 0 a maximum found (or the range's top passed), 1 none found
(or the search stopped: SIGINT, a trial that could not run; the table
shows the trials that ran and the highest pass as a lower bound), 3 invalid
(the generator was the limit), 2 bad options.

Options:`

// benchOptions are `cicada bench`'s flags.
type benchOptions struct {
	host                      string
	trial, connectTO, timeout time.Duration
	hold, latencyBound, lag   time.Duration
	pause                     time.Duration
	start, max, stepFactor    float64
	resolution, failureRatio  float64
	minAchieved, latencyPct   float64
	cpuBusy, fraction, load   float64
	maxTrials, conns, window  int
	retryInvalid              int
	objectSize                int
	confirm, http             bool
	path, of, csv, html       string
	dataplane                 string
}

func runBench(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("cicada bench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	var o benchOptions
	fs.StringVarP(&o.host, "host", "H", "", "The target: http://IP:PORT (through the device under test)")
	fs.DurationVar(&o.trial, "trial-time", probe.DefaultDuration, "Each rate trial's duration")
	fs.Float64Var(&o.start, "start", 0, "The first trial's load (default: the test's)")
	fs.Float64Var(&o.max, "max", 0, "The highest load tried (default: the test's)")
	fs.Float64Var(&o.stepFactor, "step-factor", 2, "Step phase: the load's factor after each pass")
	fs.Float64Var(&o.resolution, "resolution", 0.05, "Binary phase: stop when the bounds are this fraction apart")
	fs.IntVar(&o.maxTrials, "max-trials", 30, "At most this many trials")
	fs.BoolVar(&o.confirm, "confirm", false, "Repeat the found maximum once before reporting it")
	fs.DurationVar(&o.pause, "pause", time.Second, "Rest between trials, so that one trial's leftovers in the device do not weigh on the next")
	fs.IntVar(&o.retryInvalid, "retry-invalid", 1, "Repeat a trial the generator limited up to this many times before stopping on it")
	fs.Float64Var(&o.failureRatio, "failure-ratio", 0, "Fraction of connections/transactions allowed to fail (RFC 9411: 0.00001)")
	fs.DurationVar(&o.latencyBound, "latency-bound", 0, "Fail trials whose --latency-percentile is above this (0: no bound)")
	fs.Float64Var(&o.latencyPct, "latency-percentile", 95, "The percentile --latency-bound applies to: 50, 95 or 99")
	fs.Float64Var(&o.minAchieved, "min-achieved", 0, "Fraction of the offered load a trial must achieve (default: 0.95 for rates, 0 for concurrent)")
	fs.BoolVar(&o.http, "http", false, "cps, concurrent, teardown: one HTTP GET on each new connection (RFC 9411's TCP/HTTP tests)")
	fs.StringVar(&o.path, "path", "", "The request path (default /, throughput /bytes/<object-size>)")
	fs.IntVar(&o.objectSize, "object-size", 65536, "throughput: the object's size in bytes")
	fs.IntVar(&o.conns, "conns", probe.DefaultConns, "tps, throughput: keep-alive connections")
	fs.IntVar(&o.window, "window", probe.DefaultWindow, "concurrent, teardown: connects in flight while opening")
	fs.DurationVar(&o.connectTO, "connect-timeout", probe.DefaultConnectTimeout, "A connect that takes longer fails")
	fs.DurationVar(&o.timeout, "timeout", probe.DefaultTimeout, "A transaction or close that takes longer fails")
	fs.DurationVar(&o.hold, "hold", 0, "concurrent: hold the connections this long before the second round")
	fs.Float64Var(&o.cpuBusy, "cpu-busy", probe.DefaultCPUBusy, "Generator limit: the process's CPU use, as a fraction of its cores (1: never)")
	fs.DurationVar(&o.lag, "lag-tolerance", probe.DefaultLagTolerance, "Generator limit: arrivals issued later than this count as late")
	fs.StringVar(&o.of, "of", "tps", "latency: the rate test whose maximum it runs at a fraction of (cps or tps)")
	fs.Float64Var(&o.fraction, "fraction", 0.5, "latency: the fraction of the maximum (RFC 9411: 0.5)")
	fs.Float64Var(&o.load, "load", 0, "latency: the maximum to take instead of searching for it")
	fs.StringVar(&o.csv, "csv", "", "Write the trials to PREFIX_bench.csv")
	fs.StringVar(&o.html, "html", "", "Write the report, with a chart of the search, to this HTML file")
	fs.StringVar(&o.dataplane, "dataplane", "", "Run the test on the userspace data plane: afpacket, afxdp (Linux, root) or dpdk (a dpdk build)")
	var dpo benchDataplaneOpts
	fs.StringVar(&dpo.iface, "interface", "", "Data plane: the interface towards the device")
	fs.StringVar(&dpo.clientIPs, "client-ips", "", "Data plane: the client address (one)")
	fs.StringVar(&dpo.clientPorts, "client-ports", "10000-60000", "Data plane: the client ports the trials take slices of")
	fs.StringVar(&dpo.gateway, "gateway", "", "Data plane: the next hop (default: the server address, by ARP)")
	fs.BoolVar(&dpo.dedicated, "dataplane-dedicated", false, "Data plane: the interface is dedicated to the test; its safety refusals become warnings")
	fs.StringVar(&dpo.dpdkEAL, "dpdk-eal", "", "Data plane dpdk: DPDK's EAL arguments as one string (as the worker's --dpdk-eal)")
	fs.StringVar(&dpo.dpdkPort, "dpdk-port", "", "Data plane dpdk: the port, by number, PCI address or device name")
	fs.StringVar(&dpo.dpdkIdle, "dpdk-idle-sleep", "", "Data plane dpdk: how long an idle poll sleeps, e.g. 50us (default: poll without pause)")
	var tlso benchTLSOptions
	tlso.flags(fs) // bench_tls.go
	var co benchClusterOpts
	benchClusterFlags(fs, &co)
	fs.Usage = func() {
		fmt.Fprintln(stdout, benchUsage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "cicada bench: error: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() != 1 {
		return fail("want one TEST (concurrent, cps, teardown, tps, throughput or latency), got %q", fs.Args())
	}
	test, err := probe.LookupTest(fs.Arg(0))
	if err != nil {
		return fail("%v", err)
	}
	if err := benchCheckOptions(fs, &o); err != nil { // bench_hostile.go
		return fail("%v", err)
	}
	if !fs.Changed("dataplane") {
		for _, name := range benchDataplaneOnly {
			if fs.Changed(name) {
				return fail("--%s needs --dataplane", name)
			}
		}
	}
	if err := benchClusterCheck(fs, &co); err != nil {
		return fail("%v", err)
	}
	search := test
	if test.Name == "latency" {
		if search, err = probe.LookupTest(o.of); err != nil || (o.of != "cps" && o.of != "tps") {
			return fail("--of %q: latency runs at a fraction of cps or tps", o.of)
		}
		if !(o.fraction > 0 && o.fraction <= 1) {
			return fail("--fraction %v must be in (0, 1]", o.fraction)
		}
		if o.load < 0 {
			return fail("--load %v must not be negative", o.load)
		}
	} else {
		for _, name := range []string{"of", "fraction", "load"} {
			if fs.Changed(name) {
				return fail("--%s is for the latency test only", name)
			}
		}
	}
	hostURL, https := benchScheme(o.host)
	addr, host, err := benchTarget(hostURL)
	if err != nil {
		return fail("%v", err)
	}
	tlsCfg, mix, variantParams, err := benchVariants(fs, tlso.controller(co.master), https, host, search.Name)
	if err != nil {
		return fail("%v", err)
	}
	variantParams = tlso.clusterParams(variantParams, co.master)
	o.http = o.http || https
	test.Title, test.RFC = benchVariantTitle(test, https, mix != nil)
	search.Title, search.RFC = benchVariantTitle(search, https, mix != nil)
	if o.objectSize <= 0 || o.objectSize > 16<<20 {
		return fail("--object-size %d must be 1 to 16777216 bytes", o.objectSize)
	}
	if fs.Changed("object-size") && search.Name != "throughput" {
		return fail("--object-size is for the throughput test (use --path /bytes/N with tps)")
	}
	for flag, tests := range benchFlagTests {
		if fs.Changed(flag) && !strings.Contains(" "+tests+" ", " "+search.Name+" ") {
			return fail("--%s is for %s, not %s", flag, tests, search.Name)
		}
	}
	path := o.path
	if path == "" {
		path = "/"
		if search.Name == "throughput" {
			path = "/bytes/" + strconv.Itoa(o.objectSize)
		}
	}
	p, err := probe.New(probe.Options{Addr: addr, Host: host, Path: path, HTTP: o.http, Duration: o.trial, ConnectTimeout: o.connectTO,
		Timeout: o.timeout, Conns: o.conns, Window: o.window, Hold: o.hold, CPUBusy: o.cpuBusy, LagTolerance: o.lag, TLS: tlsCfg, Mix: mix})
	if err != nil {
		return fail("%v", err)
	}
	trial, err := p.TrialFunc(search.Name, o.objectSize)
	if err != nil {
		return fail("%v", err)
	}
	if fs.Changed("dataplane") {
		if !fs.Changed("connect-timeout") { // the stack's first SYN retransmission
			_ = fs.Set("connect-timeout", "300ms")
		}
		for _, name := range []string{"window", "hold"} {
			if fs.Changed(name) {
				return fail("--%s: the data plane opens its connections at 2,000/s and runs the second round at once", name)
			}
		}
		var closeLink func()
		if trial, closeLink, err = benchDataplane(o.dataplane, search.Name, addr, path, &o, &dpo, stderr); err != nil {
			return fail("%v", err)
		}
		defer closeLink()
	}
	if o.start == 0 {
		o.start = search.Start
	}
	if o.max == 0 {
		o.max = max(search.Max, o.start)
	}
	if !fs.Changed("min-achieved") {
		o.minAchieved = search.MinAchieved
	}
	s := capacity.Search{Start: o.start, Max: o.max, StepFactor: o.stepFactor, Resolution: o.resolution, Integer: search.Integer,
		MaxTrials: o.maxTrials, Confirm: o.confirm, RetryInvalid: o.retryInvalid, Pause: o.pause, Criteria: capacity.Criteria{MaxFailureRatio: o.failureRatio,
			LatencyBound: o.latencyBound, LatencyPercentile: o.latencyPct, MinAchieved: o.minAchieved}}
	if o.resolution == 0 {
		return fail("--resolution must be more than 0")
	}
	rep := &capacity.Report{Test: test.Name, Title: search.Title, RFC: search.RFC, Unit: search.Unit, Params: benchVariantParams(benchParams(fs, &o, search, path), variantParams, mix != nil)}
	if test.Name == "latency" {
		rep.Title, rep.RFC = test.Title+" at a fraction of the "+strings.ToLower(search.Title[:1])+search.Title[1:], test.RFC+"; the search: "+search.RFC
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if co.master {
		if err := s.Validate(); err != nil { // before the wait for the workers
			return fail("%v", err)
		}
		ct, workers, closeC, werr, err := benchCluster(ctx, &co, search, p.Options(), o.objectSize, &tlso, stderr)
		if closeC != nil {
			defer closeC()
		}
		if err != nil {
			return fail("%v", err)
		}
		if werr != nil {
			fmt.Fprintf(stderr, "cicada bench: error: %v\n", werr)
			return 1
		}
		trial = ct
		rep.Params = benchClusterParams(rep.Params, workers)
	}
	var res capacity.Result
	if test.Name == "latency" && o.load > 0 {
		res = capacity.Result{Max: o.load, Found: true}
	} else {
		res, err = s.Run(ctx, trial)
		if errors.Is(err, capacity.ErrBadSearch) || errors.Is(err, cluster.ErrWorkerOptions) {
			return fail("%v", err)
		}
	}
	rep.Result = res
	if err == nil && test.Name == "latency" && res.Max > 0 && res.Invalid == "" {
		var lt capacity.Trial
		lt, err = trial(ctx, res.Max*o.fraction)
		lt.Load = res.Max * o.fraction
		s.Criteria.Judge(&lt)
		rep.Latency, rep.LatencyFraction = &lt, o.fraction
	}
	code := benchWrite(rep, &o, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "cicada bench: %v\n", err)
		return 1
	}
	if code != 0 {
		return code
	}
	switch res.Outcome() {
	case "invalid":
		return 3
	case "none":
		return 1
	}
	return 0
}

// benchFlagTests are the tests (of the search) each test-specific option
// applies to: set for another, it is refused rather than ignored.
var benchFlagTests = map[string]string{
	"http":          "cps concurrent teardown",
	"conns":         "tps throughput",
	"window":        "concurrent teardown",
	"hold":          "concurrent",
	"trial-time":    "cps teardown tps throughput",
	"lag-tolerance": "cps teardown tps throughput",
}

// benchTarget checks -H: http://IP:PORT (an IP address, so that the
// generator's port-range check knows the destination).
func benchTarget(h string) (addr, host string, err error) {
	if h == "" {
		return "", "", errors.New("-H http://IP:PORT is required")
	}
	u, err := url.Parse(h)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return "", "", fmt.Errorf("-H %q must be http://IP:PORT or https://IP:PORT (no user, query or fragment; paths are not supported: --path sets the path)", h)
	}
	hostPort := u.Host
	if u.Port() == "" {
		hostPort += ":80"
	}
	ap, err := netip.ParseAddrPort(hostPort)
	if err != nil || !ap.Addr().Is4() {
		return "", "", fmt.Errorf("-H %q must name an IPv4 address and port (no host names)", h)
	}
	if ap.Port() == 0 {
		return "", "", fmt.Errorf("-H %q: port 0 is not a port to connect to", h)
	}
	return ap.String(), u.Host, nil
}

// benchParams are the report's parameters, as RFC 9411 section 6.3 asks.
func benchParams(fs *pflag.FlagSet, o *benchOptions, t probe.Test, path string) []capacity.Param {
	ps := []capacity.Param{{Name: "target", Value: o.host + path}, {Name: "test", Value: t.Name}, {Name: "generator", Value: "cicada " + version + ", kernel sockets, standalone"}}
	if o.dataplane != "" {
		ps[2].Value = "cicada " + version + ", data plane (" + o.dataplane + "), standalone"
	}
	if t.Name == "throughput" {
		ps = append(ps, capacity.Param{Name: "object size", Value: strconv.Itoa(o.objectSize) + " bytes"})
	}
	for _, name := range []string{"trial-time", "start", "max", "step-factor", "resolution", "max-trials", "pause", "confirm", "retry-invalid", "failure-ratio",
		"latency-bound", "latency-percentile", "min-achieved", "http", "conns", "window", "connect-timeout", "timeout", "hold", "cpu-busy", "lag-tolerance", "of", "fraction", "load"} {
		if tests, ok := benchFlagTests[name]; ok && !strings.Contains(" "+tests+" ", " "+t.Name+" ") {
			continue
		}
		f := fs.Lookup(name)
		v := f.Value.String()
		switch name {
		case "start":
			v = strconv.FormatFloat(o.start, 'f', -1, 64)
		case "max":
			v = strconv.FormatFloat(o.max, 'f', -1, 64)
		case "min-achieved":
			v = strconv.FormatFloat(o.minAchieved, 'f', -1, 64)
		case "of", "fraction", "load":
			if !f.Changed {
				continue
			}
		}
		ps = append(ps, capacity.Param{Name: name, Value: v})
	}
	return ps
}

// benchWrite prints the table and writes the CSV and HTML files asked for.
func benchWrite(rep *capacity.Report, o *benchOptions, stdout, stderr io.Writer) int {
	if err := rep.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "cicada bench: %v\n", err)
		return 1
	}
	write := func(path string, w func(io.Writer) error) int {
		f, err := os.Create(path)
		if err == nil {
			err = w(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "cicada bench: writing %s: %v\n", path, err)
			return 1
		}
		return 0
	}
	if o.csv != "" {
		if c := write(o.csv+"_bench.csv", rep.WriteCSV); c != 0 {
			return c
		}
	}
	if o.html != "" {
		return write(o.html, rep.WriteHTML)
	}
	return 0
}
