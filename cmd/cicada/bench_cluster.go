package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/capacity/cluster"
	"github.com/cicada-load/cicada/capacity/probe"
	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/internal/locustlog"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/worker"
)

// benchClusterOpts are `cicada bench`'s cluster flags (issue 17).
type benchClusterOpts struct {
	master        bool
	bindHost      string
	bindPort      int
	workers       int
	maxWait       time.Duration
	secretFile    string
	heartbeatTime time.Duration
}

// benchClusterOnly are the flags that need --master.
var benchClusterOnly = []string{"master-bind-host", "master-bind-port", "expect-workers", "expect-workers-max-wait", "cluster-secret-file", "heartbeat-timeout"}

func benchClusterFlags(fs *pflag.FlagSet, co *benchClusterOpts) {
	fs.BoolVar(&co.master, "master", false, "Run the search as the controller of a cluster: every trial is split between --expect-workers cicada workers (cicada --worker --master-host H)")
	fs.StringVar(&co.bindHost, "master-bind-host", "*", "Cluster: the interface the workers connect to (* for all)")
	fs.IntVar(&co.bindPort, "master-bind-port", 5557, "Cluster: the port the workers connect to")
	fs.IntVar(&co.workers, "expect-workers", 1, "Cluster: the number of workers each trial runs on")
	fs.DurationVar(&co.maxWait, "expect-workers-max-wait", cluster.DefaultWaitTimeout, "Cluster: give up when the workers are not all ready after this long")
	fs.StringVar(&co.secretFile, "cluster-secret-file", "", "Cluster: file with the workers' secret (ZMTP PLAIN); or set "+config.ClusterSecretEnv)
	fs.DurationVar(&co.heartbeatTime, "heartbeat-timeout", cluster.DefaultHeartbeatTimeout, "Cluster: a worker silent this long is lost (its trial is invalid)")
}

// benchClusterCheck refuses cluster flags without --master and the
// combinations a cluster cannot honour.
func benchClusterCheck(fs *pflag.FlagSet, co *benchClusterOpts) error {
	if !co.master {
		for _, name := range benchClusterOnly {
			if fs.Changed(name) {
				return fmt.Errorf("--%s needs --master", name)
			}
		}
		return nil
	}
	if fs.Changed("dataplane") {
		return fmt.Errorf("--dataplane with --master: the controller runs no trials; start the workers with --dataplane afpacket")
	}
	if co.workers < 1 || co.workers > 10000 {
		return fmt.Errorf("--expect-workers %d must be 1 to 10000", co.workers)
	}
	if co.bindPort < 0 || co.bindPort > 65535 {
		return fmt.Errorf("--master-bind-port %d is not a port", co.bindPort)
	}
	if co.maxWait <= 0 || co.heartbeatTime <= 0 {
		return fmt.Errorf("--expect-workers-max-wait and --heartbeat-timeout must be positive")
	}
	return nil
}

// benchClusterSecret reads the cluster secret (CICADA_CLUSTER_SECRET or
// --cluster-secret-file, not both).
func benchClusterSecret(co *benchClusterOpts) (*zmtp.PlainAuth, error) {
	env := os.Getenv(config.ClusterSecretEnv)
	var secret string
	switch {
	case env != "" && co.secretFile != "":
		return nil, fmt.Errorf("%s and --cluster-secret-file are both set; give the cluster secret once", config.ClusterSecretEnv)
	case env != "":
		if len(env) > config.MaxClusterSecret {
			return nil, fmt.Errorf("%s: more than %d bytes", config.ClusterSecretEnv, config.MaxClusterSecret)
		}
		secret = env
	case co.secretFile != "":
		s, err := config.ReadClusterSecret(co.secretFile)
		if err != nil {
			return nil, fmt.Errorf("--cluster-secret-file: %w", err)
		}
		secret = s
	default:
		return nil, nil
	}
	return &zmtp.PlainAuth{Username: clusterUsername, Password: secret}, nil
}

