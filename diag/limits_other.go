//go:build !linux

package diag

import (
	"errors"
	"net/netip"
)

var errUnsupported = errors.New("diag: not supported on this system")

// ReadLimits is only implemented on Linux; elsewhere every limit is
// unknown.
func ReadLimits() (Limits, error) {
	return Limits{OpenFiles: -1, OpenFilesHard: -1, FilesInUse: -1, SystemFilesMax: -1, SystemFilesUsed: -1}, errUnsupported
}

// TimeWaitTotal is only implemented on Linux.
func TimeWaitTotal() (int, error) { return 0, errUnsupported }

// TimeWait is only implemented on Linux.
func TimeWait(dsts []netip.AddrPort) (map[netip.AddrPort]int, error) {
	return nil, errUnsupported
}
