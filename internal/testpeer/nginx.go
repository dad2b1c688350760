package testpeer

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoAccessLog is returned by (*Nginx).Requests when NginxConfig.AccessLog
// was false.
var ErrNoAccessLog = errors.New("testpeer: nginx runs without an access log")

// Location is one exact-prefix route of the test nginx: it answers every
// request under Path with Status and Body.
type Location struct {
	Path   string
	Status int
	Body   string
}

// NginxConfig configures a private nginx on 127.0.0.1. The zero value
// serves "hello\n" with 200 at every path on a free port, one worker
// process, without an access log.
type NginxConfig struct {
	Bin         string        // default NginxBin, or "nginx" on PATH when that is missing
	Dir         string        // config, pid, logs, temp files; default: a new temporary directory
	Port        int           // default: PickPort
	Workers     int           // worker_processes; default 1: one process that serves (master_process off)
	Connections int           // worker_connections and worker_rlimit_nofile; default 1024
	Backlog     int           // listen backlog; default 65535
	ReusePort   bool          // listen ... reuseport (one accept queue per worker)
	Keepalive   time.Duration // keepalive_timeout; default 300 s
	AccessLog   bool          // log every request, counted by (*Nginx).Requests
	Locations   []Location    // default: {"/", 200, "hello\n"}; not with Root
	Root        string        // if set: serve the files of this directory (index.html, text/html) instead; with Workers > 1 they must be readable by nginx's worker user
	StartWithin time.Duration // how long to wait for the port to accept; default 20 s
	Host        string        // listen address; default 127.0.0.1
	Wrap        []string      // command prefix nginx runs under, which must exec it (e.g. ip netns exec NAME)
	Dial        DialFunc      // readiness probe; default a TCP dial from this process
	TLS         *NginxTLS     // serve https (and h2) instead of http; see nginxtls.go
}

// Nginx is a running nginx started from an NginxConfig.
type Nginx struct {
	*Process
	Port int
	Dir  string
	Host string

	accessLog string
	dial      DialFunc
	tls       bool
}

// DialFunc connects to addr ("host:port"), as the readiness probe of an
// nginx started elsewhere (another network namespace) must.
type DialFunc func(addr string) (net.Conn, error)

// URL is the base URL, by default "http://127.0.0.1:port".
func (n *Nginx) URL() string {
	if n.tls {
		return "https://" + n.Addr()
	}
	return "http://" + n.Addr()
}

// Addr is "host:port", by default "127.0.0.1:port".
func (n *Nginx) Addr() string { return net.JoinHostPort(n.Host, strconv.Itoa(n.Port)) }

// defaultNginx is NginxBin if it exists, else "nginx" (looked up on PATH):
// any nginx serves the tests' fixed responses.
func defaultNginx() string {
	if _, err := os.Stat(NginxBin); err != nil {
		return "nginx"
	}
	return NginxBin
}

