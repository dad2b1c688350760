package wire

import "errors"

// Sentinels wrapped by every parse and build error of this package.
var (
	// ErrShort: the buffer is shorter than the header or the length a
	// header field claims.
	ErrShort = errors.New("wire: buffer too short")
	// ErrMalformed: a header field has a value this package does not accept
	// (IPv4 version, header length, ARP hardware type, TCP data offset, a
	// TCP option's length).
	ErrMalformed = errors.New("wire: malformed header")
)
