//go:build !(dpdk && cgo && linux)

package dpdk_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
)

func TestWithoutTagSaysHowToBuild(t *testing.T) {
	if dpdk.Available {
		t.Fatal("Available in a binary without the dpdk tag")
	}
	_, err := dpdk.Open(dpdk.Config{Port: "0", EAL: []string{"--no-huge"}})
	if !errors.Is(err, dpdk.ErrUnsupported) || !strings.Contains(err.Error(), "make build-dpdk") {
		t.Errorf("Open = %v; want ErrUnsupported naming make build-dpdk", err)
	}
	if err := dpdk.Init(nil); !errors.Is(err, dpdk.ErrUnsupported) {
		t.Errorf("Init = %v; want ErrUnsupported", err)
	}
	if _, _, err := dpdk.OpenRingPair("a", "b", dpdk.Config{}); !errors.Is(err, dpdk.ErrUnsupported) {
		t.Errorf("OpenRingPair = %v; want ErrUnsupported", err)
	}
	// A bad option is reported as such in either binary.
	if _, err := dpdk.Open(dpdk.Config{}); !errors.Is(err, link.ErrConfig) {
		t.Errorf("Open(no port) = %v; want link.ErrConfig", err)
	}
}
