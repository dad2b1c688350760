package zmtp

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"sync"
	"time"
)

// PlainAuth holds the credentials of ZMTP's PLAIN mechanism (RFC 24/ZMTP-PLAIN).
// A Router with Options.Plain accepts only peers that present the same
// Username and Password; a Dealer with it presents them. See the package
// documentation, "Authentication", for what PLAIN does and does not protect
// against.
type PlainAuth struct {
	// Username may be empty; at most 255 bytes.
	Username string
	// Password must not be empty; at most 255 bytes.
	Password string
}

// maxPlainField is the longest username or password: RFC 24 gives each a
// one-byte length.
const maxPlainField = 255

// maxHelloBody is the largest HELLO command frame body: name length, "HELLO",
// then a length and up to 255 bytes for each of username and password. A
// PLAIN Router reads the HELLO of an unauthenticated peer with this limit, so
// an unknown peer cannot make it allocate more.
const maxHelloBody int64 = 1 + int64(len("HELLO")) + 1 + maxPlainField + 1 + maxPlainField

// validate reports credentials that cannot be sent in a HELLO command.
func (a *PlainAuth) validate() error {
	switch {
	case a.Password == "":
		return fmt.Errorf("%w: PLAIN password is empty", ErrBadOptions)
	case len(a.Password) > maxPlainField:
		return fmt.Errorf("%w: PLAIN password of %d bytes, limit %d", ErrBadOptions, len(a.Password), maxPlainField)
	case len(a.Username) > maxPlainField:
		return fmt.Errorf("%w: PLAIN username of %d bytes, limit %d", ErrBadOptions, len(a.Username), maxPlainField)
	}
	return nil
}

// matches reports whether username and password equal a's, in time that
// depends on neither the content nor the length of the guesses.
func (a *PlainAuth) matches(username, password []byte) bool {
	hash := func(s []byte) [sha256.Size]byte { return sha256.Sum256(s) }
	wu, wp := hash([]byte(a.Username)), hash([]byte(a.Password))
	gu, gp := hash(username), hash(password)
	return subtle.ConstantTimeCompare(wu[:], gu[:])&subtle.ConstantTimeCompare(wp[:], gp[:]) == 1
}

// appendHello appends a HELLO command: username length, username, password
// length, password. Precondition: both are at most 255 bytes (validate).
func appendHello(dst []byte, username, password string) []byte {
	var b [2 + 2*maxPlainField]byte
	p := append(b[:0], byte(len(username)))
	p = append(p, username...)
	p = append(p, byte(len(password)))
	p = append(p, password...)
	return appendCommand(dst, "HELLO", p)
}

// parseHello parses the data of a HELLO command. The result aliases data.
func parseHello(data []byte) (username, password []byte, err error) {
	if len(data) < 1 || int(data[0]) > len(data)-1 {
		return nil, nil, fmt.Errorf("%w: HELLO username overruns the command", ErrProtocol)
	}
	n := int(data[0])
	username, data = data[1:1+n], data[1+n:]
	if len(data) < 1 || int(data[0]) > len(data)-1 {
		return nil, nil, fmt.Errorf("%w: HELLO password overruns the command", ErrProtocol)
	}
	n = int(data[0])
	password, data = data[1:1+n], data[1+n:]
	if len(data) != 0 {
		return nil, nil, fmt.Errorf("%w: %d bytes after the HELLO password", ErrProtocol, len(data))
	}
	return username, password, nil
}

// appendInitiate appends an INITIATE command, the PLAIN client's metadata
// (the same properties as READY).
func appendInitiate(dst []byte, socketType, identity string) []byte {
	var props [64 + 255]byte
	p := appendProperty(props[:0], "Socket-Type", socketType)
	p = appendProperty(p, "Identity", identity)
	return appendCommand(dst, "INITIATE", p)
}

// refusalLogInterval is the least time between two log lines about peers
// refused by authentication; the refusals in between are counted in the
// next line.
const refusalLogInterval = time.Second

// refusalLog rate-limits the log lines of refused peers: a misconfigured
// worker reconnects every few seconds, and an attacker may connect as often
// as it likes.
type refusalLog struct {
	mu         sync.Mutex
	next       time.Time // no line before this
	suppressed int       // refusals not logged since the last line
}

// allow reports whether a refusal at now may be logged and, if so, how many
// refusals were not logged before it.
func (l *refusalLog) allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.suppressed++
		return false, 0
	}
	suppressed, l.suppressed = l.suppressed, 0
	l.next = now.Add(refusalLogInterval)
	return true, suppressed
}
