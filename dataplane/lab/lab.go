//go:build linux

package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cmdTimeout bounds every command the lab runs.
const cmdTimeout = 30 * time.Second

// Check reports why the lab cannot run here (not root, no ip(8)), or nil.
func Check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("lab: needs root to create namespaces: %w", ErrUnavailable)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("lab: ip(8) from iproute2 is missing: %w", ErrUnavailable)
	}
	return nil
}

// Lab is one run's set of namespaces and veth pairs. Close removes it.
type Lab struct {
	// Prefix starts the name of every namespace and interface of the run.
	Prefix string

	mu      sync.Mutex
	undo    []func() error // in order of creation
	closed  bool
	sigs    chan os.Signal
	stopSig chan struct{}
	veths   int
}

// Run runs a command (bounded in time) and returns its output; an error
// holds the command line and its output.
func Run(name string, args ...string) (string, error) { return run(name, args...) }

// run runs a command with cmdTimeout and returns its output, or an error
// holding the command line and its output.
func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("lab: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// New checks the lab can run, removes stale runs' leftovers, adds this
// run's blackhole route and arranges for Close on SIGINT and SIGTERM.
func New() (*Lab, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	l := &Lab{Prefix: "cic" + strconv.Itoa(os.Getpid())}
	if err := CleanStale(); err != nil {
		return nil, err
	}
	metric := strconv.Itoa(os.Getpid())
	if _, err := run("ip", "route", "add", "blackhole", Range, "metric", metric); err != nil {
		return nil, err
	}
	l.undo = append(l.undo, func() error {
		_, err := run("ip", "route", "del", "blackhole", Range, "metric", metric)
		return err
	})
	l.sigs, l.stopSig = make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(l.sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-l.sigs:
			_ = l.Close()
			fmt.Fprintf(os.Stderr, "lab: %v: removed %s\n", sig, l.Prefix)
			os.Exit(1)
		case <-l.stopSig:
		}
	}()
	return l, nil
}

// Close removes everything the run created, newest first, and its
// blackhole route last. It may be called more than once.
func (l *Lab) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.stopSig != nil {
		signal.Stop(l.sigs)
		close(l.stopSig)
	}
	var errs []error
	for i := len(l.undo) - 1; i >= 0; i-- {
		errs = append(errs, l.undo[i]())
	}
	return errors.Join(errs...)
}

var staleName = regexp.MustCompile(`^cic([0-9]+)-`)

// alive reports whether a process with this ID exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// CleanStale removes the namespaces and blackhole routes of lab runs whose
// process no longer exists (a run killed before its Close).
func CleanStale() error {
	out, err := run("ip", "netns", "list")
	if err != nil {
		return err
	}
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := staleName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if pid, _ := strconv.Atoi(m[1]); !alive(pid) {
			_, err := run("ip", "netns", "del", name)
			errs = append(errs, err)
		}
	}
	out, err = run("ip", "route", "show", "type", "blackhole", Range)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] != "metric" {
				continue
			}
			// Only metrics that name a process: the lab's own routes.
			if pid, err := strconv.Atoi(f[i+1]); err == nil && pid > 0 && !alive(pid) {
				_, err := run("ip", "route", "del", "blackhole", Range, "metric", f[i+1])
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Netns is a namespace of the lab.
type Netns struct {
	// Name is the namespace's name under /run/netns.
	Name string
}

// Netns creates the namespace <prefix>-<name> with its loopback up.
func (l *Lab) Netns(name string) (*Netns, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := &Netns{Name: l.Prefix + "-" + name}
	if _, err := run("ip", "netns", "add", n.Name); err != nil {
		return nil, err
	}
	l.undo = append(l.undo, func() error {
		_, err := run("ip", "netns", "del", n.Name)
		return err
	})
	if err := n.Exec("ip", "link", "set", "lo", "up"); err != nil {
		return nil, err
	}
	return n, nil
}

// Exec runs a command inside the namespace and waits for it (bounded).
func (n *Netns) Exec(name string, args ...string) error {
	_, err := n.Output(name, args...)
	return err
}

// Output is Exec returning the command's output.
func (n *Netns) Output(name string, args ...string) (string, error) {
	return run("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Command returns a command that runs name inside the namespace; ip(8)
// execs it, so its process ID is the command's own.
func (n *Netns) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// End is one end of a veth pair.
type End struct {
	Netns *Netns
	Name  string
	Index int
	MAC   net.HardwareAddr
}

// Veth creates a veth pair with end a in na and end b in nb, both up, with
// forwarding and IPv6 off and offloads off (when ethtool exists). Interface
// names are <prefix><k>a and <prefix><k>b.
func (l *Lab) Veth(na, nb *Netns) (a, b *End, err error) {
	l.mu.Lock()
	k := l.veths
	l.veths++
	l.mu.Unlock()
	an, bn := fmt.Sprintf("%s%da", l.Prefix, k), fmt.Sprintf("%s%db", l.Prefix, k)
	if len(an) > 15 {
		return nil, nil, fmt.Errorf("lab: interface name %q longer than 15 bytes: %w", an, ErrUnavailable)
	}
	if _, err := run("ip", "link", "add", an, "netns", na.Name, "type", "veth", "peer", "name", bn, "netns", nb.Name); err != nil {
		return nil, nil, err
	}
	a, b = &End{Netns: na, Name: an}, &End{Netns: nb, Name: bn}
	for _, e := range []*End{a, b} {
		if err := e.setup(); err != nil {
			return nil, nil, err
		}
	}
	return a, b, nil
}

func (e *End) setup() error {
	n := e.Netns
	for _, s := range []string{"net.ipv4.conf." + e.Name + ".forwarding=0", "net.ipv6.conf." + e.Name + ".disable_ipv6=1"} {
		if err := n.Exec("sysctl", "-q", "-w", s); err != nil {
			return err
		}
	}
	if _, err := exec.LookPath("ethtool"); err == nil {
		if err := n.Exec("ethtool", "-K", e.Name, "tx", "off", "tso", "off", "gso", "off", "gro", "off"); err != nil {
			return err
		}
	}
	if err := n.Exec("ip", "link", "set", e.Name, "up"); err != nil {
		return err
	}
	return n.Do(func() error {
		ifc, err := net.InterfaceByName(e.Name)
		if err != nil {
			return fmt.Errorf("lab: %s: %w", e.Name, err)
		}
		e.Index, e.MAC = ifc.Index, ifc.HardwareAddr
		return nil
	})
}
