package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/cicada-load/cicada/target"
)

// runTarget is `cicada target`: the built-in target server, until SIGINT or
// SIGTERM; it prints what it served when it stops.
func runTarget(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("cicada target", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", target.DefaultListen, "Address to listen on (host:port; port 0 picks a free port)")
	idle := fs.Duration("idle-timeout", 0, "Close keep-alive connections idle this long (0: never)")
	fs.Usage = func() {
		fmt.Fprintln(stdout, "Usage: cicada target [--listen 127.0.0.1:8080]\n\nA small HTTP server to point load tests at: a 128-byte page on every GET path,\n/status/<code>, /delay/<ms>, and its counters at /_cicada/stats.\n\nOptions:")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := target.New(target.Options{Listen: *listen, IdleTimeout: *idle, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "cicada target: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "cicada target serving %s\n", srv.URL())
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
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
