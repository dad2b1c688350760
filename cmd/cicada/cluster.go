package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/dataplane/users"
	"github.com/cicada-load/cicada/internal/locustlog"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/thresholds"
	"github.com/cicada-load/cicada/web"
	"github.com/cicada-load/cicada/worker"
)

// runMaster runs a distributed master on one processor unless GOMAXPROCS
// says otherwise: its work is one loop, as Locust's master is one Python
// thread, and one processor spares it the scheduler's cross-thread
// wake-ups, a fifth of its CPU with thousands of workers (bench/master).
func (a *app) runMaster(ctx context.Context) int {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if a.cfg.ClusterSecret != "" {
		a.log.Info("Cluster secret set: workers must present it (ZMTP PLAIN); Python Locust workers cannot join")
	}
	return a.runCluster(ctx, true)
}
func (a *app) runStandalone(ctx context.Context) int { return a.runCluster(ctx, false) }

// runCluster runs a master (distributed) or a master with local workers
// (standalone: in-process, or --processes child processes), plus the web UI
// unless --headless.
func (a *app) runCluster(ctx context.Context, distributed bool) int {
	cfg := a.cfg
	headless := cfg.Headless
	withWeb := !headless
	logs := web.NewLogBuffer(500)
	log := a.log
	if withWeb {
		log = a.teeLog(logs)
	}

	localWorkers := 0
	if !distributed {
		localWorkers = 1
		if cfg.Processes != 0 {
			localWorkers = cfg.Processes
			if localWorkers < 0 {
				localWorkers = runtime.NumCPU()
			}
		}
	}
	// The data plane's runtime first: an interface it refuses ends the run
	// before the master binds.
	var rt *users.Runtime
	if localWorkers > 0 {
		var err error
		if rt, err = a.dataplaneRuntime(log.With("logger", "cicada.worker")); err != nil {
			log.Error(err.Error())
			return dataplaneExit(err)
		}
	}
	opts := a.masterOptions(log, distributed, localWorkers)
	a.statsFormat = opts.StatsFormat
	var err error
	if opts.Thresholds, err = a.thresholds(); err != nil {
		log.Error(err.Error())
		if rt != nil {
			_ = rt.Close()
		}
		return 1
	}
	m, err := master.New(opts)
	if err != nil {
		if errors.Is(err, master.ErrBind) {
			log.Error(fmt.Sprintf("The Locust master port (%d) was busy. Close any applications using that port - perhaps an old instance of Locust master is still running? (%v)", cfg.MasterBindPort, err))
		} else {
			log.Error(err.Error())
		}
		if rt != nil {
			_ = rt.Close()
		}
		return 1
	}
	runner := newMasterRunner(m, a, distributed, logs)
	runner.localWorkers = localWorkers

	var wg sync.WaitGroup
	defer wg.Wait()
	auxCtx, stopAux := context.WithCancel(context.Background())
	defer stopAux()

	if localWorkers > 0 {
		port := m.Addr().(*net.TCPAddr).Port
		if err := a.startLocalWorkers(auxCtx, &wg, port, localWorkers, cfg.Processes != 0, rt); err != nil {
			log.Error(err.Error())
			m.Close()
			return 1
		}
	}

	var hist *web.History
	var webFailed atomic.Bool // the web UI stopped serving on its own
	if withWeb {
		srv := web.New(web.Options{
			Addr:    webAddr(cfg.WebHost, cfg.WebPort),
			Auth:    cfg.WebAuth,
			TLSCert: cfg.TLSCert,
			TLSKey:  cfg.TLSKey,
			Logger:  log.With("logger", "cicada.web"),
			Version: version,
			Format:  opts.StatsFormat,
			// Standalone's stats are live (localStatsInterval): share one
			// /stats/requests body for half a second, not Locust's 2 s.
			StatsCacheTTL: func() time.Duration {
				if distributed {
					return 0
				}
				return standaloneStatsCacheTTL
			}(),
			FullHistoryCSV: func() string {
				if cfg.CSVPrefix != "" && cfg.CSVFullHistory {
					return cfg.CSVPrefix + "_stats_history.csv"
				}
				return ""
			}(),
		}, runner)
		hist = srv.History()
		// Listen before anything is reported as started: a web UI that
		// cannot start (port busy, TLS files missing) ends the process
		// with exit code 1, not a master without its UI and exit code 0.
		ln, err := srv.Listen()
		if err != nil {
			log.Error(fmt.Sprintf("web interface cannot start: %v", err))
			m.Close()
			return 1
		}
		if cfg.WebHost == "" || cfg.WebHost == "*" {
			log.Info(fmt.Sprintf("Starting web interface at http://0.0.0.0:%d (accepting connections from all network interfaces)", cfg.WebPort))
		} else {
			log.Info(fmt.Sprintf("Starting web interface at http://%s", webAddr(cfg.WebHost, cfg.WebPort)))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(auxCtx, ln); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, web.ErrClosed) {
				log.Error(fmt.Sprintf("web interface: %v", err))
				webFailed.Store(true)
				m.Quit()
			}
		}()
	} else if cfg.HTMLFile != "" {
		hist = web.NewHistory(web.DefaultHistorySize)
		wg.Add(1)
		go func() {
			defer wg.Done()
			hist.Run(auxCtx, runner, web.DefaultHistoryInterval, time.Now)
		}()
	}
	log.Info(fmt.Sprintf("Starting cicada %s", version))

	res, err := m.Run(ctx)
	code := res.ExitCode()
	if err != nil {
		log.Error(err.Error())
		if code == 0 {
			code = 1
		}
	}
	if webFailed.Load() && code == 0 {
		code = 1
	}
	if err := a.writeJSON(m, res.Thresholds); err != nil {
		log.Error(err.Error())
		if code == 0 {
			code = 1
		}
	}
	if cfg.HTMLFile != "" {
		if err := a.writeHTML(runner, hist, res.Thresholds); err != nil {
			log.Error(err.Error())
		}
	}
	stopAux()
	return code
}

