package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/internal/locustlog"
	"github.com/cicada-load/cicada/internal/shutdown"
)

// Main runs sc as a worker program and exits: the quickest way to turn Go
// user classes into a Locust worker binary (like boomer's Run). It reads
// Locust's options with cicada's parser (package config: command line,
// LOCUST_* environment, locust.conf files); a worker uses
//
//	--master-host  (LOCUST_MASTER_NODE_HOST, default 127.0.0.1)
//	--master-port  (LOCUST_MASTER_NODE_PORT, default 5557; 1-65535)
//	-H, --host     (LOCUST_HOST) default host when the master sends none
//	-L, --loglevel (LOCUST_LOGLEVEL: DEBUG, INFO, WARNING, ERROR, CRITICAL)
//	--node-id      (CICADA_NODE_ID) Options.NodeID
//	--max-users    (CICADA_MAX_USERS) Options.MaxUsers (cicada only)
//
// and accepts and ignores the master's options. A usage error exits with
// code 2. The first SIGINT or SIGTERM makes the worker quit gracefully
// (final stats, then quit to the master, as a Python worker does); a second
// one exits at once (package internal/shutdown, shared with the cicada
// command). The exit code is 0 after a quit and 1 on errors.
func Main(sc Scenario) {
	os.Exit(mainArgs(context.Background(), os.Args[1:], os.Getenv, os.Stderr, sc))
}

func mainArgs(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, sc Scenario) int {
	p := config.NewParser(stderr, getenv, "", "")
	cfg, err := p.Parse(args)
	switch {
	case errors.Is(err, config.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "%v\n", err)
		return 2
	}
	lv, err := locustlog.ParseLevel(cfg.LogLevel)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	if cfg.Host != "" {
		sc.Host = cfg.Host
	}
	w, err := New(Options{MasterHost: cfg.MasterHost, MasterPort: cfg.MasterPort, NodeID: cfg.NodeID, Logger: log, MaxUsers: cfg.MaxUsers}, sc)
	if err != nil {
		log.Error("invalid scenario", "err", err)
		return 1
	}

	sig := shutdown.Notify(ctx, 0)
	defer sig.Stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sig.Quit.Done():
		case <-done:
			return
		}
		if ctx.Err() != nil {
			return // not a signal
		}
		log.Info("signal: quitting")
		w.Quit()
		select {
		case <-sig.Force.Done():
			if ctx.Err() == nil {
				log.Warn("second signal: exiting at once")
			}
		case <-done:
		}
	}()
	if err := w.Run(sig.Force); err != nil {
		log.Error("worker failed", "err", err)
		return 1
	}
	return 0
}