// benchCluster binds the controller, waits for the workers and returns the
// search's trial across them and a close function (quit to the workers).
// Errors before the wait are option errors (exit 2); a wait that ends
// without the workers is returned as waitErr (exit 1). workers names the
// workers the trials run on. tlso are the TLS flags, sent to the workers
// when po is over TLS (each builds its own configuration from them); po's
// mix is sent as is.
func benchCluster(ctx context.Context, co *benchClusterOpts, test probe.Test, po probe.Options, objectSize int, tlso *benchTLSOptions, stderr io.Writer) (
	trial capacity.TrialFunc, workers []string, closeFn func(), waitErr, err error) {
	if po.TLS != nil && tlso == nil {
		return nil, nil, nil, nil, errors.New("cluster: HTTPS without its TLS options to send to the workers")
	}
	if (test.Name == "tps" || test.Name == "throughput") && po.Conns < co.workers {
		return nil, nil, nil, nil, fmt.Errorf("--conns %d over %s: each worker needs at least one keep-alive connection (--conns is the cluster's total)",
			po.Conns, plural(co.workers, "worker"))
	}
	plain, err := benchClusterSecret(co)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	log := slog.New(locustlog.New(stderr, slog.LevelInfo)).With("logger", "cicada.bench")
	host := co.bindHost
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		host = "[" + host + "]"
	}
	c, err := cluster.Listen(cluster.Options{Bind: "tcp://" + host + ":" + strconv.Itoa(co.bindPort), Workers: co.workers, Test: test.Name, WaitTimeout: co.maxWait,
		HeartbeatTimeout: co.heartbeatTime, Plain: plain, Logger: log})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	closeFn = func() {
		if err := c.Close(); err != nil {
			log.Warn(err.Error())
		}
	}
	log.Info(fmt.Sprintf("cicada bench %s: controller on %s, waiting for %s (at most %v)", test.Name, c.Addr(), plural(co.workers, "worker"), co.maxWait))
	if err := c.Wait(ctx); err != nil {
		return nil, nil, closeFn, err, nil
	}
	for _, w := range c.Workers() {
		log.Info("trials run on " + w)
	}
	o := cluster.ProbeOptions{Addr: po.Addr, Host: po.Host, Path: po.Path, HTTP: po.HTTP, Duration: po.Duration, ConnectTimeout: po.ConnectTimeout,
		Timeout: po.Timeout, Hold: po.Hold, LagTolerance: po.LagTolerance, Conns: po.Conns, Window: po.Window, ObjectSize: objectSize, CPUBusy: po.CPUBusy,
		Mix: po.Mix}
	if po.TLS != nil {
		o.TLS = tlso.clusterTLS()
	}
	return c.TrialFunc(test.Name, test.Integer, o), c.Workers(), closeFn, nil, nil
}

// benchAgent installs the bench agent on a worker (cmd's worker mode): it
// answers a bench controller and runs its trials on kernel sockets, or, for
// a data-plane worker (dp set), the data plane's trials (cps, concurrent,
// teardown; afpacket) on its interface, client address and ports. The
// returned stop ends a trial in progress, waits for it and closes what the
// trials opened.
func benchAgent(w *worker.Worker, dp *dataplaneOpts, log *slog.Logger) (stop func(), err error) {
	o := cluster.AgentOptions{Logger: log, TLS: benchClusterTLSConfig}
	closeDP := func() {}
	if dp != nil {
		o, closeDP = benchDataplaneAgent(dp, log)
	}
	o.Connected = w.Registered // a trial stops soon after its controller is gone
	ctx, cancel := context.WithCancel(context.Background())
	a := cluster.NewAgent(ctx, w, o)
	if err := a.Register(w); err != nil {
		cancel()
		closeDP()
		return nil, err
	}
	return func() { cancel(); a.Wait(); closeDP() }, nil
}

// benchClusterParams are the report's parameters of a cluster: the
// generator and each worker.
func benchClusterParams(ps []capacity.Param, workers []string) []capacity.Param {
	var runtimes []string
	for _, w := range workers {
		if _, rt, ok := strings.Cut(w, "), "); ok && !slices.Contains(runtimes, rt) {
			runtimes = append(runtimes, rt)
		}
	}
	for i := range ps {
		if ps[i].Name == "generator" {
			ps[i].Value = benchClusterGenerator(strings.Join(runtimes, " and "), len(workers))
		}
	}
	for _, w := range workers {
		name, rest, _ := strings.Cut(w, " (") // "worker 1 (ID), kernel sockets"
		ps = append(ps, capacity.Param{Name: name, Value: strings.Replace(rest, "), ", ", ", 1)})
	}
	return ps
}

// benchClusterGenerator is the report's generator parameter of a cluster:
// "cicada VERSION, kernel sockets, N workers".
func benchClusterGenerator(runtimes string, n int) string {
	return "cicada " + version + ", " + runtimes + ", " + plural(n, "worker")
}

// plural is "1 worker", "2 workers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
