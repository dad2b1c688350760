package zmtp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Wire constants of ZMTP 3.x (RFC 23/ZMTP, RFC 37/ZMTP 3.1).
const (
	greetingSize  = 64
	signatureSize = 10

	flagMore     = 0x01
	flagLong     = 0x02
	flagCommand  = 0x04
	flagReserved = 0xF8

	// maxBodyChunk is the largest allocation made for a frame body before
	// the bytes have arrived: larger bodies grow as data is read, so a peer
	// cannot make us reserve MaxFrameSize by sending only a header.
	maxBodyChunk = 1 << 20

	socketDealer = "DEALER"
	socketRouter = "ROUTER"
)

var zeros [32]byte

// Security mechanisms (RFC 23/ZMTP; RFC 24/ZMTP-PLAIN).
const (
	mechNull  = "NULL"
	mechPlain = "PLAIN"
)

// appendGreeting appends our NULL greeting: signature, version 3.1,
// mechanism NULL, as-server 0, filler.
func appendGreeting(dst []byte) []byte { return appendGreetingMech(dst, mechNull, false) }

// appendGreetingMech appends a greeting announcing mechanism (at most 20
// bytes) and the as-server flag.
func appendGreetingMech(dst []byte, mechanism string, asServer bool) []byte {
	dst = append(dst, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 1)
	dst = append(dst, mechanism...)
	dst = append(dst, zeros[:20-len(mechanism)]...) // mechanism is 20 bytes, zero padded
	if asServer {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	return append(dst, zeros[:31]...)
}

// greeting is a peer's parsed greeting.
type greeting struct {
	major, minor byte
	mechanism    string
	asServer     bool
}

// checkSignature validates the first 10 bytes: 0xFF, 8 bytes of padding,
// and a final byte with bit 0 set. ZMTP 1.0 peers, HTTP clients and garbage
// fail here.
func checkSignature(b []byte) error {
	if b[0] != 0xFF || b[9]&0x01 == 0 {
		return fmt.Errorf("%w: first bytes % x", ErrBadGreeting, b[:signatureSize])
	}
	return nil
}

// checkVersion validates the major version byte. Versions above 3 are
// accepted, as the spec requires; the peer downgrades to 3.x.
func checkVersion(major byte) error {
	if major < 3 {
		return fmt.Errorf("%w: peer speaks ZMTP revision %d (ZMTP 2.x or older), need 3.x", ErrVersion, major)
	}
	return nil
}

// parseGreeting validates a complete 64-byte greeting.
func parseGreeting(b *[greetingSize]byte) (greeting, error) {
	if err := checkSignature(b[:signatureSize]); err != nil {
		return greeting{}, err
	}
	if err := checkVersion(b[10]); err != nil {
		return greeting{}, err
	}
	mech := b[12:32]
	n := 0
	for n < len(mech) && mech[n] != 0 {
		n++
	}
	g := greeting{major: b[10], minor: b[11], mechanism: string(mech[:n]), asServer: b[32] != 0}
	if g.mechanism != mechNull && g.mechanism != mechPlain {
		return g, fmt.Errorf("%w %s, only NULL and PLAIN are supported", ErrMechanism, quoteShort(g.mechanism))
	}
	return g, nil
}

// readGreeting reads and validates a peer's greeting step by step (first
// byte, rest of the signature, major version, rest), so that peers that send
// a few bytes and wait are rejected at once rather than at the handshake
// deadline: a ZMTP 1.0 peer (first byte is a length, not 0xFF) after one
// byte, a ZMTP 2.0 peer (sends 12 bytes and waits) after 11.
func readGreeting(r io.Reader, buf *[greetingSize]byte) (greeting, error) {
	steps := [...]struct {
		end   int
		check func() error
	}{
		{1, func() error {
			if buf[0] != 0xFF {
				return fmt.Errorf("%w: first byte 0x%02x", ErrBadGreeting, buf[0])
			}
			return nil
		}},
		{signatureSize, func() error { return checkSignature(buf[:signatureSize]) }},
		{signatureSize + 1, func() error { return checkVersion(buf[signatureSize]) }},
		{greetingSize, nil},
	}
	start := 0
	for _, s := range steps {
		if _, err := io.ReadFull(r, buf[start:s.end]); err != nil {
			if err == io.EOF && start > 0 {
				err = io.ErrUnexpectedEOF
			}
			return greeting{}, err
		}
		if s.check != nil {
			if err := s.check(); err != nil {
				return greeting{}, err
			}
		}
		start = s.end
	}
	return parseGreeting(buf)
}

// appendFrameHeader appends a frame header: flags plus a 1-byte size, or
// flags|LONG plus an 8-byte big-endian size.
func appendFrameHeader(dst []byte, flags byte, n int) []byte {
	if n <= 255 {
		return append(dst, flags, byte(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, flags|flagLong), uint64(n))
}

func frameHeaderSize(n int) int {
	if n <= 255 {
		return 2
	}
	return 9
}

// encodedSize is the wire size of a message made of frames.
func encodedSize(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		n += frameHeaderSize(len(f)) + len(f)
	}
	return n
}

// appendMessage appends frames as one ZMTP message: MORE on every frame but
// the last.
func appendMessage(dst []byte, frames [][]byte) []byte {
	for i, f := range frames {
		var flags byte
		if i < len(frames)-1 {
			flags = flagMore
		}
		dst = appendFrameHeader(dst, flags, len(f))
		dst = append(dst, f...)
	}
	return dst
}

// encodeMessage returns frames encoded in a pooled buffer (see putBuf).
func encodeMessage(frames [][]byte) []byte {
	return appendMessage(getBuf(encodedSize(frames)), frames)
}

// appendCommand appends a command frame: name size, name, data.
func appendCommand(dst []byte, name string, data []byte) []byte {
	dst = appendFrameHeader(dst, flagCommand, 1+len(name)+len(data))
	dst = append(dst, byte(len(name)))
	dst = append(dst, name...)
	return append(dst, data...)
}

// appendProperty appends one metadata property: name size, name, 4-byte
// value size, value.
func appendProperty(dst []byte, name, value string) []byte {
	dst = append(dst, byte(len(name)))
	dst = append(dst, name...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...)
}

// appendReady appends a READY command announcing socketType and identity.
func appendReady(dst []byte, socketType, identity string) []byte {
	var props [64 + 255]byte
	p := appendProperty(props[:0], "Socket-Type", socketType)
	p = appendProperty(p, "Identity", identity)
	return appendCommand(dst, "READY", p)
}

// appendError appends an ERROR command; reason is cut to 255 bytes.
func appendError(dst []byte, reason string) []byte {
	if len(reason) > 255 {
		reason = reason[:255]
	}
	var b [256]byte
	p := append(b[:0], byte(len(reason)))
	p = append(p, reason...)
	return appendCommand(dst, "ERROR", p)
}

// parseCommand splits a command frame body into name and data.
func parseCommand(body []byte) (name, data []byte, err error) {
	if len(body) < 1 || int(body[0]) > len(body)-1 {
		return nil, nil, fmt.Errorf("%w: truncated command name", ErrProtocol)
	}
	n := int(body[0])
	if n == 0 {
		return nil, nil, fmt.Errorf("%w: empty command name", ErrProtocol)
	}
	return body[1 : 1+n], body[1+n:], nil
}

// parseProperties calls fn for each metadata property in data.
func parseProperties(data []byte, fn func(name, value []byte)) error {
	for len(data) > 0 {
		n := int(data[0])
		if n == 0 || len(data) < 1+n+4 {
			return fmt.Errorf("%w: truncated property name", ErrProtocol)
		}
		name := data[1 : 1+n]
		data = data[1+n:]
		vlen := binary.BigEndian.Uint32(data)
		data = data[4:]
		if uint64(vlen) > uint64(len(data)) {
			return fmt.Errorf("%w: property %q value of %d bytes overruns the command", ErrProtocol, name, vlen)
		}
		fn(name, data[:vlen])
		data = data[vlen:]
	}
	return nil
}

// ready is the content of a peer's READY command.
type ready struct {
	socketType string
	identity   string
	hasType    bool
}

// parseReady parses the data of a READY command. Property names are
// compared case-insensitively; unknown properties are ignored.
func parseReady(data []byte) (ready, error) {
	var r ready
	err := parseProperties(data, func(name, value []byte) {
		switch {
		case strings.EqualFold(string(name), "Socket-Type"):
			r.socketType, r.hasType = string(value), true
		case strings.EqualFold(string(name), "Identity"):
			r.identity = string(value)
		}
	})
	if err != nil {
		return r, err
	}
	if !r.hasType {
		return r, fmt.Errorf("%w: READY without Socket-Type", ErrSocketType)
	}
	return r, nil
}

// parseErrorReason returns the reason of an ERROR command, as far as it is
// well formed.
func parseErrorReason(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	n := min(int(data[0]), len(data)-1)
	return string(data[1 : 1+n])
}

// compatible reports whether a socket of type ours may talk to a peer of
// type peer (RFC 28/REQREP).
func compatible(ours, peer string) bool {
	switch ours {
	case socketRouter:
		return peer == "DEALER" || peer == "REQ" || peer == "ROUTER"
	case socketDealer:
		return peer == "ROUTER" || peer == "REP" || peer == "DEALER"
	}
	return false
}

// frameReader reads frames from a buffered connection. It tolerates any
// split of the input: the header is read byte by byte from the bufio.Reader
// and bodies with io.ReadFull.
type frameReader struct {
	br  *bufio.Reader
	max int64 // MaxFrameSize
	hdr [8]byte
}

// readFrame reads one frame whose body may not exceed limit bytes. The
// limit is checked against the header before the body is allocated.
func (fr *frameReader) readFrame(limit int64) (flags byte, body []byte, err error) {
	flags, err = fr.br.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	if flags&flagReserved != 0 {
		return 0, nil, fmt.Errorf("%w: reserved frame flags set (0x%02x)", ErrProtocol, flags)
	}
	var size uint64
	if flags&flagLong != 0 {
		if _, err := io.ReadFull(fr.br, fr.hdr[:]); err != nil {
			return 0, nil, unexpected(err)
		}
		size = binary.BigEndian.Uint64(fr.hdr[:])
	} else {
		b, err := fr.br.ReadByte()
		if err != nil {
			return 0, nil, unexpected(err)
		}
		size = uint64(b)
	}
	if size > uint64(limit) {
		return 0, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, size, limit)
	}
	body, err = fr.readBody(int(size))
	return flags, body, err
}

