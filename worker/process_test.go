package worker

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
)

// child is a worker in a child process (this test binary running
// TestChildProcess in a mode), for tests that signal or stop it.
type child struct {
	cmd  *exec.Cmd
	out  *testpeer.SyncBuffer
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// startChild starts the child worker in mode, connecting to masterPort.
// Cleanup kills it (by its PID) if it still runs.
func startChild(t *testing.T, mode string, masterPort int) *child {
	t.Helper()
	c := &child{out: new(testpeer.SyncBuffer), done: make(chan struct{})}
	c.cmd = testpeer.SelfCommand(context.Background(), "TestChildProcess", []string{"CICADA_CHILD_MODE=" + mode, "CICADA_CHILD_MASTER_PORT=" + strconv.Itoa(masterPort)}, "-test.v")
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

// runChildWorker runs a worker of twoClasses in a child process until the
// master quits it.
func runChildWorker(t *testing.T, opts Options) {
	t.Helper()
	w, err := New(opts, twoClasses())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(t.Context()); err != nil {
		t.Fatalf("Run = %v; want nil (quit by the master)", err)
	}
}

func childPaused(t *testing.T) {
	opts := fastOptions(t, childMasterPort(t))
	opts.Logger = verboseLogger()
	opts.MasterHeartbeatTimeout = pauseTimeout
	opts.DisableDiagnosis = true
	runChildWorker(t, opts)
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

// hugeSpawnFiles is the open-files limit of the huge-spawn children, and
// hugeSpawnLimit their user ceiling.
const (
	hugeSpawnFiles = 2048
	hugeSpawnLimit = usersPerFile * hugeSpawnFiles
)

func lowerFileLimit(t *testing.T, n uint64) {
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
}

func childHugeSpawn(t *testing.T) {
	lowerFileLimit(t, hugeSpawnFiles)
	opts := fastOptions(t, childMasterPort(t))
	opts.Logger = verboseLogger()
	runChildWorker(t, opts)
}

func childHugeSpawnUnbounded(t *testing.T) {
	opts := fastOptions(t, childMasterPort(t))
	opts.Logger = verboseLogger()
	opts.MaxUsers = -1
	opts.DisableDiagnosis = true
	runChildWorker(t, opts)
}

func childHugeSpawnMain(t *testing.T) {
	lowerFileLimit(t, hugeSpawnFiles)
	args := []string{"--master-port", strconv.Itoa(childMasterPort(t))}
	if code := mainArgs(t.Context(), args, func(string) string { return "" }, os.Stderr, twoClasses()); code != 0 {
		t.Fatalf("mainArgs = %d; want 0", code)
	}
}

// maxHugeSpawnRSS bounds the child's resident memory with its 4096 idle
// users (the race detector included; about 55 MiB measured), and without a
// ceiling until the quit interrupts the start (about 50 MiB measured).
const maxHugeSpawnRSS = 1 << 30

// TestHugeSpawnBounded: a fake master asks a worker whose open-files
// limit is 2048 for 2×10^12 users. The worker runs 4096 (2048 per
// class), says so in an exception and in spawning_complete, keeps
// heartbeating with its memory bounded, and ends promptly on the master's
// quit or on SIGTERM. Without a ceiling (MaxUsers -1), the quit interrupts
// the start. Before the fix the worker started users in one loop under
// the pool lock without end: its memory grew by gigabytes and quit and
// signals went unanswered.
func TestHugeSpawnBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	t.Parallel()
	tests := []struct {
		name, mode string
		sigterm    bool // end with SIGTERM instead of the master's quit
		ceiling    bool // the worker has its default ceiling
	}{
		{"quit", "hugespawn", false, true},
		{"sigterm", "hugespawn-main", true, true},
		{"quit without ceiling", "hugespawn-unbounded", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newFakeMaster(t, 0)
			c := startChild(t, tt.mode, m.port)
			id := registerChild(t, m)
			const huge = 1_000_000_000_000
			m.send(id, protocol.TypeSpawn, spawnMsg(unixNow(), map[string]int64{"A": huge, "B": huge}, nil))
			sent := time.Now()
			var peak int64
			watch := func() {
				if hbs := m.all(protocol.TypeHeartbeat); len(hbs) > 0 {
					peak = max(peak, hbs[len(hbs)-1].msg.Data.(*protocol.Heartbeat).MemoryUsage)
				}
				if peak > maxHugeSpawnRSS {
					t.Fatalf("worker RSS %d MiB; want at most %d MiB", peak>>20, maxHugeSpawnRSS>>20)
				}
				if c.exited() {
					t.Fatalf("worker exited: %v", c.err)
				}
			}
			if tt.ceiling {
				waitFor(t, 30*time.Second, "spawning_complete", func() bool {
					watch()
					return m.count(protocol.TypeSpawningComplete) > 0
				})
				sc := m.all(protocol.TypeSpawningComplete)[0].msg.Data.(*protocol.SpawningComplete)
				if sc.UserCount != hugeSpawnLimit || sc.UserClassesCount["A"] != hugeSpawnLimit/2 || sc.UserClassesCount["B"] != hugeSpawnLimit/2 {
					t.Errorf("spawning_complete = %+v; want %d users, half per class", sc, hugeSpawnLimit)
				}
				exc := m.await(protocol.TypeException, 1, 10*time.Second).msg.Data.(*protocol.Exception)
				if want := "at most " + strconv.Itoa(hugeSpawnLimit); !strings.Contains(exc.Msg, want) || !strings.Contains(exc.Msg, "2000000000000") {
					t.Errorf("exception = %q; want it to name the users asked and %q", exc.Msg, want)
				}
			}
			// Heartbeating (while users start, without a ceiling), with its
			// memory bounded.
			waitFor(t, 10*time.Second, "two heartbeats after the spawn", func() bool {
				watch()
				n := 0
				for _, hb := range m.all(protocol.TypeHeartbeat) {
					if hb.at.After(sent) {
						n++
					}
				}
				return n >= 2
			})
			t.Logf("RSS peak %d MiB", peak>>20)
			start := time.Now()
			if tt.sigterm {
				if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			} else {
				m.send(id, protocol.TypeQuit, nil)
			}
			if err := c.wait(t, 10*time.Second); err != nil {
				t.Fatalf("child exit = %v; want 0", err)
			}
			d := time.Since(start)
			t.Logf("ended %v after the quit or signal", d.Round(time.Millisecond))
			if d > 5*time.Second {
				t.Errorf("the worker took %v to end; want under 5 s", d)
			}
			if m.count(protocol.TypeQuit) != 1 {
				t.Errorf("%d quit messages from the worker; want 1", m.count(protocol.TypeQuit))
			}
		})
	}
}
