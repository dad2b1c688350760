package leakcheck

import (
	"testing"
	"time"
)

// TestFindsAndForgetsGoroutine: a goroutine parked in a non-test file of
// the package is found under every spelling of the package, and no longer
// once it ends. The import-path spelling does not depend on the directory
// the repository is checked out in (the file-path form "/cicada/…/" found
// nothing outside a directory named cicada).
func TestFindsAndForgetsGoroutine(t *testing.T) {
	started, stop, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go park(started, stop, done)
	<-started
	for _, pkg := range []string{"internal/leakcheck", "/internal/leakcheck/", "/cicada/internal/leakcheck/", "github.com/cicada-load/cicada/internal/leakcheck"} {
		if n := len(Goroutines(pkg)); n != 1 {
			t.Errorf("Goroutines(%q) = %d stacks while park runs; want 1", pkg, n)
		}
	}
	close(stop)
	<-done
	if err := Check("internal/leakcheck", 10*time.Second); err != nil {
		t.Fatalf("Check after the goroutine ended: %v", err)
	}
}

// TestBelongs: only frames of exactly the package in non-test files count;
// subpackages, test files and "created by" lines do not.
func TestBelongs(t *testing.T) {
	const p = "example.com/m/worker."
	for _, c := range []struct {
		name, stack string
		want        bool
	}{
		{"package frame", "goroutine 7 [chan receive]:\nexample.com/m/worker.(*W).run(0x1)\n\t/src/worker/worker.go:10 +0x1", true},
		{"subpackage frame", "goroutine 7 [chan receive]:\nexample.com/m/worker/httpc.(*C).do(0x1)\n\t/src/worker/httpc/client.go:10 +0x1", false},
		{"test file frame", "goroutine 7 [chan receive]:\nexample.com/m/worker.helper(0x1)\n\t/src/worker/worker_test.go:10 +0x1", false},
		{"created by only", "goroutine 7 [chan receive]:\nnet.(*conn).Read(0x1)\n\t/go/net/net.go:10 +0x1\ncreated by example.com/m/worker.(*W).Start in goroutine 1\n\t/src/worker/worker.go:5 +0x1", false},
		{"deeper frame", "goroutine 7 [select]:\ntime.Sleep(0x1)\n\t/go/time.go:1 +0x1\nexample.com/m/worker.loop()\n\t/src/worker/loop.go:3 +0x1", true},
	} {
		if got := belongs(c.stack, p); got != c.want {
			t.Errorf("belongs(%s) = %v; want %v", c.name, got, c.want)
		}
	}
}
