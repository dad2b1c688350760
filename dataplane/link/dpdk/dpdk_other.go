//go:build !(dpdk && cgo && linux)

package dpdk

import (
	"fmt"
	"time"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// Available reports whether this binary has the DPDK link.
const Available = false

// Link is a DPDK port; in this binary Open always fails.
type Link struct{}

var _ link.Link = (*Link)(nil)

// Init returns an error wrapping ErrUnsupported.
func Init(args []string) error {
	return fmt.Errorf("dpdk: EAL %q: %w", args, ErrUnsupported)
}

// EALArgs returns nil.
func EALArgs() []string { return nil }

// Open returns an error wrapping ErrUnsupported, which says how to build
// with DPDK. The configuration is still checked first, so a bad option is
// reported as such in either binary.
func Open(cfg Config) (*Link, error) {
	if _, err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("dpdk: port %q: %w", cfg.Port, ErrUnsupported)
}

// OpenRingPair returns an error wrapping ErrUnsupported.
func OpenRingPair(a, b string, cfg Config) (*Link, *Link, error) {
	return nil, nil, fmt.Errorf("dpdk: ring pair %s/%s: %w", a, b, ErrUnsupported)
}

// Receive implements link.Link; it receives nothing.
func (l *Link) Receive(frames [][]byte) int { return 0 }

// Buffer implements link.Link; it has no buffer.
func (l *Link) Buffer() []byte { return nil }

// Transmit implements link.Link; it accepts nothing.
func (l *Link) Transmit(frames [][]byte) int { return 0 }

// MAC implements link.Link.
func (l *Link) MAC() wire.MAC { return wire.MAC{} }

// MTU implements link.Link.
func (l *Link) MTU() int { return 0 }

// FrameSize implements link.Link.
func (l *Link) FrameSize() int { return 0 }

// Counters implements link.Link.
func (l *Link) Counters() link.Counters { return link.Counters{} }

// PortID returns -1.
func (l *Link) PortID() int { return -1 }

// Rings returns zeros.
func (l *Link) Rings() (rx, tx int) { return 0, 0 }

// Stats returns ErrUnsupported.
func (l *Link) Stats() (Stats, error) { return Stats{}, ErrUnsupported }

// Wait returns at once.
func (l *Link) Wait(time.Duration) {}

// Close returns ErrUnsupported.
func (l *Link) Close() error { return ErrUnsupported }
