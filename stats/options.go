package stats

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/cicada-load/cicada/protocol"
)

// Default limits on distinct rows (see Options). A Locust test rarely has
// more than a few hundred names; one that passes these limits almost always
// puts an id in the name (name= not set), which makes the tables useless
// anyway, while each entry costs a master several KB.
const (
	DefaultMaxEntries    = 10_000
	DefaultMaxErrors     = 10_000
	DefaultMaxExceptions = 1_000
	// DefaultMaxBuckets bounds the response-time buckets off Locust's
	// dense grid (see Options.MaxBuckets): Locust's rounding gives
	// 280 keys below 100 s and one per second above.
	DefaultMaxBuckets = 100_000
	// DefaultMaxText is the longest name, method, error text, error key,
	// exception message, traceback or node a Stats stores, in bytes
	// (Options.MaxText).
	DefaultMaxText = 16 << 10
)

// TruncatedMark ends a text that a Stats cut at Options.MaxText.
const TruncatedMark = " [truncated]"

// The row that collects what is beyond a limit: entries are folded into the
// entry (OtherMethod, OtherName), error rows into the row (OtherMethod,
// OtherName, OtherError) on a master and into (method, name, OtherError) of
// their own entry on a worker, exceptions into the one whose message and
// traceback are OtherException.
const (
	OtherMethod    = "OTHER"
	OtherName      = "(other names)"
	OtherError     = "(other errors)"
	OtherException = "(other exceptions)"
)

// ErrBadOption is returned (wrapped) for Options that cannot be honoured.
var ErrBadOption = errors.New("stats: invalid option")

// Options configures Stats (NewWithOptions) and Recorder
// (NewRecorderWithOptions). The zero value works.
type Options struct {
	// Now is the clock. If nil, time.Now is used.
	Now func() time.Time
	// MaxEntries is the most distinct (method, name) entries kept; samples
	// of further names are counted under the entry (OtherMethod,
	// OtherName), which comes on top. If zero, DefaultMaxEntries is used.
	// A Recorder's must stay below protocol.MaxReportEntries.
	MaxEntries int
	// MaxErrors is the most distinct error rows kept (a Recorder: within
	// one report window, about, as concurrent Records may pass it by a
	// few); further errors are counted under OtherError. If zero,
	// DefaultMaxErrors is used.
	MaxErrors int
	// MaxExceptions is the most distinct exceptions (by traceback) a Stats
	// keeps; further ones are counted under OtherException. If zero,
	// DefaultMaxExceptions is used. A Recorder ignores it.
	MaxExceptions int
	// MaxBuckets is the most distinct response-time bucket keys of 100 s
	// and more (or off Locust's rounding grid, as only a broken or hostile
	// worker sends) a Stats keeps over all its entries; beyond it, a new
	// such key counts under the largest power of two not above it. If
	// zero, DefaultMaxBuckets is used. A Recorder ignores it (its keys come
	// from BucketKey).
	MaxBuckets int
	// MaxText is the most bytes of a name, method, error text or key,
	// exception message, traceback or node name a Stats stores; a longer
	// one is cut (at a UTF-8 boundary) and ends with TruncatedMark, so a
	// hostile worker cannot make each of the capped rows megabytes large.
	// Texts cut to the same prefix share a row. If zero, DefaultMaxText
	// is used. A Recorder ignores it.
	MaxText int
	// Logger receives one warning per limit the first time it folds a row
	// (again after Clear). If nil, nothing is logged.
	Logger *slog.Logger
}

// normalize fills in the defaults and refuses negative limits.
func (o Options) normalize() (Options, error) {
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{{"MaxEntries", &o.MaxEntries, DefaultMaxEntries}, {"MaxErrors", &o.MaxErrors, DefaultMaxErrors},
		{"MaxExceptions", &o.MaxExceptions, DefaultMaxExceptions}, {"MaxBuckets", &o.MaxBuckets, DefaultMaxBuckets},
		{"MaxText", &o.MaxText, DefaultMaxText}} {
		switch {
		case *f.v < 0:
			return o, fmt.Errorf("%w: %s %d is negative", ErrBadOption, f.name, *f.v)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// normalizeRecorder is normalize plus the Recorder's bounds: its reports
// must stay within what a master decodes.
func (o Options) normalizeRecorder() (Options, error) {
	o, err := o.normalize()
	if err != nil {
		return o, err
	}
	if o.MaxEntries >= protocol.MaxReportEntries {
		return o, fmt.Errorf("%w: Recorder MaxEntries %d: a report of more than protocol.MaxReportEntries (%d) entries with the folded one is refused",
			ErrBadOption, o.MaxEntries, protocol.MaxReportEntries)
	}
	if o.MaxErrors+o.MaxEntries+1 > protocol.MaxReportErrors {
		return o, fmt.Errorf("%w: Recorder MaxErrors %d with MaxEntries %d: a report of more than protocol.MaxReportErrors (%d) error rows with the folded ones is refused",
			ErrBadOption, o.MaxErrors, o.MaxEntries, protocol.MaxReportErrors)
	}
	return o, nil
}

// clip returns s, or a copy of its first max bytes (cut at a rune start)
// followed by TruncatedMark when it is longer: the copy keeps no reference
// to a large received buffer.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + TruncatedMark
}

// otherErrorKey is the key of a master's folded error row.
var otherErrorKey = errorKey(OtherMethod, OtherName, OtherError)
