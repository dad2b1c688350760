package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/diag"
	"github.com/cicada-load/cicada/internal/locustlog"
	"github.com/cicada-load/cicada/internal/shutdown"
	"github.com/cicada-load/cicada/locustfile"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/scenario"
	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/worker"
)

// defaultScenario is used when no -f is given: the seed scenario, one user
// class sending GET / and then idling for 900 s on its keep-alive connection.
// defaultScenarioName names it in --help and in the log.
const defaultScenario = `# cicada's built-in default scenario
users:
  - name: HelloWorldUser
    wait: constant(900)
    tasks:
      - path: /
`

const defaultScenarioName = "the built-in default scenario (user class HelloWorldUser: GET / on the host of -H, then idle 900 s, as examples/seed.yaml)"

// ErrPythonLocustfile means -f named a file that holds Python but not under
// a .py name: the locustfile reader (package locustfile) reads .py files,
// comma-separated lists of them and directories, as Locust does.
var ErrPythonLocustfile = errors.New("a Python locustfile must be named *.py")

// pythonLocustfileHelp is what to do instead, appended to ErrPythonLocustfile.
const pythonLocustfileHelp = "rename it to a .py file and pass it with -f (cicada reads the HttpUser subset of doc/locustfile.md), " +
	"or convert it once with cicada convert, or write a YAML scenario (examples/demo.yaml) and pass it with -f"

// looksLikePython reports whether data's first statement is a Python import
// or class, as a locustfile's is (YAML has no such lines).
func looksLikePython(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, p := range []string{"import ", "from ", "class ", "def ", "@"} {
			if strings.HasPrefix(line, p) {
				return true
			}
		}
		return false
	}
	return false
}

// app carries what every mode needs.
type app struct {
	cfg    *config.Config
	dp     *dataplaneOpts // --dataplane's options; nil without it
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	logOut io.Writer // where log lines go (stderr, --logfile or nowhere)
	args   []string  // the command line, which --worker --processes passes on (options.go)
	file   *scenario.File
	// statsFormat is the master's table and CSV layout, shared with the
	// web UI's downloads and the HTML report.
	statsFormat stats.Format
	// learnClasses: a master without -f dispatches the classes its cicada
	// workers report (or the positional UserClass names), not the
	// built-in default scenario's.
	learnClasses bool
}

func runMode(cfg *config.Config, dp *dataplaneOpts, args []string, stdout, stderr io.Writer) int {
	a := &app{cfg: cfg, dp: dp, args: args, stdout: stdout, stderr: stderr}
	closeLog, err := a.setupLogging()
	if err != nil {
		fmt.Fprintf(stderr, "cicada: %v\n", err)
		return 1
	}
	defer closeLog()
	if err := a.loadScenario(); err != nil {
		a.log.Error(err.Error())
		return 1
	}
	if cfg.ShowTaskRatio || cfg.ShowTaskRatioJSON {
		return a.showTaskRatio() // taskratio.go
	}
	a.applyEqualWeights() // options.go: after the ratio, as Locust
	if err := a.checkRate(); err != nil {
		a.log.Error(err.Error())
		return 1
	}
	if cfg.List {
		fmt.Fprintln(stdout, "Available Users:")
		if a.learnClasses { // a master without -f: the names given, if any
			for _, name := range cfg.UserClasses {
				fmt.Fprintf(stdout, "    %s\n", name)
			}
			return 0
		}
		for _, c := range a.file.Scenario.Classes {
			fmt.Fprintf(stdout, "    %s\n", c.Name)
		}
		return 0
	}
	// The first signal quits gracefully; a worker that takes longer than
	// workerQuitGrace, or a second signal, is stopped at once.
	sig := shutdown.Notify(context.Background(), workerQuitGrace)
	defer sig.Stop()
	switch {
	case cfg.Worker:
		if n := a.workerProcesses(); n > 0 {
			return a.runWorkerProcesses(sig, n) // options.go
		}
		return a.runWorker(sig)
	case cfg.Master:
		return a.runMaster(sig.Quit)
	default:
		return a.runStandalone(sig.Quit)
	}
}

// workerQuitGrace bounds a worker's graceful quit after a signal (its final
// report and quit message to the master).
const workerQuitGrace = 10 * time.Second

