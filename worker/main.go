package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
)

// Main runs sc as a worker program and exits: the quickest way to turn Go
// user classes into a Locust worker binary (like boomer's Run). It reads
// Locust's worker options from the command line and the environment:
//
//	--master-host  (LOCUST_MASTER_NODE_HOST, default 127.0.0.1)
//	--master-port  (LOCUST_MASTER_NODE_PORT, default 5557; 1-65535)
//	-H, --host     (LOCUST_HOST) default host when the master sends none
//	-L, --loglevel (LOCUST_LOGLEVEL: DEBUG, INFO, WARNING, ERROR)
//	--max-users    Options.MaxUsers (cicada only)
//
// The first SIGINT or SIGTERM makes the worker quit gracefully (final stats,
// then quit to the master, as a Python worker does); a second one exits at
// once. The exit code is 0 after a quit and 1 on errors.
func Main(sc Scenario) {
	os.Exit(mainArgs(context.Background(), os.Args[1:], os.Getenv, os.Stderr, sc))
}

func mainArgs(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, sc Scenario) int {
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	envOr := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	port, err := strconv.Atoi(envOr("LOCUST_MASTER_NODE_PORT", strconv.Itoa(DefaultMasterPort)))
	if err != nil {
		fmt.Fprintf(stderr, "invalid LOCUST_MASTER_NODE_PORT: %v\n", err)
		return 2
	}
	host := fs.String("master-host", envOr("LOCUST_MASTER_NODE_HOST", DefaultMasterHost), "host or IP address of the master")
	fs.IntVar(&port, "master-port", port, "port of the master")
	target := fs.StringP("host", "H", envOr("LOCUST_HOST", sc.Host), "default host to load test, when the master sends none")
	level := fs.StringP("loglevel", "L", envOr("LOCUST_LOGLEVEL", "INFO"), "DEBUG, INFO, WARNING or ERROR")
	maxUsers := fs.Int64("max-users", 0, "most users a spawn may ask of this worker (0: the open-files limit, -1: no ceiling)")
	fs.Bool("worker", true, "accepted for Locust compatibility; this program is always a worker")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if port < 1 || port > 65535 {
		// 0 would silently become DefaultMasterPort, others dial nowhere.
		fmt.Fprintf(stderr, "invalid --master-port %d: must be 1-65535\n", port)
		return 2
	}
	var lv slog.Level
	switch strings.ToUpper(*level) {
	case "DEBUG":
		lv = slog.LevelDebug
	case "INFO":
		lv = slog.LevelInfo
	case "WARNING", "WARN":
		lv = slog.LevelWarn
	case "ERROR", "CRITICAL":
		lv = slog.LevelError
	default:
		fmt.Fprintf(stderr, "invalid log level %q\n", *level)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	sc.Host = *target
	w, err := New(Options{MasterHost: *host, MasterPort: port, Logger: log, MaxUsers: *maxUsers}, sc)
	if err != nil {
		log.Error("invalid scenario", "err", err)
		return 1
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
		case <-ctx.Done():
			return
		}
		log.Info("signal: quitting")
		w.Quit()
		select {
		case <-sig:
			log.Warn("second signal: exiting at once")
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := w.Run(ctx); err != nil {
		log.Error("worker failed", "err", err)
		return 1
	}
	return 0
}
