package target

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/ifcheck"
)

// TestNewDataplaneRefusesTableBeyondMemory: a client range and ports whose
// table cannot be allocated are refused before anything opens (exit 2),
// where stack.New would end the process with the Go runtime's fatal out of
// memory: 2^24 addresses × 65,535 ports is about 120 TiB of records.
func TestNewDataplaneRefusesTableBeyondMemory(t *testing.T) {
	d, err := NewDataplane(DataplaneOptions{Link: "afpacket", Interface: "cic-none0",
		Listen:  netip.MustParseAddrPort("198.18.1.1:80"),
		Clients: ifcheck.Range{First: netip.MustParseAddr("10.0.0.0"), Count: 1 << 24}, PortMin: 1, PortMax: 65535})
	if d != nil {
		_ = d.Close()
	}
	if !errors.Is(err, ErrDataplane) || !errors.Is(err, ifcheck.ErrMemory) || !strings.Contains(err.Error(), "--client-ips") {
		t.Fatalf("NewDataplane = %v; want a refusal wrapping ErrDataplane and ifcheck.ErrMemory", err)
	}
}
