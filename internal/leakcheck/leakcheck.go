// Package leakcheck finds goroutines left running by a package's code, for
// tests that assert a clean shutdown (style: every goroutine is tracked and
// none survives Close).
//
// A package is named by its import path inside the module ("master",
// "protocol/zmtp", "worker/httpc"); a goroutine belongs to it when one of its
// frames is a function of exactly that package (not a subpackage) defined in
// a non-test file. Matching on import paths rather than file paths makes the
// check independent of where the repository is checked out.
package leakcheck

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// modulePrefix is the module's import path plus "/", derived from this
// package's own path so that it follows a module rename.
var modulePrefix = func() string {
	fn := runtime.FuncForPC(reflect.ValueOf(anchor).Pointer()).Name()
	return strings.TrimSuffix(fn, "internal/leakcheck.anchor")
}()

// anchor is a function whose name gives modulePrefix.
func anchor() {}

// normalize turns a package argument into its module-relative import path.
// The older form, a file-path fragment such as "/cicada/master/" or
// "/protocol/zmtp/", is accepted: surrounding slashes and a leading
// "cicada/" are dropped.
func normalize(pkg string) string {
	pkg = strings.Trim(pkg, "/")
	if p, ok := strings.CutPrefix(pkg, "cicada/"); ok {
		pkg = p
	}
	return strings.TrimPrefix(pkg, strings.TrimSuffix(modulePrefix, "/")+"/")
}

// Goroutines returns the stacks of the goroutines other than the caller's
// that run a function of package pkg (see the package doc) from a non-test
// file.
func Goroutines(pkg string) []string {
	prefix := modulePrefix + normalize(pkg) + "."
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
		if belongs(g, prefix) {
			leaked = append(leaked, g)
		}
	}
	return leaked
}

// belongs reports whether stack g has a frame whose function starts with
// prefix and whose file is not a _test.go file. A frame is a function line
// followed by a tab-indented file:line; the "created by" line names the
// creator, which is not running, and does not count.
func belongs(g, prefix string) bool {
	lines := strings.Split(g, "\n")
	for i := 1; i+1 < len(lines); i++ {
		fn := lines[i]
		if !strings.HasPrefix(fn, prefix) {
			continue
		}
		file := strings.TrimSpace(lines[i+1])
		if j := strings.LastIndex(file, ".go:"); j >= 0 && !strings.HasSuffix(file[:j], "_test") {
			return true
		}
	}
	return false
}

// Check polls until no goroutine of pkg runs, or timeout passes.
func Check(pkg string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		leaked := Goroutines(pkg)
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leakcheck: %d goroutines of %s leaked, first:\n%s", len(leaked), normalize(pkg), leaked[0])
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// Main runs a package's tests and then fails the run if goroutines of pkg
// are still running 10 s later. Call it from TestMain.
func Main(m *testing.M, pkg string) {
	code := m.Run()
	if code == 0 {
		if err := Check(pkg, 10*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
