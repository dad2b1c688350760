package worker

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// child is a worker in a child process (this test binary running
// TestChildProcess in a mode), for tests that signal or stop it.
type child struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error // Wait's result, once done is closed
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startChild starts the child worker in mode, connecting to masterPort.
// Cleanup kills it (by its PID) if it still runs.
func startChild(t *testing.T, mode string, masterPort int) *child {
	t.Helper()
	c := &child{out: new(lockedBuffer), done: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run", "^TestChildProcess$", "-test.v", "-test.count=1")
	c.cmd.Env = append(os.Environ(), "CICADA_CHILD_MODE="+mode, "CICADA_CHILD_MASTER_PORT="+strconv.Itoa(masterPort))
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("child output:\n%s", c.out.String())
		}
	})
	return c
}

// wait waits up to d for the child to exit and returns its exit error.
func (c *child) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(d):
		t.Fatalf("child did not exit within %v", d)
		return nil
	}
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// childMasterPort is the fake master's port given to a child.
func childMasterPort(t *testing.T) int {
	p, err := strconv.Atoi(os.Getenv("CICADA_CHILD_MASTER_PORT"))
	if err != nil {
		t.Fatalf("CICADA_CHILD_MASTER_PORT: %v", err)
	}
	return p
}

// registerChild acks the child's first client_ready and returns its id.
func registerChild(t *testing.T, m *fakeMaster) string {
	t.Helper()
	id := m.await(protocol.TypeClientReady, 1, 30*time.Second).id
	m.send(id, protocol.TypeAck, &protocol.Ack{Index: 0, Cicada: protocol.CicadaVersion})
	m.await(protocol.TypeHeartbeat, 1, 30*time.Second) // heartbeats follow the ack
	return id
}

// masterHeartbeats sends master heartbeats to id every interval while on
// is true, until the test ends.
func masterHeartbeats(t *testing.T, m *fakeMaster, id string, interval time.Duration, on *atomic.Bool) {
	b, err := protocol.Encode(protocol.Message{Type: protocol.TypeHeartbeat, NodeID: "master"})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				if on.Load() {
					_ = m.r.Send(id, b) // the worker may be gone: the test checks that
				}
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// Timings of the pause test: the child's master heartbeat timeout, how
// long it is stopped, and how long after SIGCONT the master's heartbeats
// come again.
const (
	pauseTimeout  = 2 * time.Second
	pauseDuration = 4 * time.Second
	pauseHBDelay  = 300 * time.Millisecond
)

func childPaused(t *testing.T) {
	opts := fastOptions(t, childMasterPort(t))
	opts.Logger = verboseLogger()
	opts.MasterHeartbeatTimeout = pauseTimeout
	opts.DisableDiagnosis = true
	w, err := New(opts, twoClasses())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(t.Context()); err != nil {
		t.Fatalf("Run = %v; want nil (quit by the master)", err)
	}
}

// TestWorkerSurvivesPause: a worker stopped (SIGSTOP) for longer than its
// master heartbeat timeout does not quit when it resumes, although the
// master's heartbeats come only a little after it resumed; it keeps
// heartbeating and quits when the master says so. Before the fix it quit
// ("no heartbeat from the master") on its first tick after SIGCONT.
func TestWorkerSurvivesPause(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	t.Parallel()
	m := newFakeMaster(t, 0)
	c := startChild(t, "paused", m.port)
	id := registerChild(t, m)
	var on atomic.Bool
	on.Store(true)
	masterHeartbeats(t, m, id, 100*time.Millisecond, &on)
	m.await(protocol.TypeHeartbeat, 5, 10*time.Second)

	on.Store(false) // the master's heartbeats of the pause are lost
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	<-time.After(pauseDuration) // the pause itself, not a synchronisation
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	time.AfterFunc(pauseHBDelay, func() { on.Store(true) })

	waitFor(t, 20*time.Second, "heartbeats well after resuming", func() bool {
		if m.count(protocol.TypeQuit) > 0 || c.exited() {
			t.Fatalf("the worker quit after resuming; output:\n%s", c.out.String())
		}
		hbs := m.all(protocol.TypeHeartbeat)
		return hbs[len(hbs)-1].at.After(resumed.Add(2 * pauseTimeout))
	})
	m.send(id, protocol.TypeQuit, nil)
	if err := c.wait(t, 10*time.Second); err != nil {
		t.Fatalf("child exit = %v; want 0", err)
	}
}

// verboseLogger logs to stderr, so a failing process-level test shows
// the child's log.
func verboseLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
