// Package wsframe is cicada's RFC 6455 (WebSocket) framing: the opening
// handshake's key and accept values, frame headers, masking and message
// reading, shared by the client (worker/sockc) and the built-in target's
// echo endpoint (package target). It imports only the standard library.
//
// Contract:
//   - Reader assembles one message at a time from data frames and their
//     continuations, answers nothing itself and hands control frames to
//     its caller (Reader.Next returns pings, pongs and closes as they come,
//     even between the fragments of a message, as RFC 6455 5.4 allows);
//   - no extension is ever negotiated, so any RSV bit set is a protocol
//     error, as are unknown opcodes, fragmented or oversized (>125 bytes)
//     control frames, a continuation without a started message, a new data
//     frame inside a fragmented message, a 64-bit length with the top bit
//     set, a close payload of one byte, a close code outside the ranges
//     RFC 6455 7.4 allows on the wire, and a text message that is not
//     UTF-8;
//   - a frame masked when it must not be (server to client) or unmasked
//     when it must be (client to server) is a protocol error;
//   - a message larger than Reader.MaxMessage fails with ErrTooLarge before
//     its payload is read (the limit is checked against the header's length).
//
// Errors wrap ErrProtocol or ErrTooLarge; the close code a peer should get
// for them is 1002 (protocol error), 1007 (invalid UTF-8) and 1009 (too big),
// see CloseCodeFor.
package wsframe

