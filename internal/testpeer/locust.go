package testpeer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
)

// LocustConfig starts Debian's Python Locust (python3-locust 2.12.1).
type LocustConfig struct {
	Bin        string   // default LocustBin
	Dir        string   // working directory and log; default: a new temporary directory
	Locustfile string   // if set, written to Dir/locustfile.py and passed as -f
	Args       []string // after -f: --master, --worker, --headless, ...
	Env        []string // added to the environment; PYTHONUNBUFFERED=1 always is
}

var locustSeq atomic.Int64

// Start starts Locust with its output in Dir/locust-N.log. The caller ends
// it with (*Process).Stop.
func (c LocustConfig) Start() (*Process, error) {
	var err error
	if c.Bin == "" {
		c.Bin = LocustBin
	}
	if c.Bin, err = LookPeer(c.Bin); err != nil {
		return nil, err
	}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "testpeer-locust"); err != nil {
			return nil, fmt.Errorf("testpeer: locust dir: %w", err)
		}
	}
	var args []string
	if c.Locustfile != "" {
		lf := filepath.Join(c.Dir, "locustfile.py")
		if err := os.WriteFile(lf, []byte(c.Locustfile), 0o644); err != nil {
			return nil, fmt.Errorf("testpeer: locustfile: %w", err)
		}
		args = append(args, "-f", lf)
	}
	cmd := exec.Command(c.Bin, append(args, c.Args...)...)
	cmd.Dir = c.Dir
	cmd.Env = append(append(os.Environ(), "PYTHONUNBUFFERED=1"), c.Env...)
	logPath := filepath.Join(c.Dir, "locust-"+strconv.FormatInt(locustSeq.Add(1), 10)+".log")
	return StartProcess(cmd, logPath)
}

// StartLocust starts Locust for t (in t.TempDir unless cfg.Dir is set) and
// kills it at cleanup if it still runs. A missing Locust ends t through
// Missing.
func StartLocust(t T, cfg LocustConfig) *Process {
	t.Helper()
	if cfg.Bin == "" {
		cfg.Bin = LocustBin
	}
	cfg.Bin = RequirePeer(t, cfg.Bin)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	p, err := cfg.Start()
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = p.Stop(syscall.SIGKILL, 0) })
	return p
}
