package zmtp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// peerInfo is what the handshake learned about the peer.
type peerInfo struct {
	major, minor byte
	socketType   string
	identity     string
}

// handshake runs the ZMTP 3 NULL handshake as socket type ours, announcing
// identity (see handshakeAuth).
func handshake(br *bufio.Reader, w io.Writer, ours, identity string, maxFrame int64) (peerInfo, error) {
	return handshakeAuth(br, w, ours, identity, maxFrame, nil)
}

// handshakeAuth runs the ZMTP 3 handshake as socket type ours, announcing
// identity, with the NULL mechanism or, if plain is set, PLAIN: a ROUTER is
// the PLAIN server, a DEALER the client. It sends our greeting, reads and
// checks the peer's, then exchanges the mechanism's commands:
//
//	NULL:         READY ->, <- READY
//	PLAIN client: HELLO ->, <- WELCOME, INITIATE ->, <- READY
//	PLAIN server: <- HELLO, WELCOME ->, <- INITIATE, READY ->
//
// The caller sets the deadline. When the peer is rejected after the
// greetings were exchanged, an ERROR command with the reason is sent (best
// effort) before returning.
func handshakeAuth(br *bufio.Reader, w io.Writer, ours, identity string, maxFrame int64, plain *PlainAuth) (peerInfo, error) {
	mech, server := mechNull, ours == socketRouter
	if plain != nil {
		mech = mechPlain
	}
	var out [greetingSize + 600]byte
	if _, err := w.Write(appendGreetingMech(out[:0], mech, plain != nil && server)); err != nil {
		return peerInfo{}, err
	}
	var gb [greetingSize]byte
	g, err := readGreeting(br, &gb)
	if err != nil {
		return peerInfo{}, err
	}
	info := peerInfo{major: g.major, minor: g.minor}
	switch {
	case g.mechanism != mech && plain == nil:
		return info, fmt.Errorf("%w %s: the peer requires authentication, and no credentials are configured (NULL only)", ErrMechanism, quoteShort(g.mechanism))
	case g.mechanism != mech:
		return info, rejectPeer(w, fmt.Errorf("%w: peer offers %s, PLAIN authentication is required", ErrAuth, quoteShort(g.mechanism)))
	}
	// The peer's as-server flag is not checked: libzmq 4.3 sends 0 whatever
	// its role, and the roles follow from the socket types anyway.
	fr := frameReader{br: br, max: maxFrame}
	var meta []byte // the peer's READY or INITIATE properties
	switch {
	case plain == nil:
		if _, err := w.Write(appendReady(out[:0], ours, identity)); err != nil {
			return info, err
		}
		if meta, err = expectCommand(&fr, w, "READY", maxFrame); err != nil {
			return info, err
		}
	case server:
		data, err := expectCommand(&fr, w, "HELLO", maxHelloBody)
		if err != nil {
			return info, authError(err)
		}
		username, password, err := parseHello(data)
		if err != nil {
			return info, rejectPeer(w, fmt.Errorf("%w: malformed HELLO: %w", ErrAuth, err))
		}
		if !plain.matches(username, password) {
			return info, rejectPeer(w, fmt.Errorf("%w: invalid username or password (username %s)", ErrAuth, quoteShort(string(username))))
		}
		if _, err := w.Write(appendCommand(out[:0], "WELCOME", nil)); err != nil {
			return info, err
		}
		if meta, err = expectCommand(&fr, w, "INITIATE", maxFrame); err != nil {
			return info, err
		}
	default: // client
		if _, err := w.Write(appendHello(out[:0], plain.Username, plain.Password)); err != nil {
			return info, err
		}
		if _, err := expectCommand(&fr, w, "WELCOME", maxFrame); err != nil {
			return info, authError(err)
		}
		if _, err := w.Write(appendInitiate(out[:0], ours, identity)); err != nil {
			return info, err
		}
		if meta, err = expectCommand(&fr, w, "READY", maxFrame); err != nil {
			return info, err
		}
	}
	r, err := parseReady(meta)
	if err != nil {
		return info, rejectPeer(w, err)
	}
	info.socketType, info.identity = r.socketType, r.identity
	if !compatible(ours, r.socketType) {
		return info, rejectPeer(w, fmt.Errorf("%w: %s peer cannot talk to a %s", ErrSocketType, quoteShort(r.socketType), ours))
	}
	if ours == socketRouter && r.identity != "" {
		if len(r.identity) > 255 || r.identity[0] == 0 {
			return info, rejectPeer(w, fmt.Errorf("%w: peer identity of %d bytes starting with 0x%02x", ErrInvalidIdentity, len(r.identity), r.identity[0]))
		}
	}
	if plain != nil && server {
		if _, err := w.Write(appendReady(out[:0], ours, identity)); err != nil {
			return info, err
		}
	}
	return info, nil
}

