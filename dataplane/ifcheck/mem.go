package ifcheck

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ErrMemory: the connection table the options ask for does not fit in the
// memory the machine has available; allocating it would end the process
// (the Go runtime's fatal out of memory) or wake the kernel's OOM killer.
var ErrMemory = errors.New("ifcheck: connection table larger than the available memory")

// CheckTable refuses, wrapping ErrMemory, a connection table of records
// records of recordBytes each that is larger than the memory the system
// reports available (Linux: MemAvailable of /proc/meminfo); what names the
// option to change in the message. Where the available memory cannot be
// read it checks nothing.
func CheckTable(records uint64, recordBytes int, what string) error {
	avail, err := memAvailable()
	if err != nil {
		return nil
	}
	return checkTable(records, recordBytes, avail, what)
}

func checkTable(records uint64, recordBytes int, avail uint64, what string) error {
	need := records * uint64(recordBytes)
	if recordBytes > 0 && need/uint64(recordBytes) != records {
		need = ^uint64(0)
	}
	if need <= avail {
		return nil
	}
	return fmt.Errorf("ifcheck: %d connection records of %d bytes need %.1f GiB, more than the %.1f GiB available: narrow %s: %w",
		records, recordBytes, float64(need)/(1<<30), float64(avail)/(1<<30), what, ErrMemory)
}

// parseMemAvailable returns MemAvailable in bytes from the text of
// /proc/meminfo ("MemAvailable:   123456 kB").
func parseMemAvailable(b []byte) (uint64, error) {
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte("MemAvailable:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("ifcheck: meminfo line %q: %w", line, ErrUnsupported)
		}
		kb, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil || kb > ^uint64(0)>>10 {
			return 0, fmt.Errorf("ifcheck: meminfo line %q: %w", line, ErrUnsupported)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("ifcheck: no MemAvailable in meminfo: %w", ErrUnsupported)
}
