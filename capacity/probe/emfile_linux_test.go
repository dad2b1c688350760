//go:build linux

package probe

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicada-load/cicada/capacity"
	"github.com/cicada-load/cicada/diag"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// childFileLimit is the RLIMIT_NOFILE of the generator child.
const childFileLimit = 64

// TestHelperLowFileLimit is not a test: TestGeneratorFileLimitIsInvalid runs
// the test binary again with PROBE_EMFILE_CHILD=<mode>,<addr>; this lowers
// its own RLIMIT_NOFILE, runs a concurrent-capacity search against addr and
// prints its outcome. Mode "runtime" hides the limits from the preflight so
// that connects hit EMFILE; mode "preflight" reads them.
func TestHelperLowFileLimit(t *testing.T) {
	env := os.Getenv("PROBE_EMFILE_CHILD")
	if env == "" {
		t.Skip("helper process for TestGeneratorFileLimitIsInvalid")
	}
	mode, addr, _ := strings.Cut(env, ",")
	lim := syscall.Rlimit{Cur: childFileLimit, Max: childFileLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stdout, "ERR setrlimit:", err)
		os.Exit(1)
	}
	o := loose(addr)
	o.HTTP = true
	if mode == "runtime" {
		o.Limits = func() (diag.Limits, error) {
			return diag.Limits{OpenFiles: -1, OpenFilesHard: -1, FilesInUse: -1, SystemFilesMax: -1, SystemFilesUsed: -1}, nil
		}
	}
	p, err := New(o)
	if err != nil {
		fmt.Fprintln(os.Stdout, "ERR", err)
		os.Exit(1)
	}
	r, err := capacity.Search{Start: 10, Max: 1000, Integer: true}.Run(context.Background(), p.Concurrent)
	if err != nil {
		fmt.Fprintln(os.Stdout, "ERR", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stdout, "RESULT %s|%v|%s\n", r.Outcome(), r.Max, r.Invalid)
	os.Exit(0)
}

// TestGeneratorFileLimitIsInvalid: a generator whose open-files limit (64)
// is far below the device's capacity reports the search as invalid, with
// the limit named, and its highest pass only as a lower bound — both when
// the preflight sees the limit and when connects fail with EMFILE.
func TestGeneratorFileLimitIsInvalid(t *testing.T) {
	addr := startTarget(t)
	for _, tt := range []struct{ mode, limit string }{
		{"preflight", "open-files: "},
		{"runtime", "open files: connect failed with EMFILE"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			out, err := testpeer.SelfCommand(ctx, "TestHelperLowFileLimit", []string{"PROBE_EMFILE_CHILD=" + tt.mode + "," + addr}).Output()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			line, err := testpeer.ChildLine(bufio.NewScanner(bytes.NewReader(out)), "RESULT ")
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			f := strings.SplitN(line, "|", 3)
			if len(f) != 3 || f[0] != "invalid" || !strings.HasPrefix(f[2], tt.limit) {
				t.Fatalf("child result %q; want invalid with %q", line, tt.limit)
			}
			var lower float64
			if _, err := fmt.Sscan(f[1], &lower); err != nil || lower < 10 || lower >= childFileLimit {
				t.Fatalf("lower bound %q; want in [10, %d)", f[1], childFileLimit)
			}
		})
	}
}