// expectCommand reads one frame of at most limit bytes, which must be the
// command want, and returns its data. An ERROR command gives ErrPeerError;
// anything else is rejected.
func expectCommand(fr *frameReader, w io.Writer, want string, limit int64) ([]byte, error) {
	flags, body, err := fr.readFrame(limit)
	if err != nil {
		return nil, rejectPeer(w, err)
	}
	if flags&flagCommand == 0 || flags&flagMore != 0 {
		return nil, rejectPeer(w, fmt.Errorf("%w: message frame before %s", ErrProtocol, want))
	}
	name, data, err := parseCommand(body)
	if err != nil {
		if reason, ok := garbledError(body); ok {
			return nil, fmt.Errorf("%w: %s", ErrPeerError, quoteShort(reason))
		}
		return nil, rejectPeer(w, err)
	}
	switch string(name) {
	case want:
		return data, nil
	case "ERROR":
		return nil, fmt.Errorf("%w: %s", ErrPeerError, quoteShort(parseErrorReason(data)))
	}
	return nil, rejectPeer(w, fmt.Errorf("%w: unexpected command %s before %s", ErrProtocol, quoteShort(string(name)), want))
}

// garbledError recognises the ERROR command of libzmq 4.3.4 (Debian 12's
// pyzmq) refusing a PLAIN HELLO: its body is "^RROR", a reason length and
// the ZAP status code, without a valid name length. It returns the reason.
func garbledError(body []byte) (string, bool) {
	if len(body) < 6 || string(body[1:5]) != "RROR" {
		return "", false
	}
	return parseErrorReason(body[5:]), true
}

// authError marks a failure of the PLAIN HELLO/WELCOME step with ErrAuth,
// unless it is an I/O error (a peer that left or timed out).
func authError(err error) error {
	if errors.Is(err, ErrProtocol) || errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrPeerError) {
		return fmt.Errorf("%w: %w", ErrAuth, err)
	}
	return err
}

// rejectPeer sends an ERROR command carrying err's text, unless err is an
// I/O error, and returns err.
func rejectPeer(w io.Writer, err error) error {
	if errors.Is(err, ErrProtocol) || errors.Is(err, ErrSocketType) ||
		errors.Is(err, ErrInvalidIdentity) || errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrAuth) {
		var b [300]byte
		w.Write(appendError(b[:0], err.Error())) //nolint:errcheck // best effort before closing
	}
	return err
}

// quoteShort quotes s for an error message, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// handshakeError marks deadline errors of a handshake with
// ErrHandshakeTimeout.
func handshakeError(err error, timeout time.Duration) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w after %v: %w", ErrHandshakeTimeout, timeout, err)
	}
	return err
}

// conn is one established ZMTP connection: a read loop in the goroutine
// that owns it and a write loop draining a sendQueue.
type conn struct {
	nc     net.Conn
	fr     frameReader
	info   peerInfo
	remote net.Addr
	pong   chan []byte   // capacity 1: a PONG for the writer
	done   chan struct{} // closed by shutdown
	once   sync.Once
	err    error    // why the connection ended; set before done is closed
	raw    *rawConn // set when the Router's poller serves the socket
}

