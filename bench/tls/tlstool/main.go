// Command tlstool is the cicada side of bench/tls: an https (and h2) nginx
// with a throw-away CA, TLS handshake and HTTP/2 load from worker/httpc,
// and idle held TLS or plain connections for RSS. See bench/tls/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/worker/httpc"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tlstool nginx|handshakes|h2|idle ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "nginx":
		err = nginx(os.Args[2:])
	case "handshakes":
		err = handshakes(os.Args[2:])
	case "h2":
		err = h2(os.Args[2:])
	case "idle":
		err = idle(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlstool:", err)
		os.Exit(1)
	}
}

// nginx runs an https nginx (h2 and http/1.1 by ALPN; or plain http with
// -plain) with a new test CA until a signal.
func nginx(args []string) error {
	fs := flag.NewFlagSet("nginx", flag.ExitOnError)
	dir := fs.String("dir", "", "directory for the config, certificates and logs")
	port := fs.Int("port", 0, "port on 127.0.0.1")
	plain := fs.Bool("plain", false, "serve plain http (for the keep-alive baseline)")
	_ = fs.Parse(args)
	if *dir == "" || *port == 0 {
		return errors.New("nginx: need -dir and -port")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := testpeer.NginxConfig{Dir: *dir, Port: *port, AccessLog: true, Connections: 19000, Backlog: 4096, Keepalive: 600 * time.Second,
		Locations: []testpeer.Location{{Path: "/", Status: 200, Body: "hello\n"}}}
	ca, err := testpeer.NewTestCA()
	if err != nil {
		return err
	}
	caFile, err := ca.WriteCA(*dir)
	if err != nil {
		return err
	}
	if !*plain {
		is, err := ca.Issue(testpeer.CertSpec{})
		if err != nil {
			return err
		}
		cert, key, err := is.WriteFiles(*dir, "server")
		if err != nil {
			return err
		}
		cfg.TLS = &testpeer.NginxTLS{CertFile: cert, KeyFile: key, HTTP2: true}
	}
	n, err := cfg.Start()
	if err != nil {
		return err
	}
	fmt.Printf("nginx pid=%d url=%s log=%s ca=%s\n", n.Pid(), n.URL(), filepath.Join(*dir, "access.log"), caFile)
	select {
	case <-ctx.Done():
	case <-n.Done():
		return fmt.Errorf("nginx exited: %s", n.Log())
	}
	return n.StopWithin(syscall.SIGQUIT, 10*time.Second)
}

type common struct {
	url, ca  string
	users    int
	duration time.Duration
}

func (c *common) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "https base URL")
	fs.StringVar(&c.ca, "ca", "", "CA bundle (PEM) of the server")
	fs.IntVar(&c.users, "users", 20, "users")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "test duration")
}

