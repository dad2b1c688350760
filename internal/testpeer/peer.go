package testpeer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Paths of the Debian packages the interop tests run against (python3-locust
// 2.12.1, python3-zmq, python3-msgpack, nginx). A bare name is looked up on
// PATH instead.
const (
	NginxBin  = "/usr/sbin/nginx"
	LocustBin = "/usr/bin/locust"
	PythonBin = "/usr/bin/python3" // Debian's python3; "python3" on PATH may lack the modules
)

// ErrMissing is wrapped by the errors of LookPeer and CheckPython: a peer
// program or module is not installed.
var ErrMissing = errors.New("testpeer: peer not installed")

// T is the part of testing.TB the helpers use; *testing.T, *testing.B and
// *testing.F satisfy it.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// CI reports whether the environment has CI=true, where every peer must be
// installed.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing ends t because something it needs is absent: it fails under
// CI=true and skips otherwise. The message says what is missing and how to
// install it.
func Missing(t T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("required under CI=true: %s", msg)
	}
	t.Skipf("skipped: %s", msg)
}

// LookPeer returns the path of program name: an absolute path that exists,
// or a bare name found on PATH. The error wraps ErrMissing.
func LookPeer(name string) (string, error) {
	if strings.ContainsRune(name, os.PathSeparator) {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrMissing, name, err)
		}
		return name, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrMissing, name, err)
	}
	return p, nil
}

// RequirePeer returns the path of program name (see LookPeer), or ends t
// through Missing.
func RequirePeer(t T, name string) string {
	t.Helper()
	p, err := LookPeer(name)
	if err != nil {
		Missing(t, "%v", err)
	}
	return p
}

var python struct {
	mu      sync.Mutex
	checked map[string]error
}

// CheckPython reports whether PythonBin imports every module (for example
// "zmq", "msgpack", "locust.stats"); the error wraps ErrMissing and carries
// Python's output. Results are cached for the process.
func CheckPython(modules ...string) error {
	key := strings.Join(modules, ",")
	python.mu.Lock()
	defer python.mu.Unlock()
	if err, ok := python.checked[key]; ok {
		return err
	}
	var err error
	if _, lerr := LookPeer(PythonBin); lerr != nil {
		err = lerr
	} else if out, cerr := pythonImport(key); cerr != nil {
		err = fmt.Errorf("%w: %s cannot import %s: %w: %s", ErrMissing, PythonBin, key, cerr, strings.TrimSpace(string(out)))
	}
	if python.checked == nil {
		python.checked = map[string]error{}
	}
	python.checked[key] = err
	return err
}

// pythonImport runs PythonBin -c "import modules", bounded in time.
func pythonImport(modules string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return exec.CommandContext(ctx, PythonBin, "-c", "import "+modules).CombinedOutput()
}

// RequirePython returns PythonBin when it imports every module, or ends t
// through Missing.
func RequirePython(t T, modules ...string) string {
	t.Helper()
	if err := CheckPython(modules...); err != nil {
		Missing(t, "%v (Debian packages python3-locust, python3-zmq, python3-msgpack)", err)
	}
	return PythonBin
}
