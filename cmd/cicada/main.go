// Command cicada is a load tester that joins Locust clusters as a master or a
// worker, or runs standalone. This file only parses flags and wires
// components; all logic lives in the library packages.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/master"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usageHead = `Usage: cicada [OPTIONS] [UserClass ...]
       cicada convert LOCUSTFILE.py [-o OUT.yaml]
       cicada target [--listen 127.0.0.1:8080]
       cicada target --dataplane afpacket|afxdp --interface IF --listen ADDR:PORT --client-ips RANGE
       cicada target --dataplane dpdk --dpdk-eal EAL --dpdk-port PORT --listen ADDR:PORT --client-ips RANGE
       cicada bench concurrent|cps|teardown|tps|throughput|latency -H http://IP:PORT (RFC 3511/9411 searches)

cicada is a Go load tester that speaks Locust's master/worker protocol: run it
as a worker of a Python Locust master (--worker), as a master of Python and Go
workers (--master), or standalone (both in one process).

-f reads a YAML scenario (examples/*.yaml) or Python locustfiles (.py, a
comma-separated list, a directory) whose HttpUser classes stay within the
subset of doc/locustfile.md; classes outside it are listed and left out.
Without -f cicada reads ./locustfile.py if there is one (as Locust does),
or else runs the built-in
default scenario: user class HelloWorldUser, GET / on the host (-H), then
idle 900 s, as examples/seed.yaml; a master without -f dispatches the user
classes its cicada workers report.

Options:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "target" {
		return runTarget(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "bench" {
		return runBench(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "convert" {
		return runConvert(args[1:], stdout, stderr)
	}
	p := config.NewParser(stderr, nil, "", "")
	fs := p.FlagSet()
	fs.Usage = func() {
		fmt.Fprint(stdout, usageHead)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	cfg, err := p.Parse(args)
	switch {
	case errors.Is(err, config.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "cicada: error: %v\n", trimUsage(err))
		return 2
	}
	if cfg.Version {
		fmt.Fprintf(stdout, "cicada %s\n", version)
		return 0
	}
	if err := master.CheckHost(cfg.Host); err != nil {
		fmt.Fprintf(stderr, "cicada: error: -H/--host: %v\n", err)
		return 2
	}
	dp, err := parseDataplane(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "cicada: error: %v\n", err)
		return 2
	}
	return runMode(cfg, dp, args, stdout, stderr)
}

// trimUsage drops the "config: usage: " prefix from a parse error.
func trimUsage(err error) string {
	const prefix = "config: usage: "
	s := err.Error()
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}