func (a *app) masterOptions(log *slog.Logger, distributed bool, localWorkers int) master.Options {
	cfg := a.cfg
	opts := master.Options{
		BindHost:             cfg.MasterBindHost,
		ScenarioFile:         servedScenario(cfg.Locustfile),
		BindPort:             cfg.MasterBindPort,
		Headless:             cfg.Headless,
		Autostart:            cfg.Autostart && !cfg.Headless,
		Autoquit:             autoquit(cfg.Autoquit),
		ExpectWorkers:        cfg.ExpectWorkers,
		ExpectWorkersMaxWait: time.Duration(cfg.ExpectWorkersMaxWait) * time.Second,
		Users:                cfg.Users,
		SpawnRate:            cfg.SpawnRate,
		Host:                 cfg.Host,
		RunTime:              time.Duration(cfg.RunTime),
		StopTimeout:          time.Duration(cfg.StopTimeout),
		ResetStats:           cfg.ResetStats,
		EnableRebalancing:    cfg.EnableRebalancing,
		CSVPrefix:            cfg.CSVPrefix,
		CSVFullHistory:       cfg.CSVFullHistory,
		SecondRound:          cfg.SecondRound,
		PrintStats:           cfg.PrintStats,
		OnlySummary:          cfg.OnlySummary,
		ExitCodeOnError:      &cfg.ExitCodeOnError,
		Stderr:               a.stderr,
		Logger:               log.With("logger", "cicada.runners"),
		ParsedOptions:        a.parsedOptions(),
	}
	opts.Transport.Plain = a.clusterAuth()
	if !distributed {
		// Standalone: the master listens on loopback only, on a free port,
		// and waits for its own local workers.
		opts.BindHost = "127.0.0.1"
		opts.BindPort = -1
		opts.ExpectWorkers = localWorkers
		opts.StatsFormat.Standalone = true
		opts.Standalone = true
	}
	switch {
	case a.learnClasses: // the positional names, or none: the workers' classes
		for _, name := range cfg.UserClasses {
			opts.UserClasses = append(opts.UserClasses, master.UserClass{Name: name, Weight: 1})
		}
	default:
		for _, c := range a.file.Scenario.Classes {
			opts.UserClasses = append(opts.UserClasses, master.UserClass{Name: c.Name, Weight: c.Weight, FixedCount: c.FixedCount})
		}
	}
	opts.Stages = slices.Clone(a.file.Stages) // the master may fill in defaults
	a.applyRate(&opts)
	return opts
}

// parsedOptions is the spawn message's parsed_options: the Locust option
// names Python workers read (tags, exclude_tags, expect_workers) and the
// common ones for their custom code.
func (a *app) parsedOptions() map[string]any {
	cfg := a.cfg
	list := func(v []string) any {
		if v == nil {
			return nil
		}
		out := make([]any, len(v))
		for i, s := range v {
			out[i] = s
		}
		return out
	}
	var host any
	if cfg.Host != "" {
		host = cfg.Host
	}
	return map[string]any{
		"host":           host,
		"num_users":      int64(cfg.Users),
		"spawn_rate":     cfg.SpawnRate,
		"run_time":       int64(time.Duration(cfg.RunTime) / time.Second),
		"headless":       cfg.Headless,
		"expect_workers": int64(cfg.ExpectWorkers),
		"tags":           list(cfg.Tags),
		"exclude_tags":   list(cfg.ExcludeTags),
		"stop_timeout":   float64(time.Duration(cfg.StopTimeout)) / float64(time.Second),
		"reset_stats":    cfg.ResetStats,
		"user_classes":   list(cfg.UserClasses),
	}
}