func (a *app) setupLogging() (func(), error) {
	level, err := locustlog.ParseLevel(a.cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	var w io.Writer = a.stderr
	closeFn := func() {}
	if a.cfg.LogFile != "" {
		f, err := os.OpenFile(a.cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("cannot open log file: %w", err)
		}
		w, closeFn = f, func() { f.Close() }
	}
	if a.cfg.SkipLogSetup {
		w = io.Discard
	}
	a.logOut = w
	a.log = slog.New(locustlog.New(w, level)).With("logger", "cicada.main")
	return closeFn, nil
}

// loadScenario reads -f, or the built-in default scenario, and narrows the
// classes to the positional UserClass arguments.
func (a *app) loadScenario() error {
	var (
		f   *scenario.File
		err error
	)
	if a.cfg.Locustfile == "" {
		fi, statErr := os.Stat("locustfile.py")
		hasLocustfile := statErr == nil && !fi.IsDir()
		if hasLocustfile {
			a.log.Info("No -f given: reading ./locustfile.py, as Locust does")
			f, err = a.loadLocustfile("locustfile.py")
		} else {
			f, err = scenario.Parse("<built-in default scenario>", []byte(defaultScenario), os.LookupEnv)
		}
		switch {
		case err != nil || hasLocustfile:
		case a.cfg.Master && len(a.cfg.UserClasses) > 0:
			a.learnClasses = true
			a.log.Info("No -f given: the master dispatches the user classes named on the command line (weight 1 each)")
		case a.cfg.Master:
			a.learnClasses = true
			a.log.Info("No -f given: the master dispatches the user classes its cicada workers report (weight 1 each; " +
				"Python workers report none before they run users: give -f for them, and for weights and fixed counts)")
		default:
			a.log.Info("No -f given: running " + defaultScenarioName)
		}
	} else if a.cfg.Locustfile == "-" {
		if !a.cfg.Worker {
			return fmt.Errorf("-f - (the scenario from the master) is for workers (--worker): %w", config.ErrUsage)
		}
		f, err = a.fetchScenario()
	} else if locustfile.IsLocustfileSpec(a.cfg.Locustfile) {
		f, err = a.loadLocustfile(a.cfg.Locustfile)
	} else {
		f, err = scenario.Load(a.cfg.Locustfile)
		if err != nil {
			if data, rerr := os.ReadFile(a.cfg.Locustfile); rerr == nil && looksLikePython(data) {
				return fmt.Errorf("-f %s looks like Python: %w: %s", a.cfg.Locustfile, ErrPythonLocustfile, pythonLocustfileHelp)
			}
		}
	}
	if err != nil {
		return err
	}
	if len(a.cfg.UserClasses) > 0 && !a.learnClasses {
		byName := map[string]worker.UserClass{}
		for _, c := range f.Scenario.Classes {
			byName[c.Name] = c
		}
		var kept []worker.UserClass
		var unknown []string
		for _, name := range a.cfg.UserClasses {
			c, ok := byName[name]
			if !ok {
				unknown = append(unknown, name)
				continue
			}
			kept = append(kept, c)
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return fmt.Errorf("Unknown User(s): %v", unknown) //nolint:staticcheck // ST1005: Locust's wording, which scripts match
		}
		f.Scenario.Classes = kept
	}
	if a.cfg.Host != "" {
		f.Scenario.Host = a.cfg.Host
	}
	if err := master.CheckHost(f.Scenario.Host); err != nil {
		return fmt.Errorf("%s: host: %w", f.Path, err)
	}
	for _, c := range f.Scenario.Classes {
		if err := master.CheckHost(c.Host); err != nil {
			return fmt.Errorf("%s: user class %s: host: %w", f.Path, c.Name, err)
		}
	}
	a.file = f
	return nil
}

func (a *app) workerOptions(log *slog.Logger) (worker.Options, error) {
	ips, err := a.sourceIPs()
	return worker.Options{
		MasterHost:  a.cfg.MasterHost,
		MasterPort:  a.cfg.MasterPort,
		NodeID:      childNodeID(a.cfg.NodeID),
		Logger:      log,
		SourceIPs:   ips,
		Transport:   zmtp.Options{Plain: a.clusterAuth()},
		MaxUsers:    a.cfg.MaxUsers,
		Tags:        a.cfg.Tags,
		ExcludeTags: a.cfg.ExcludeTags,
	}, err
}

// sourceIPs parses --source-ips (nil when not set).
func (a *app) sourceIPs() ([]netip.Addr, error) {
	if a.cfg.SourceIPs == "" {
		return nil, nil
	}
	return diag.ParseSourceIPs(a.cfg.SourceIPs)
}

func (a *app) runWorker(sig *shutdown.Signals) int {
	log := a.log.With("logger", "cicada.worker")
	opts, err := a.workerOptions(log)
	if err != nil {
		a.log.Error(err.Error())
		return 1
	}
	if os.Getenv(localWorkerEnv) == "1" { // a --processes child of standalone
		opts.StatsInterval = localStatsInterval
	}
	rt, err := a.dataplaneRuntime(log)
	if err != nil {
		a.log.Error(err.Error())
		return dataplaneExit(err)
	}
	if rt != nil {
		opts.Runtime, opts.MaxUsers = rt, rt.MaxUsers()
	}
	w, err := worker.New(opts, a.file.Scenario)
	if err != nil {
		if rt != nil {
			_ = rt.Close() // Run, which would close it, never runs
		}
		a.log.Error(err.Error())
		return 1
	}
	stopBench, err := benchAgent(w, a.dp, log)
	if err != nil {
		a.log.Error(err.Error())
		return 1
	}
	defer stopBench()
	a.log.Info(fmt.Sprintf("Starting cicada %s worker %s, connecting to %s:%d", version, w.NodeID(), a.cfg.MasterHost, a.cfg.MasterPort))
	// A signal quits gracefully (the master is told, as Python workers
	// do); if that takes too long the worker is dropped.
	done := make(chan struct{})
	go func() {
		select {
		case <-sig.Quit.Done():
			w.Quit()
		case <-done:
		}
	}()
	err = w.Run(sig.Force)
	close(done)
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		a.log.Info("Shutting down (exit code 0)")
		return 0
	case errors.Is(err, worker.ErrNoAck):
		a.log.Error(fmt.Sprintf("Failed to connect to the Locust master: %v", err))
		return 255
	default:
		a.log.Error(err.Error())
		return 1
	}
}
