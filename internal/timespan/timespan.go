// Package timespan is cicada's one parser of Locust's time spans: the
// -t/--run-time and -s/--stop-timeout options (command line, LOCUST_*
// environment variables, config files) and the web form's run_time field.
// FromSeconds converts the protocol's float seconds with the same bound.
//
// The grammar is the one locust.util.timespan.parse_timespan (Locust 2.12.1)
// accepts: a bare number of seconds ("20"), or "<n>h", "<n>m" and "<n>s"
// parts in that order, each at most once and at least one of them ("2h",
// "1h20m", "3h30m10s"). Deliberate differences, each refusing an input Locust
// would silently run with another meaning, or crash on:
//
//   - Locust matches the parts at the start of the string only and ignores
//     whatever follows, so "1h 20m" runs one hour, "10s junk" ten seconds
//     and "1m1h" one minute. Parse refuses such input, naming the text it
//     would ignore ("3m20" too). Trailing blanks alone are ignored ("30s\n",
//     and "20 ", which Locust refuses).
//   - Locust accepts any Unicode decimal digit; Parse only ASCII ones.
//   - Locust raises OverflowError (the web API answers HTTP 500) above
//     Python's timedelta range; Parse refuses spans above Max with
//     ErrTooLong, so a span never wraps around time.Duration.
//
// Leading blanks are refused, as Locust does (" 30s"); config files strip
// their values before they get here, as Locust's configparser does.
package timespan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Max is the longest span Parse accepts: 100 years, far beyond any test and
// well inside time.Duration's range (about 292 years).
const Max = 100 * 365 * 24 * time.Hour

// Formats is Locust's hint for a bad time span, appended to Parse's errors.
const Formats = "valid formats are 20, 20s, 3m, 2h, 1h20m, 3h30m10s, etc."

var (
	// ErrInvalid is wrapped by Parse's errors for input outside the grammar.
	ErrInvalid = errors.New("timespan: invalid time span")
	// ErrTooLong is wrapped by Parse's errors for a span above Max.
	ErrTooLong = errors.New("timespan: time span too long")
)

// units are the parts of a span, in the only order they may appear.
var units = [...]struct {
	c   byte
	mul time.Duration
}{{'h', time.Hour}, {'m', time.Minute}, {'s', time.Second}}

// Parse parses a Locust time span (see the package doc for the grammar).
// The result is whole seconds between 0 and Max. Errors wrap ErrInvalid or
// ErrTooLong and quote the input.
func Parse(s string) (time.Duration, error) {
	body := strings.TrimRight(s, " \t\r\n\v\f")
	if body == "" {
		return 0, fmt.Errorf("%w: %q is empty; %s", ErrInvalid, s, Formats)
	}
	if n := leadingDigits(body); n == len(body) {
		return part(body, time.Second, s)
	}
	var total time.Duration
	rest := body
	for _, u := range units {
		n := leadingDigits(rest)
		if n == 0 || n == len(rest) || rest[n] != u.c {
			continue
		}
		d, err := part(rest[:n], u.mul, s)
		if err != nil {
			return 0, err
		}
		if total += d; total > Max {
			return 0, tooLong(s)
		}
		rest = rest[n+1:]
	}
	switch {
	case rest == body:
		return 0, fmt.Errorf("%w: %q; %s", ErrInvalid, s, Formats)
	case rest != "":
		return 0, fmt.Errorf("%w: %q: unexpected %q after %q; %s",
			ErrInvalid, s, rest, body[:len(body)-len(rest)], Formats)
	}
	return total, nil
}

// leadingDigits returns the number of ASCII digits s starts with.
func leadingDigits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// part returns digits times unit, refusing more than Max.
func part(digits string, unit time.Duration, orig string) (time.Duration, error) {
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || n > uint64(Max/unit) {
		return 0, tooLong(orig)
	}
	return time.Duration(n) * unit, nil
}

func tooLong(orig string) error {
	return fmt.Errorf("%w: %q is above the maximum of %dh (100 years)", ErrTooLong, orig, int64(Max/time.Hour))
}

// FromSeconds converts a number of seconds from the wire (a master's
// stop_timeout, a float in Locust's protocol) to a Duration without
// wrapping around: values above Max, +Inf included, give Max (no test runs
// longer, so "wait that long" is kept), and NaN and negative values give 0.
// A plain conversion of 1e300 s gives a negative Duration.
func FromSeconds(sec float64) time.Duration {
	switch {
	case !(sec > 0): // NaN too
		return 0
	case sec >= Max.Seconds():
		return Max
	}
	return time.Duration(sec * float64(time.Second))
}