// startLocalWorkers runs n workers against the local master: in-process
// goroutines, or with --processes child processes of this binary (each has
// its own open-files limit).
//
// rt, if set, is the data plane's runtime of the one in-process worker
// (config refuses --dataplane with --processes).
func (a *app) startLocalWorkers(ctx context.Context, wg *sync.WaitGroup, port, n int, processes bool, rt *users.Runtime) error {
	if processes {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--processes: cannot find this executable: %w", err)
		}
		for i := 0; i < n; i++ {
			args := []string{"--worker", "--master-host", "127.0.0.1", "--master-port", strconv.Itoa(port), "--loglevel", "WARNING"}
			if a.cfg.Locustfile != "" {
				args = append(args, "-f", a.cfg.Locustfile)
			}
			if a.cfg.SourceIPs != "" {
				args = append(args, "--source-ips", a.cfg.SourceIPs)
			}
			if a.cfg.ClusterSecretFile != "" { // else the environment carries it
				args = append(args, "--cluster-secret-file", a.cfg.ClusterSecretFile)
			}
			args = append(args, a.cfg.UserClasses...)
			cmd := exec.CommandContext(ctx, self, args...)
			cmd.Stdout, cmd.Stderr = a.stderr, a.stderr
			cmd.Env = append(os.Environ(), localWorkerEnv+"=1")
			cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
			cmd.WaitDelay = 15 * time.Second
			if err := cmd.Start(); err != nil {
				return fmt.Errorf("--processes: %w", err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = cmd.Wait()
			}()
		}
		return nil
	}
	level := slog.LevelWarn
	if a.cfg.LogLevel == "DEBUG" {
		level = slog.LevelDebug
	}
	wlog := slog.New(locustlog.New(a.stderr, level)).With("logger", "cicada.worker")
	ips, err := a.sourceIPs()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		wopts := worker.Options{MasterHost: "127.0.0.1", MasterPort: port, Logger: wlog, SourceIPs: ips,
			StatsInterval: localStatsInterval, Transport: zmtp.Options{Plain: a.clusterAuth()}}
		if rt != nil {
			wopts.Runtime, wopts.MaxUsers = rt, rt.MaxUsers()
		}
		w, err := worker.New(wopts, a.file.Scenario)
		if err != nil {
			if rt != nil {
				_ = rt.Close() // Run, which would close it, never runs
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				wlog.Error(err.Error())
			}
		}()
	}
	return nil
}

// localStatsInterval is the stats report period of standalone's
// in-process workers: Locust standalone counts each request at once, so
// its charts, tables and CSV history move every second; a report every
// quarter second (in process, a few hundred bytes) gives the same.
const localStatsInterval = 250 * time.Millisecond

// localWorkerEnv, set to 1 in the environment of --processes' child
// workers (this binary), gives them localStatsInterval. It is a contract
// between the parent and its children, not an option.
const localWorkerEnv = "CICADA_INTERNAL_LOCAL_WORKER"

// standaloneStatsCacheTTL is how long standalone's web UI shares one
// /stats/requests body (the web package doubles it when building one takes
// longer).
const standaloneStatsCacheTTL = 500 * time.Millisecond

// teeLog returns a logger that also keeps its lines for GET /logs.
func (a *app) teeLog(buf *web.LogBuffer) *slog.Logger {
	level, _ := locustlog.ParseLevel(a.cfg.LogLevel)
	return slog.New(locustlog.New(io.MultiWriter(a.logOut, buf), level)).With("logger", "cicada.main")
}

func (a *app) writeHTML(r *masterRunner, hist *web.History, verdict *thresholds.Verdict) error {
	a.log.Info("writing html report to file: " + a.cfg.HTMLFile)
	f, err := os.Create(a.cfg.HTMLFile)
	if err != nil {
		return fmt.Errorf("cannot write the HTML report: %w", err)
	}
	data := web.ReportData{Status: r.Status(), Snapshot: r.Snapshot(), Version: version, Format: a.statsFormat, Thresholds: verdict}
	if hist != nil {
		data.History = hist.Points()
	}
	if err := web.WriteReport(f, data); err != nil {
		f.Close()
		return fmt.Errorf("cannot write the HTML report: %w", err)
	}
	return f.Close()
}

// autoquit is --autoquit (seconds, -1 for never) as master.Options.Autoquit.
func autoquit(seconds int) time.Duration {
	if seconds < 0 {
		return -1
	}
	return time.Duration(seconds) * time.Second
}

func webAddr(host string, port int) string {
	if host == "*" {
		host = ""
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// servedScenario is the file a master serves to workers started with -f -:
// its own -f, if it has one.
func servedScenario(locustfile string) string {
	if locustfile == "-" {
		return ""
	}
	return locustfile
}
