// Package leakcheck finds goroutines left running by a package's code, for
// tests that assert a clean shutdown (style: every goroutine is tracked and
// none survives Close).
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Goroutines returns the stacks of goroutines with a frame in a non-test
// file whose path contains dir (for example "/cicada/master/").
func Goroutines(dir string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var leaked []string
	// The first stack is the calling goroutine's own.
	for _, g := range strings.Split(string(buf), "\n\n")[1:] {
		for _, line := range strings.Split(g, "\n") {
			line = strings.TrimSpace(line)
			if strings.Contains(line, dir) && strings.Contains(line, ".go:") && !strings.Contains(line, "_test.go:") {
				leaked = append(leaked, g)
				break
			}
		}
	}
	return leaked
}

// Check polls until no goroutine of dir runs, or timeout passes.
func Check(dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		leaked := Goroutines(dir)
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leakcheck: %d goroutines of %s leaked, first:\n%s", len(leaked), dir, leaked[0])
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// Main runs a package's tests and then fails the run if goroutines of dir
// are still running 10 s later. Call it from TestMain.
func Main(m *testing.M, dir string) {
	code := m.Run()
	if code == 0 {
		if err := Check(dir, 10*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
