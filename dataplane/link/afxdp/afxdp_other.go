//go:build !linux

package afxdp

import (
	"fmt"
	"time"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/wire"
)

// Link is an AF_XDP link; on this system Open always fails.
type Link struct{}

var _ link.Link = (*Link)(nil)

// Open returns ErrUnsupported: AF_XDP is a Linux socket family.
func Open(cfg Config) (*Link, error) {
	return nil, fmt.Errorf("%w (interface %q)", ErrUnsupported, cfg.Interface)
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

// Stats returns ErrUnsupported.
func (l *Link) Stats() (Stats, error) { return Stats{}, ErrUnsupported }

// Wait returns ErrUnsupported.
func (l *Link) Wait(timeout time.Duration) error { return ErrUnsupported }

// Close returns ErrUnsupported.
func (l *Link) Close() error { return ErrUnsupported }
