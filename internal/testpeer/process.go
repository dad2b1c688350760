package testpeer

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultGrace is how long Stop waits after its signal before SIGKILL.
const DefaultGrace = 20 * time.Second

// Process is a peer program started by this package, with its output in a
// log file. Its methods are safe for concurrent use.
type Process struct {
	Cmd     *exec.Cmd // started; do not call Wait (the Process does)
	LogPath string    // stdout and stderr

	done chan struct{}
	err  error // Wait's result, set before done closes
}

// StartProcess starts cmd (configured but not started) with stdout and
// stderr appended to logPath. The caller ends it with Stop.
func StartProcess(cmd *exec.Cmd, logPath string) (*Process, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testpeer: log file: %w", err)
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("testpeer: start %s: %w", cmd.Path, err)
	}
	p := &Process{Cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process ID.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Alive reports whether the process has not exited yet.
func (p *Process) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Wait waits up to within for the process to exit by itself; exited is
// false when it is still running, and err is its exit error otherwise.
func (p *Process) Wait(within time.Duration) (exited bool, err error) {
	select {
	case <-p.done:
		return true, p.err
	case <-time.After(within):
		return false, nil
	}
}

// Signal sends sig to the process (by its PID) unless it has exited.
func (p *Process) Signal(sig syscall.Signal) error {
	if !p.Alive() {
		return nil
	}
	if err := p.Cmd.Process.Signal(sig); err != nil && p.Alive() {
		return fmt.Errorf("testpeer: signal %d to pid %d: %w", sig, p.Pid(), err)
	}
	return nil
}

// Stop sends sig, waits up to grace (DefaultGrace if zero) for the process
// to exit, then kills it. It returns once the process has exited, with its
// exit error. Stop may be called more than once.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) error {
	if grace <= 0 {
		grace = DefaultGrace
	}
	if err := p.Signal(sig); err != nil {
		return err
	}
	if exited, err := p.Wait(grace); exited {
		return err
	}
	_ = p.Cmd.Process.Kill()
	<-p.done
	return p.err
}

// Children returns the PIDs of the process's child processes (nginx's
// workers), from Linux's /proc; nil elsewhere or once it has exited.
func (p *Process) Children() []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.Pid(), p.Pid()))
	if err != nil || !p.Alive() {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Log returns the process's output so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}
