package protocol

import (
	"errors"
	"io"
	"strings"
)

// ErrMalformed is wrapped by every error Decode returns: the payload is not
// a well-formed Locust message (bad envelope, a missing required key, a value
// of the wrong type, trailing bytes, nesting too deep, ...). The wrapping
// error names the message type and the offending field. Test with errors.Is.
var ErrMalformed = errors.New("protocol: malformed message")

// ErrOutOfRange is wrapped, beside ErrMalformed, by the errors Decode
// returns for a stats report holding a value cicada refuses to merge: a
// NaN or infinite float, a negative count, time or size, or more entries or
// error rows than MaxReportEntries or MaxReportErrors. Locust's master
// merges such values as they come (a NaN start_time turns every rate into
// nan, sums wrap); cicada drops the report, and the wrapping error names
// the field.
var ErrOutOfRange = errors.New("protocol: stats value out of range")

// ErrUnsupported is wrapped by the errors Encode and AppendEncode return when
// a Message cannot be put on the wire: Data of a type this package cannot
// encode, a typed Data value under the wrong Type, or a time.Time outside the
// years 1 to 9999. The wrapping error names the offending field.
var ErrUnsupported = errors.New("protocol: unsupported value")

// fieldError is the error type behind ErrMalformed and ErrUnsupported. The
// path is collected while the error unwinds through the (recursive) decoder
// and encoder, so the happy path never formats anything.
type fieldError struct {
	kind  error    // ErrMalformed or ErrUnsupported
	where string   // "stats data", "envelope", ...
	path  []string // innermost element first
	msg   string
	cause error // underlying error (for example io.ErrUnexpectedEOF), or nil
}

func (e *fieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.kind.Error())
	if e.where != "" {
		b.WriteString(": ")
		b.WriteString(e.where)
	}
	for i := len(e.path) - 1; i >= 0; i-- {
		p := e.path[i]
		switch {
		case i == len(e.path)-1:
			b.WriteString(": ")
		case !strings.HasPrefix(p, "["):
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	b.WriteString(": ")
	b.WriteString(e.msg)
	if e.cause != nil {
		b.WriteString(": ")
		b.WriteString(e.cause.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel and, when there is one, the underlying cause.
func (e *fieldError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

func malformed(msg string) error { return &fieldError{kind: ErrMalformed, msg: msg} }

// malformedCause wraps a lower-level error; running out of input is always
// reported as io.ErrUnexpectedEOF.
func malformedCause(msg string, cause error) error {
	if errors.Is(cause, io.EOF) {
		cause = io.ErrUnexpectedEOF
	}
	return &fieldError{kind: ErrMalformed, msg: msg, cause: cause}
}

// outOfRange is malformed for a value Decode refuses (see ErrOutOfRange).
func outOfRange(msg string) error {
	return &fieldError{kind: ErrMalformed, msg: msg, cause: ErrOutOfRange}
}

func unsupported(msg string) error { return &fieldError{kind: ErrUnsupported, msg: msg} }

// at prefixes a path element to err if it is a *fieldError. Elements that
// start with "[" are joined without a dot.
func at(err error, elem string) error {
	if fe, ok := err.(*fieldError); ok { //nolint:errorlint // only this package's own unwrapped *fieldError takes the path
		fe.path = append(fe.path, elem)
	}
	return err
}

// within records where in the message err happened ("envelope", "stats data").
func within(err error, where string) error {
	if fe, ok := err.(*fieldError); ok && fe.where == "" { //nolint:errorlint // as in at
		fe.where = where
	}
	return err
}
