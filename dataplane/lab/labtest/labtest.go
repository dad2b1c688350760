//go:build linux

// Package labtest is the one helper every package's lab tests use to get a
// namespace lab (package dataplane/lab): a Lab that is removed when the test
// ends, or a skip where the lab cannot run (not root, no ip(8)) — a failure
// under CI=true, where the lab is required (internal/testpeer.Missing).
// Beside it, the set-ups several packages' lab tests share: kernel
// addresses on a DUT chain's ends (KernelClient, KernelServer) and the
// /bytes/<n> objects check (CheckObjects).
package labtest

import (
	"testing"

	"github.com/cicada-load/cicada/dataplane/lab"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// New returns a new lab, closed at t's cleanup (a failed Close fails t).
func New(t testing.TB) *lab.Lab {
	t.Helper()
	if err := lab.Check(); err != nil {
		testpeer.Missing(t, "data plane lab: %v", err)
	}
	l, err := lab.New()
	if err != nil {
		t.Fatalf("lab.New = %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("lab Close = %v", err)
		}
	})
	return l
}