// readBody reads n bytes into a new slice. Bodies above maxBodyChunk grow as
// their bytes arrive.
func (fr *frameReader) readBody(n int) ([]byte, error) {
	if n <= maxBodyChunk {
		b := make([]byte, n)
		if _, err := io.ReadFull(fr.br, b); err != nil {
			return nil, unexpected(err)
		}
		return b, nil
	}
	b := make([]byte, 0, maxBodyChunk)
	for len(b) < n {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(cap(b), n-len(b)))
		}
		m := min(cap(b), n)
		if _, err := io.ReadFull(fr.br, b[len(b):m]); err != nil {
			return nil, unexpected(err)
		}
		b = b[:m]
	}
	return b[:n:n], nil
}

// unexpected turns an EOF inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readMessage reads frames until a complete message, passing commands
// between messages to onCommand. Commands inside a multi-part message are a
// protocol error.
func (fr *frameReader) readMessage(onCommand func(name, data []byte) error) ([][]byte, error) {
	var frames [][]byte
	var total int64
	for {
		flags, body, err := fr.readFrame(fr.max - total)
		if err != nil {
			if errors.Is(err, io.EOF) && frames != nil {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if flags&flagCommand != 0 {
			if frames != nil || flags&flagMore != 0 {
				return nil, fmt.Errorf("%w: command frame inside a multi-part message", ErrProtocol)
			}
			name, data, err := parseCommand(body)
			if err != nil {
				return nil, err
			}
			if err := onCommand(name, data); err != nil {
				return nil, err
			}
			continue
		}
		if flags&flagMore == 0 && frames == nil {
			return [][]byte{body}, nil
		}
		if len(frames) >= MaxMessageFrames {
			return nil, fmt.Errorf("%w: more than %d frames in a message", ErrProtocol, MaxMessageFrames)
		}
		total += int64(len(body))
		frames = append(frames, body)
		if flags&flagMore == 0 {
			return frames, nil
		}
	}
}
