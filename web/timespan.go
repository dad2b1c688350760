package web

import (
	"fmt"
	"strconv"
	"time"
)

// runTimeError is Locust's message for an invalid run_time field
// (locust/web.py 2.12.1, swarm()).
const runTimeError = "Valid run_time formats are : 20, 20s, 3m, 2h, 1h20m, 3h30m10s, etc."

// maxTimespan bounds parsed spans; Python raises OverflowError above
// timedelta's range, which Locust reports as an HTTP 500.
const maxTimespan = 100 * 365 * 24 * time.Hour

// ParseTimespan parses a Locust time span as locust.util.timespan
// .parse_timespan (2.12.1) does: a bare integer is seconds ("20"); otherwise
// optional "<n>h", "<n>m" and "<n>s" parts in that order, matched at the
// start of the string only, so trailing text after a valid prefix is
// ignored ("10s junk" is 10 s, "1h 20m" is 1 h), and at least one part must
// be present. The result is truncated to whole seconds. Errors wrap
// ErrBadTimespan.
func ParseTimespan(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadTimespan)
	}
	// Python's "^\d+$" also matches before one trailing newline.
	digits := s
	if n := len(digits); n > 1 && digits[n-1] == '\n' {
		digits = digits[:n-1]
	}
	if allDigits(digits) {
		return spanSeconds(digits, time.Second, s)
	}
	var total time.Duration
	found := false
	rest := s
	for _, unit := range []struct {
		c   byte
		mul time.Duration
	}{{'h', time.Hour}, {'m', time.Minute}, {'s', time.Second}} {
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 0 || n >= len(rest) || rest[n] != unit.c {
			continue
		}
		d, err := spanSeconds(rest[:n], unit.mul, s)
		if err != nil {
			return 0, err
		}
		total += d
		if total > maxTimespan {
			return 0, fmt.Errorf("%w: %q is too long", ErrBadTimespan, s)
		}
		found = true
		rest = rest[n+1:]
	}
	if !found {
		return 0, fmt.Errorf("%w: %q", ErrBadTimespan, s)
	}
	return total, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func spanSeconds(digits string, unit time.Duration, orig string) (time.Duration, error) {
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || n > uint64(maxTimespan/unit) {
		return 0, fmt.Errorf("%w: %q is too long", ErrBadTimespan, orig)
	}
	return time.Duration(n) * unit, nil
}
