package httpc

import (
	"testing"

	"github.com/cicada-load/cicada/internal/leakcheck"
)

// TestMain fails the run if a goroutine of this package outlives the tests.
func TestMain(m *testing.M) { leakcheck.Main(m, "worker/httpc") }
