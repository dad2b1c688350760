package locustfile

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is wrapped by errors about Python the reader cannot tokenize or
// parse; ErrUnsupported by errors about Python outside the subset the reader
// translates (see the package doc).
var (
	ErrSyntax      = errors.New("locustfile: cannot read the Python")
	ErrUnsupported = errors.New("locustfile: outside the subset cicada reads")
	// ErrNoUsers means no user class of the file could be read.
	ErrNoUsers = errors.New("locustfile: no user class cicada can run")
)

// Error is one problem at one place of a locustfile.
type Error struct {
	File string
	Line int
	Col  int
	// Class is the user class the problem refuses; "" when it refuses the
	// file.
	Class string
	// Construct names the Python construct, like "import flask" or
	// "for loop"; "syntax" for tokenizer and parser errors.
	Construct string
	// Msg says what is wrong and what to do.
	Msg string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Col)
	if e.Class != "" {
		fmt.Fprintf(&b, "class %s: ", e.Class)
	}
	if e.Construct != "" && e.Construct != "syntax" {
		fmt.Fprintf(&b, "%s: ", e.Construct)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrSyntax or ErrUnsupported.
func (e *Error) Unwrap() error {
	if e.Construct == "syntax" {
		return ErrSyntax
	}
	return ErrUnsupported
}
