//go:build !linux

package afpacket

import (
	"fmt"
	"time"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// Link is an AF_PACKET link; on this system Open never returns one.
type Link struct{}

// Open returns an error wrapping ErrUnsupported on this system.
func Open(cfg Config) (*Link, error) {
	return nil, fmt.Errorf("afpacket: interface index %d: %w", cfg.Index, ErrUnsupported)
}

// Receive implements link.Link.
func (*Link) Receive([][]byte) int { return 0 }

// Buffer implements link.Link.
func (*Link) Buffer() []byte { return nil }

// Transmit implements link.Link.
func (*Link) Transmit([][]byte) int { return 0 }

// MAC implements link.Link.
func (*Link) MAC() wire.MAC { return wire.MAC{} }

// MTU implements link.Link.
func (*Link) MTU() int { return 0 }

// FrameSize implements link.Link.
func (*Link) FrameSize() int { return 0 }

// Counters implements link.Link.
func (*Link) Counters() link.Counters { return link.Counters{} }

// Stats returns zero Stats.
func (*Link) Stats() Stats { return Stats{} }

// Wait returns at once.
func (*Link) Wait(time.Duration) {}

// Close does nothing.
func (*Link) Close() error { return nil }

// OpenFanout returns an error wrapping ErrUnsupported on this system.
func OpenFanout(cfg Config, f Fanout) ([]*Link, error) {
	if _, err := f.Program(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("afpacket: fanout on interface index %d: %w", cfg.Index, ErrUnsupported)
}