import (
	"crypto/sha1" //nolint:gosec // RFC 6455 mandates SHA-1 for Sec-WebSocket-Accept
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// Opcodes (RFC 6455 5.2).
const (
	OpContinuation = 0x0
	OpText         = 0x1
	OpBinary       = 0x2
	OpClose        = 0x8
	OpPing         = 0x9
	OpPong         = 0xA
)

// Close codes cicada uses by name (RFC 6455 7.4.1).
const (
	CloseNormal        = 1000
	CloseGoingAway     = 1001
	CloseProtocolError = 1002
	CloseNoStatus      = 1005 // never on the wire: the close frame had no code
	CloseAbnormal      = 1006 // never on the wire: the connection ended without a close frame
	CloseInvalidData   = 1007
	CloseTooBig        = 1009
)

// MaxControlPayload is the largest payload of a control frame.
const MaxControlPayload = 125

// DefaultMaxMessage is Reader.MaxMessage when it is zero: 16 MiB.
const DefaultMaxMessage = 16 << 20

var (
	// ErrProtocol is wrapped by every framing violation.
	ErrProtocol = errors.New("wsframe: protocol error")
	// ErrTooLarge is wrapped when a message exceeds Reader.MaxMessage.
	ErrTooLarge = errors.New("wsframe: message too large")
	// ErrInvalidUTF8 is wrapped (beside ErrProtocol) for a text message or
	// close reason that is not UTF-8.
	ErrInvalidUTF8 = errors.New("wsframe: invalid UTF-8")
)

// CloseCodeFor returns the close code to send a peer whose frames caused
// err: 1009 for ErrTooLarge, 1007 for invalid UTF-8, 1002 otherwise.
func CloseCodeFor(err error) int {
	switch {
	case errors.Is(err, ErrTooLarge):
		return CloseTooBig
	case errors.Is(err, ErrInvalidUTF8):
		return CloseInvalidData
	}
	return CloseProtocolError
}

const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// AcceptKey returns the Sec-WebSocket-Accept value for a
// Sec-WebSocket-Key value.
func AcceptKey(key string) string {
	h := sha1.New() //nolint:gosec // mandated by RFC 6455
	h.Write([]byte(key))
	h.Write([]byte(acceptGUID))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// ValidCloseCode reports whether code may be sent in a close frame
// (RFC 6455 7.4: 1000-1003, 1007-1011, 3000-4999; 1012-1014 as registered
// since).
func ValidCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// AppendFrame appends one complete frame (FIN set) with opcode op and
// payload to dst. With a non-nil mask (a client's frames) the payload is
// masked with it on the way, payload itself is not modified.
func AppendFrame(dst []byte, op byte, payload []byte, mask *[4]byte) []byte {
	dst = append(dst, 0x80|op)
	var m byte
	if mask != nil {
		m = 0x80
	}
	n := len(payload)
	switch {
	case n <= 125:
		dst = append(dst, m|byte(n))
	case n <= 0xFFFF:
		dst = append(dst, m|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, m|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	if mask == nil {
		return append(dst, payload...)
	}
	dst = append(dst, mask[:]...)
	start := len(dst)
	dst = append(dst, payload...)
	Mask(dst[start:], *mask, 0)
	return dst
}

// AppendClose appends a close frame with code and reason (cut to fit 125
// bytes). Code 0 sends a close frame without a code.
func AppendClose(dst []byte, code int, reason string, mask *[4]byte) []byte {
	if code == 0 {
		return AppendFrame(dst, OpClose, nil, mask)
	}
	var p [MaxControlPayload]byte
	binary.BigEndian.PutUint16(p[:], uint16(code))
	n := 2 + copy(p[2:], reason)
	return AppendFrame(dst, OpClose, p[:n], mask)
}

// Mask XORs b with key, b starting at offset pos of the payload.
func Mask(b []byte, key [4]byte, pos int) {
	for i := range b {
		b[i] ^= key[(pos+i)&3]
	}
}

// Header is a parsed frame header.
type Header struct {
	Fin    bool
	Op     byte
	Masked bool
	Mask   [4]byte
	Length int64
}

// ParseHeader parses the frame header at the start of b. It returns the
// header and its size, or n == 0 (and no error) when b holds only part of
// one. Errors wrap ErrProtocol.
func ParseHeader(b []byte) (h Header, n int, err error) {
	if len(b) < 2 {
		return h, 0, nil
	}
	h.Fin = b[0]&0x80 != 0
	if b[0]&0x70 != 0 {
		return h, 0, fmt.Errorf("%w: reserved bits set (no extension was negotiated)", ErrProtocol)
	}
	h.Op = b[0] & 0x0F
	h.Masked = b[1]&0x80 != 0
	l := int64(b[1] & 0x7F)
	n = 2
	switch l {
	case 126:
		if len(b) < 4 {
			return h, 0, nil
		}
		l = int64(binary.BigEndian.Uint16(b[2:]))
		n = 4
	case 127:
		if len(b) < 10 {
			return h, 0, nil
		}
		u := binary.BigEndian.Uint64(b[2:])
		if u>>63 != 0 {
			return h, 0, fmt.Errorf("%w: 64-bit length with the most significant bit set", ErrProtocol)
		}
		l = int64(u)
		n = 10
	}
	h.Length = l
	if h.Masked {
		if len(b) < n+4 {
			return h, 0, nil
		}
		copy(h.Mask[:], b[n:n+4])
		n += 4
	}
	switch h.Op {
	case OpContinuation, OpText, OpBinary:
	case OpClose, OpPing, OpPong:
		if !h.Fin {
			return h, 0, fmt.Errorf("%w: fragmented control frame (opcode %#x)", ErrProtocol, h.Op)
		}
		if h.Length > MaxControlPayload {
			return h, 0, fmt.Errorf("%w: control frame of %d bytes (at most 125)", ErrProtocol, h.Length)
		}
	default:
		return h, 0, fmt.Errorf("%w: unknown opcode %#x", ErrProtocol, h.Op)
	}
	return h, n, nil
}

// ParseClose splits a close frame's payload into its code and reason:
// CloseNoStatus for an empty payload. Errors wrap ErrProtocol.
func ParseClose(p []byte) (code int, reason string, err error) {
	switch len(p) {
	case 0:
		return CloseNoStatus, "", nil
	case 1:
		return 0, "", fmt.Errorf("%w: close frame with a 1-byte payload", ErrProtocol)
	}
	code = int(binary.BigEndian.Uint16(p))
	if !ValidCloseCode(code) {
		return 0, "", fmt.Errorf("%w: close code %d is not allowed on the wire", ErrProtocol, code)
	}
	if !utf8.Valid(p[2:]) {
		return 0, "", fmt.Errorf("%w: %w: close reason", ErrProtocol, ErrInvalidUTF8)
	}
	return code, string(p[2:]), nil
}

// Reader reads frames from a byte stream. Set R; the other fields are
// optional. A Reader keeps no buffer of its own: it reads headers into a
// small array and payloads straight into the caller's slice, so an idle
// connection owes it nothing but these fields.
type Reader struct {
	// R is the stream (usually a bufio.Reader over the connection).
	R io.Reader
	// Server says the frames come from a client, so they must be masked
	// (a server's Reader); a client's Reader refuses masked frames.
	Server bool
	// MaxMessage bounds one message's payload; 0 means DefaultMaxMessage.
	MaxMessage int64

	inMessage bool   // a fragmented message is being assembled
	text      bool   // ... and it is a text message
	partial   []byte // ... and these bytes of it were read before a control frame
}

// Frame is a control frame or a complete message returned by Next.
type Frame struct {
	Op      byte   // OpText or OpBinary for a message; OpClose, OpPing or OpPong
	Payload []byte // a message: buf given to Next, grown; a control frame: its own slice
}

// Next reads the next message or control frame. A message's payload is
// appended to buf[:0]; a control frame's payload gets a slice of its own.
// A control frame between the fragments of a message is returned at once
// and the next call continues the message (keeping the part read so far).
// Errors wrap ErrProtocol, ErrTooLarge or the stream's error (io.EOF
// before a frame starts, io.ErrUnexpectedEOF inside a frame or message).
func (r *Reader) Next(buf []byte) (Frame, error) {
	limit := r.MaxMessage
	if limit <= 0 {
		limit = DefaultMaxMessage
	}
	msg := append(buf[:0], r.partial...)
	r.partial = nil
	for {
		h, err := r.header()
		if err != nil {
			if errors.Is(err, io.EOF) && r.inMessage {
				err = io.ErrUnexpectedEOF
			}
			return Frame{}, err
		}
		if h.Masked != r.Server {
			if r.Server {
				return Frame{}, fmt.Errorf("%w: unmasked frame from a client", ErrProtocol)
			}
			return Frame{}, fmt.Errorf("%w: masked frame from a server", ErrProtocol)
		}
		if h.Op >= OpClose {
			p := make([]byte, h.Length)
			if err := r.payload(p, h); err != nil {
				return Frame{}, err
			}
			if h.Op == OpClose {
				if _, _, err := ParseClose(p); err != nil {
					return Frame{}, err
				}
			}
			if r.inMessage {
				r.partial = msg
			}
			return Frame{Op: h.Op, Payload: p}, nil
		}
		switch {
		case h.Op == OpContinuation && !r.inMessage:
			return Frame{}, fmt.Errorf("%w: continuation frame without a message", ErrProtocol)
		case h.Op != OpContinuation && r.inMessage:
			return Frame{}, fmt.Errorf("%w: new message (opcode %#x) inside a fragmented one", ErrProtocol, h.Op)
		case h.Op != OpContinuation:
			r.text = h.Op == OpText
		}
		if h.Length > limit-int64(len(msg)) {
			return Frame{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
		}
		start := len(msg)
		msg = slices.Grow(msg, int(h.Length))[:start+int(h.Length)]
		if err := r.payload(msg[start:], h); err != nil {
			return Frame{}, err
		}
		if !h.Fin {
			r.inMessage = true
			continue
		}
		r.inMessage = false
		op := byte(OpBinary)
		if r.text {
			op = OpText
			if !utf8.Valid(msg) {
				return Frame{}, fmt.Errorf("%w: %w: text message", ErrProtocol, ErrInvalidUTF8)
			}
		}
		return Frame{Op: op, Payload: msg}, nil
	}
}

func (r *Reader) header() (Header, error) {
	var b [14]byte
	n := 0
	need := 2
	for {
		m, err := io.ReadFull(r.R, b[n:need])
		n += m
		if err != nil {
			if errors.Is(err, io.EOF) && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			return Header{}, err
		}
		h, hn, err := ParseHeader(b[:n])
		if err != nil {
			return Header{}, err
		}
		if hn > 0 {
			return h, nil
		}
		// The header is longer: its length field and mask say how much.
		need = 2
		switch b[1] & 0x7F {
		case 126:
			need += 2
		case 127:
			need += 8
		}
		if b[1]&0x80 != 0 {
			need += 4
		}
	}
}

func (r *Reader) payload(p []byte, h Header) error {
	if _, err := io.ReadFull(r.R, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if h.Masked {
		Mask(p, h.Mask, 0)
	}
	return nil
}