// conf renders the nginx configuration for the resolved c.
func (c NginxConfig) conf(accessLog string) string {
	var b strings.Builder
	if c.Workers == 1 {
		// One process serving as the user who started it (no workers
		// switching to nobody), ended by its own PID.
		b.WriteString("master_process off;\n")
	}
	fmt.Fprintf(&b, "daemon off;\nworker_processes %d;\nworker_rlimit_nofile %d;\n", c.Workers, c.Connections)
	fmt.Fprintf(&b, "pid %[1]s/nginx.pid;\nerror_log %[1]s/error.log warn;\n", c.Dir)
	fmt.Fprintf(&b, "events { worker_connections %d; }\nhttp {\n", c.Connections)
	if accessLog != "" {
		// One line per request: status, method, path; counted by Requests.
		fmt.Fprintf(&b, "  log_format testpeer '$status $request_method $uri%s';\n  access_log %s testpeer;\n", c.TLS.logFields(), accessLog)
	} else {
		b.WriteString("  access_log off;\n")
	}
	for _, tmp := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "  %s_temp_path %s/%s;\n", tmp, c.Dir, tmp)
	}
	fmt.Fprintf(&b, "  keepalive_requests 1000000;\n  keepalive_timeout %ds;\n", int(c.Keepalive/time.Second))
	fmt.Fprintf(&b, "  server {\n    listen %s:%d backlog=%d", c.Host, c.Port, c.Backlog)
	if c.ReusePort {
		b.WriteString(" reuseport")
	}
	b.WriteString(c.TLS.listenFlags())
	b.WriteString(";\n")
	b.WriteString(c.TLS.directives())
	if c.Root != "" {
		fmt.Fprintf(&b, "    default_type text/html;\n    root %s;\n    location / { index index.html; }\n", c.Root)
	}
	for _, l := range c.Locations {
		fmt.Fprintf(&b, "    location %s { return %d %s; }\n", l.Path, l.Status, strconv.Quote(l.Body))
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

// Start starts nginx and waits until its port accepts connections. The
// caller stops it with (*Nginx).Stop (SIGQUIT: graceful, logs flushed).
func (c NginxConfig) Start() (*Nginx, error) {
	var err error
	if c.Bin == "" {
		c.Bin = defaultNginx()
	}
	if c.Bin, err = LookPeer(c.Bin); err != nil {
		return nil, err
	}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "testpeer-nginx"); err != nil {
			return nil, fmt.Errorf("testpeer: nginx dir: %w", err)
		}
	}
	if c.Port == 0 {
		if c.Port, err = PickPort(); err != nil {
			return nil, err
		}
	}
	if c.Workers <= 0 {
		c.Workers = 1
	}
	if c.Connections <= 0 {
		c.Connections = 1024
	}
	if c.Backlog <= 0 {
		c.Backlog = 65535
	}
	if c.Keepalive <= 0 {
		c.Keepalive = 300 * time.Second
	}
	if c.Root != "" && len(c.Locations) > 0 {
		return nil, fmt.Errorf("testpeer: nginx with both Root %q and Locations: want one", c.Root)
	}
	if c.Root != "" && (!filepath.IsAbs(c.Root) || strings.ContainsAny(c.Root, " ;{}\"'")) {
		return nil, fmt.Errorf("testpeer: nginx Root %q: want a plain absolute path", c.Root)
	}
	if len(c.Locations) == 0 && c.Root == "" {
		c.Locations = []Location{{Path: "/", Status: 200, Body: "hello\n"}}
	}
	if c.StartWithin <= 0 {
		c.StartWithin = 20 * time.Second
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if net.ParseIP(c.Host) == nil {
		return nil, fmt.Errorf("testpeer: nginx Host %q: want an IP address", c.Host)
	}
	for _, l := range c.Locations {
		if !strings.HasPrefix(l.Path, "/") || strings.ContainsAny(l.Path, " ;{}\"'") || l.Status < 100 || l.Status > 599 {
			return nil, fmt.Errorf("testpeer: nginx location %q status %d: want a plain path and a status 100-599", l.Path, l.Status)
		}
	}
	if err := c.TLS.check(); err != nil {
		return nil, err
	}
	n := &Nginx{Port: c.Port, Dir: c.Dir, Host: c.Host, dial: c.Dial, tls: c.TLS != nil}
	if c.AccessLog {
		n.accessLog = filepath.Join(c.Dir, "access.log")
	}
	cf := filepath.Join(c.Dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(c.conf(n.accessLog)), 0o644); err != nil {
		return nil, fmt.Errorf("testpeer: nginx config: %w", err)
	}
	argv := append(append([]string{}, c.Wrap...), c.Bin, "-c", cf, "-p", c.Dir, "-e", filepath.Join(c.Dir, "error.log"))
	cmd := exec.Command(argv[0], argv[1:]...)
	if n.Process, err = StartProcess(cmd, filepath.Join(c.Dir, "nginx.out")); err != nil {
		return nil, err
	}
	if err := Poll(c.StartWithin, 20*time.Millisecond, func() bool { return n.accepts() || !n.Alive() }); err != nil || !n.Alive() {
		_ = n.Stop()
		errLog, _ := os.ReadFile(filepath.Join(c.Dir, "error.log"))
		return nil, fmt.Errorf("testpeer: nginx does not listen on %s: %s%s", n.Addr(), n.Log(), errLog)
	}
	// The port accepts once one worker runs; the others follow. Where
	// /proc lists no children (not Linux) this returns at the deadline's
	// first check.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", n.Pid(), n.Pid())); err == nil && c.Workers > 1 {
		_ = Poll(c.StartWithin, 20*time.Millisecond, func() bool { return len(n.Children()) >= c.Workers })
	}
	return n, nil
}

func (n *Nginx) accepts() bool {
	dial := n.dial
	if dial == nil {
		dial = func(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, time.Second) }
	}
	c, err := dial(n.Addr())
	if err == nil {
		c.Close()
	}
	return err == nil
}

// Stop ends nginx gracefully (SIGQUIT, then SIGKILL after DefaultGrace) and
// returns once it has exited. It may be called more than once.
func (n *Nginx) Stop() error { return n.StopWithin(syscall.SIGQUIT, DefaultGrace) }

// StopWithin sends sig (SIGQUIT: graceful; SIGTERM: fast) and waits up to
// grace; then it kills nginx and its worker processes, each by PID.
func (n *Nginx) StopWithin(sig syscall.Signal, grace time.Duration) error {
	if grace <= 0 {
		grace = DefaultGrace
	}
	workers := n.Children()
	if err := n.Signal(sig); err != nil {
		return err
	}
	if exited, err := n.Wait(grace); exited {
		return err // the master stops its workers first
	}
	_ = n.Cmd.Process.Kill()
	<-n.Done()
	for _, pid := range workers {
		_ = syscall.Kill(pid, syscall.SIGKILL) // orphaned by the kill: they would keep the port
	}
	return n.err
}

// Requests counts the requests in the access log so far, in total and by
// status ("200", "500"). nginx writes a line when it has answered; stop it
// first to count every request it received.
func (n *Nginx) Requests() (total int, byStatus map[string]int, err error) {
	if n.accessLog == "" {
		return 0, nil, ErrNoAccessLog
	}
	f, err := os.Open(n.accessLog)
	if errors.Is(err, os.ErrNotExist) {
		return 0, map[string]int{}, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("testpeer: access log: %w", err)
	}
	defer f.Close()
	byStatus = map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		status, _, _ := strings.Cut(sc.Text(), " ")
		byStatus[status]++
		total++
	}
	if err := sc.Err(); err != nil {
		return 0, nil, fmt.Errorf("testpeer: access log: %w", err)
	}
	return total, byStatus, nil
}

// StartNginx starts nginx for t in t.TempDir (unless cfg.Dir is set) and
// stops it at cleanup. A missing nginx ends t through Missing.
func StartNginx(t T, cfg NginxConfig) *Nginx {
	t.Helper()
	if cfg.Bin == "" {
		cfg.Bin = defaultNginx()
	}
	cfg.Bin = RequirePeer(t, cfg.Bin)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	n, err := cfg.Start()
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = n.Stop() })
	return n
}

// RequestCount is Requests for tests: the total, failing t on error.
func (n *Nginx) RequestCount(t T) int {
	t.Helper()
	total, _, err := n.Requests()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return total
}
