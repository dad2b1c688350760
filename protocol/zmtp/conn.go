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
// identity: send our greeting, read and check the peer's, send READY, read
// and check the peer's READY. The caller sets the deadline. When the peer
// is rejected after the greetings were exchanged, an ERROR command with the
// reason is sent (best effort) before returning.
func handshake(br *bufio.Reader, w io.Writer, ours, identity string, maxFrame int64) (peerInfo, error) {
	var out [greetingSize + 400]byte
	if _, err := w.Write(appendGreeting(out[:0])); err != nil {
		return peerInfo{}, err
	}
	var gb [greetingSize]byte
	g, err := readGreeting(br, &gb)
	if err != nil {
		return peerInfo{}, err
	}
	info := peerInfo{major: g.major, minor: g.minor}
	if _, err := w.Write(appendReady(out[:0], ours, identity)); err != nil {
		return info, err
	}
	fr := frameReader{br: br, max: maxFrame}
	for {
		flags, body, err := fr.readFrame(maxFrame)
		if err != nil {
			return info, rejectPeer(w, err)
		}
		if flags&flagCommand == 0 || flags&flagMore != 0 {
			return info, rejectPeer(w, fmt.Errorf("%w: message frame before READY", ErrProtocol))
		}
		name, data, err := parseCommand(body)
		if err != nil {
			return info, rejectPeer(w, err)
		}
		switch string(name) {
		case "READY":
			r, err := parseReady(data)
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
			return info, nil
		case "ERROR":
			return info, fmt.Errorf("%w: %s", ErrPeerError, quoteShort(parseErrorReason(data)))
		default:
			return info, rejectPeer(w, fmt.Errorf("%w: unexpected command %s before READY", ErrProtocol, quoteShort(string(name))))
		}
	}
}

// rejectPeer sends an ERROR command carrying err's text, unless err is an
// I/O error, and returns err.
func rejectPeer(w io.Writer, err error) error {
	if errors.Is(err, ErrProtocol) || errors.Is(err, ErrSocketType) ||
		errors.Is(err, ErrInvalidIdentity) || errors.Is(err, ErrFrameTooLarge) {
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