func newConn(nc net.Conn, info peerInfo) *conn {
	return &conn{
		nc:     nc,
		info:   info,
		remote: nc.RemoteAddr(),
		pong:   make(chan []byte, 1),
		done:   make(chan struct{}),
	}
}

// startReader readies readLoop: the small handshake reader (anything it
// buffered is kept) under a larger one. A bufio.Reader reads large requests
// directly, so the extra layer costs a call per fill.
func (c *conn) startReader(br *bufio.Reader, maxFrame int64) {
	c.fr = frameReader{br: bufio.NewReaderSize(br, readBufferSize), max: maxFrame}
}

// shutdown closes the connection once, recording err as its cause.
// It is safe to call from any goroutine and never blocks.
func (c *conn) shutdown(err error) {
	c.once.Do(func() {
		c.err = err
		close(c.done)
		if c.raw != nil {
			c.raw.pl.kill(c.raw)
		} else {
			c.nc.Close()
		}
	})
}

// takePong returns a pending PONG, or nil.
func (c *conn) takePong() []byte {
	select {
	case p := <-c.pong:
		return p
	default:
		return nil
	}
}

// cause returns why the connection ended. Precondition: c.done is closed.
func (c *conn) cause() error { return c.err }

// onCommand handles a command received between messages: PING is answered
// with PONG carrying the ping's context, ERROR ends the connection, PONG and
// unknown commands are ignored.
func (c *conn) onCommand(name, data []byte) error {
	switch string(name) {
	case "PING":
		if len(data) < 2 {
			return fmt.Errorf("%w: PING without TTL", ErrProtocol)
		}
		ctx := data[2:]
		if len(ctx) > 16 {
			ctx = ctx[:16]
		}
		select {
		case c.pong <- appendCommand(nil, "PONG", ctx):
		default: // a PONG is already pending; one answer is enough
		}
	case "ERROR":
		return fmt.Errorf("%w: %s", ErrPeerError, quoteShort(parseErrorReason(data)))
	}
	return nil
}

// readLoop reads messages and hands them to deliver until an error, or until
// deliver returns false. It returns the read error.
func (c *conn) readLoop(deliver func([][]byte) bool) error {
	for {
		frames, err := c.fr.readMessage(c.onCommand)
		if err != nil {
			return err
		}
		if !deliver(frames) {
			return ErrClosed
		}
	}
}

// writeLoop writes batches taken from q, and PONGs, until the connection is
// shut down or a write fails; a write that stays blocked for wt fails with
// ErrWriteTimeout and shuts the connection down.
func (c *conn) writeLoop(q *sendQueue, wt time.Duration) {
	var batch [][]byte
	var bufs net.Buffers // WriteTo consumes its slice: keep batch intact
	for {
		select {
		case <-c.done: // leave queued messages for the next connection
			return
		default:
		}
		batch = q.take(batch[:0])
		n := len(batch)
		if n == 0 {
			select {
			case <-c.done:
				return
			case p := <-c.pong:
				batch = append(batch, p)
			case <-q.wake:
				continue
			}
		} else {
			select {
			case p := <-c.pong:
				batch = append(batch, p)
			default:
			}
		}
		c.nc.SetWriteDeadline(time.Now().Add(wt)) //nolint:errcheck // a failure shows in the write
		bufs = append(bufs[:0], batch...)
		_, err := bufs.WriteTo(c.nc)
		clear(bufs[:cap(bufs)])
		for _, m := range batch[:n] {
			putBuf(m) // written, or lost with the connection
		}
		clear(batch)
		if n > 0 {
			q.written()
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("%w after %v: %w", ErrWriteTimeout, wt, err)
			}
			c.shutdown(err)
			return
		}
	}
}