// run starts users goroutines running fn until the duration is over.
func (c *common) run(fn func(ctx context.Context, user int) error) (ok, failed int64) {
	end := time.Now().Add(c.duration)
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	var okN, failN atomic.Int64
	var firstErr sync.Once
	var wg sync.WaitGroup
	for i := range c.users {
		wg.Go(func() {
			for time.Now().Before(end) {
				if err := fn(ctx, i); err != nil {
					if time.Now().Before(end) { // not the end of the run cutting a request short
						failN.Add(1)
						firstErr.Do(func() { fmt.Fprintf(os.Stderr, "first failure: %v (%v)\n", err, httpc.Classify(err)) })
					}
				} else {
					okN.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return okN.Load(), failN.Load()
}

// handshakes: every request on a new connection, resumption off: one full
// TLS handshake per request.
func handshakes(args []string) error {
	fs := flag.NewFlagSet("handshakes", flag.ExitOnError)
	var c common
	c.flags(fs)
	curves := fs.String("curves", "", "key exchange groups offered, comma-separated (default: Go's)")
	_ = fs.Parse(args)
	o := httpc.Options{TLS: httpc.TLSOptions{CAFile: c.ca}}
	for name := range strings.SplitSeq(*curves, ",") {
		if name == "" {
			continue
		}
		id, err := httpc.ParseCurve(name)
		if err != nil {
			return err
		}
		o.TLS.Curves = append(o.TLS.Curves, id)
	}
	cfg, err := httpc.NewConfig(c.url, o)
	if err != nil {
		return err
	}
	start := time.Now()
	ok, failed := c.run(func(ctx context.Context, _ int) error {
		cl := cfg.NewClient()
		defer cl.Close()
		_, err := cl.Do(ctx, &httpc.Request{Path: "/"})
		return err
	})
	t := httpc.Totals()
	fmt.Printf("handshakes: %d requests (%d failed) in %.1fs; %d full and %d resumed handshakes, mean %.2f ms\n",
		ok, failed, time.Since(start).Seconds(), t.TLSHandshakes, t.TLSResumed, float64(t.MeanTLSHandshake())/1e6)
	return nil
}

// h2: users HTTP/2 connections, each with streams requests in flight.
func h2(args []string) error {
	fs := flag.NewFlagSet("h2", flag.ExitOnError)
	var c common
	c.flags(fs)
	streams := fs.Int("streams", 10, "concurrent streams per user")
	_ = fs.Parse(args)
	cfg, err := httpc.NewConfig(c.url, httpc.Options{HTTP2: true, HTTP2Streams: *streams, TLS: httpc.TLSOptions{CAFile: c.ca}})
	if err != nil {
		return err
	}
	clients := make([]*httpc.Client, c.users)
	for i := range clients {
		clients[i] = cfg.NewClient()
	}
	users := c.users
	c.users *= *streams // one goroutine per stream
	start := time.Now()
	var respPool = sync.Pool{New: func() any { return new(httpc.Response) }}
	ok, failed := c.run(func(ctx context.Context, i int) error {
		resp := respPool.Get().(*httpc.Response)
		defer respPool.Put(resp)
		return clients[i%users].DoInto(ctx, &httpc.Request{Path: "/"}, resp)
	})
	for _, cl := range clients {
		cl.Close()
	}
	t := httpc.Totals()
	fmt.Printf("h2: %d requests (%d failed) in %.1fs on %d connections, %d RST_STREAM, %d GOAWAY\n",
		ok, failed, time.Since(start).Seconds(), t.Connects, t.H2ResetStreams, t.H2GoAways)
	return nil
}

// idle: users users, each one request, then held idle until the end.
func idle(args []string) error {
	fs := flag.NewFlagSet("idle", flag.ExitOnError)
	var c common
	c.flags(fs)
	rate := fs.Float64("rate", 2000, "users started per second")
	hold := fs.Duration("hold", time.Minute, "how long to keep the users")
	http2 := fs.Bool("http2", false, "speak HTTP/2 (h2 over https)")
	_ = fs.Parse(args)
	opts := httpc.Options{HTTP2: *http2}
	if c.ca != "" {
		opts.TLS.CAFile = c.ca
	}
	cfg, err := httpc.NewConfig(c.url, opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *hold)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for i := 0; i < c.users && ctx.Err() == nil; i++ {
		if d := time.Duration(float64(i) / *rate * float64(time.Second)); time.Since(start) < d {
			time.Sleep(d - time.Since(start))
		}
		wg.Go(func() {
			cl := cfg.NewClient()
			defer cl.Close()
			if _, err := cl.Do(ctx, &httpc.Request{Path: "/"}); err != nil && ctx.Err() == nil {
				failed.Add(1)
			}
			<-ctx.Done()
		})
	}
	select {
	case <-sig:
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		n := float64(c.users)
		fmt.Printf("idle: per user after GC: heap %.0f B, stacks %.0f B (Go Sys %.1f MB)\n",
			float64(ms.HeapAlloc)/n, float64(ms.StackInuse)/n, float64(ms.Sys)/1e6)
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	fmt.Printf("idle: %d users, %d failed requests, %d connects, %d TLS handshakes\n", c.users, failed.Load(), httpc.Totals().Connects, httpc.Totals().TLSHandshakes)
	return nil
}
