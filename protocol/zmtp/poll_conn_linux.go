//go:build linux

// A connection served by the Router's Linux poller (poll_linux.go): taking
// the socket over, reading and parsing frames in place, and writing queued
// messages with EPOLLOUT for the rest.

package zmtp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// rawConn is one established connection served by the poller.
type rawConn struct {
	pl     *poller
	p      *peer
	key    uint64
	killed atomic.Bool // kill ran: deliver nothing more

	// Poller goroutine only.
	pend []byte // bytes of an incomplete message (pooled buffer)
	need int    // bytes missing from the frame pend ends in, when known
	dead bool   // finalized

	mu struct {
		sync.Mutex
		fd      int
		closed  bool
		inEpoll bool      // the poller added fd to its set
		out     []byte    // unwritten bytes of the batch being written (pooled)
		wantOut bool      // waiting for EPOLLOUT
		since   time.Time // when the write started to wait
	}
	batch [][]byte // flush scratch; under mu
}

// adopt takes c's socket out of Go's network poller: it duplicates the
// descriptor and closes the net.Conn. It fails for connections that are not
// sockets; the caller then serves c with goroutines.
func (pl *poller) adopt(c *conn) (*rawConn, error) {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return nil, errors.New("zmtp: not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = dupCloexec(s) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("zmtp: dup: %w", derr)
	}
	// The duplicate shares the open file description, and so O_NONBLOCK.
	c.nc.Close()
	raw := &rawConn{pl: pl}
	raw.mu.fd = fd
	pl.mu.Lock()
	raw.key = pl.mu.nextK
	pl.mu.nextK++
	pl.mu.Unlock()
	return raw, nil
}

// prepare readies raw for the peer p before p is registered: buffered
// holds bytes the handshake reader had already taken off the socket.
func (raw *rawConn) prepare(p *peer, buffered []byte) {
	raw.p = p
	if len(buffered) > 0 {
		raw.pend = append(getBuf(len(buffered)), buffered...)
	}
}

// read reads once from raw and delivers the complete messages. It reports
// whether a message was delivered.
func (pl *poller) read(raw *rawConn) bool {
	raw.mu.Lock()
	fd, closed := raw.mu.fd, raw.mu.closed
	raw.mu.Unlock()
	if closed {
		pl.finalize(raw)
		return false
	}
	// Only this goroutine closes fd, so it stays valid without the lock.
	delivered := false
	for budget := pollReadBudget; budget > 0 && !raw.dead; {
		// A partial message is completed in its own buffer, read into
		// directly; anything else lands in the shared buffer.
		target := pl.buf
		if len(raw.pend) > 0 {
			raw.growPend()
			target = raw.pend[len(raw.pend):cap(raw.pend)]
		}
		n, err := readRetry(fd, target)
		switch {
		case errors.Is(err, syscall.EAGAIN): // errors.Is tries == first
			return delivered
		case err != nil:
			raw.p.c.shutdown(&net.OpError{Op: "read", Net: "tcp", Addr: raw.p.c.remote, Err: os.NewSyscallError("read", err)})
			pl.finalize(raw)
			return delivered
		case n == 0:
			cause := io.EOF
			if len(raw.pend) > 0 {
				cause = io.ErrUnexpectedEOF
			}
			raw.p.c.shutdown(cause)
			pl.finalize(raw)
			return delivered
		}
		if len(raw.pend) > 0 {
			data := raw.pend[:len(raw.pend)+n]
			raw.pend = nil
			delivered = pl.consume(raw, data, true) || delivered
		} else {
			delivered = pl.consume(raw, pl.buf[:n], false) || delivered
		}
		if n < len(target) {
			break // drained for now
		}
		budget -= n
	}
	return delivered
}

// growPend makes room in raw.pend for the rest of the frame being read
// (raw.need bytes, when its header has arrived): at once up to
// maxBodyChunk, beyond that at most doubling, so that a peer announcing a
// large frame gets memory only as its bytes arrive. Poller goroutine only.
func (raw *rawConn) growPend() {
	want := max(raw.need, 4<<10)
	if want > maxBodyChunk {
		want = max(maxBodyChunk, min(want, len(raw.pend)))
	}
	if cap(raw.pend)-len(raw.pend) >= min(want, 4<<10) {
		return
	}
	grown := append(getBuf(len(raw.pend)+want), raw.pend...)
	putBuf(raw.pend)
	raw.pend = grown
}

// consume delivers the complete messages at the start of data and keeps
// the rest in raw.pend. own says data is raw's pooled buffer.
func (pl *poller) consume(raw *rawConn, data []byte, own bool) bool {
	used, delivered, donated, err := pl.parse(raw, data, own)
	if donated {
		return true // data now belongs to the receiver, and held one whole message
	}
	if err != nil {
		if own {
			putBuf(data)
		}
		raw.p.c.shutdown(err)
		pl.finalize(raw)
		return delivered
	}
	rest := data[used:]
	switch {
	case len(rest) == 0:
		if own {
			putBuf(data)
		}
	case own && used == 0:
		raw.pend = data
	case own:
		n := copy(data, rest)
		raw.pend = data[:n]
	default:
		raw.pend = append(getBuf(len(rest)), rest...)
	}
	return delivered
}

// parse delivers each complete message at the start of b, answers commands
// between messages, and returns the bytes used. It checks each frame header
// against the size limits before waiting for the body.
//
// When own is set and b holds exactly one message, the message's frames are
// given to the receiver as they are (Recv keeps them): donated is then true
// and b must not be reused.
func (pl *poller) parse(raw *rawConn, b []byte, own bool) (used int, delivered, donated bool, err error) {
	max := pl.r.opts.MaxFrameSize
	raw.need = 0
	for {
		frames := pl.frames[:0]
		pos := used
		var total int64
		complete := false
		for !complete {
			if pos >= len(b) {
				break
			}
			flags := b[pos]
			if flags&flagReserved != 0 {
				return used, delivered, false, fmt.Errorf("%w: reserved frame flags set (0x%02x)", ErrProtocol, flags)
			}
			var size uint64
			hdr := 2
			if flags&flagLong != 0 {
				hdr = 9
				if len(b)-pos < hdr {
					break
				}
				size = beUint64(b[pos+1:])
			} else {
				if len(b)-pos < hdr {
					break
				}
				size = uint64(b[pos+1])
			}
			if size > uint64(max-total) {
				return used, delivered, false, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, size, max-total)
			}
			if uint64(len(b)-pos-hdr) < size {
				raw.need = pos + hdr + int(size) - len(b)
				break
			}
			body := b[pos+hdr : pos+hdr+int(size) : pos+hdr+int(size)]
			pos += hdr + int(size)
			if flags&flagCommand != 0 {
				if len(frames) > 0 || flags&flagMore != 0 {
					return used, delivered, false, fmt.Errorf("%w: command frame inside a multi-part message", ErrProtocol)
				}
				name, data, err := parseCommand(body)
				if err != nil {
					return used, delivered, false, err
				}
				if err := raw.p.c.onCommand(name, data); err != nil {
					return used, delivered, false, err
				}
				if pong := raw.p.c.takePong(); pong != nil {
					raw.sendCommand(pong)
				}
				used = pos
				continue
			}
			if len(frames) >= MaxMessageFrames {
				return used, delivered, false, fmt.Errorf("%w: more than %d frames in a message", ErrProtocol, MaxMessageFrames)
			}
			total += int64(size)
			frames = append(frames, body)
			complete = flags&flagMore == 0
		}
		pl.frames = frames[:0]
		if !complete {
			clear(frames)
			return used, delivered, false, nil
		}
		if raw.killed.Load() {
			// Disconnected, or replaced by a newer connection with its
			// identity: what it sent after that is dropped.
			return used, delivered, false, nil
		}
		donate := own && used == 0 && pos == len(b)
		pl.r.deliver(raw.p, frames, donate)
		clear(frames)
		if donate {
			return pos, true, true, nil
		}
		delivered = true
		used = pos
	}
}

func beUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}

// sendCommand queues an encoded command (a PONG) and writes it; a full
// queue drops it, as one answer to a later PING is as good.
func (raw *rawConn) sendCommand(cmd []byte) {
	m := append(getBuf(len(cmd)), cmd...)
	if raw.p.q.push(m) != nil {
		putBuf(m)
		return
	}
	raw.flush()
}

// flush writes queued messages until the queue is empty or the socket's
// buffer is full; then it waits for EPOLLOUT. Any goroutine may call it.
func (raw *rawConn) flush() {
	var werr error
	raw.mu.Lock()
	for !raw.mu.closed {
		if len(raw.mu.out) == 0 {
			raw.batch = raw.p.q.take(raw.batch[:0])
			if len(raw.batch) == 0 {
				raw.setWantOutLocked(false)
				break
			}
			size := 0
			for _, m := range raw.batch {
				size += len(m)
			}
			out := getBuf(size)
			for _, m := range raw.batch {
				out = append(out, m...)
				putBuf(m)
			}
			clear(raw.batch)
			raw.mu.out = out
		}
		n, err := syscall.Write(raw.mu.fd, raw.mu.out)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			raw.setWantOutLocked(true)
			break
		}
		if err != nil {
			werr = &net.OpError{Op: "write", Net: "tcp", Addr: raw.p.c.remote, Err: os.NewSyscallError("write", err)}
			break
		}
		if n < len(raw.mu.out) {
			raw.mu.out = raw.mu.out[n:]
			raw.setWantOutLocked(true)
			raw.mu.since = time.Now() // progress: WriteTimeout counts from here, as per write on the goroutine path
			break
		}
		putBuf(raw.mu.out[:0:cap(raw.mu.out)])
		raw.mu.out = nil
		raw.p.q.written()
	}
	raw.mu.Unlock()
	if werr != nil {
		raw.p.c.shutdown(werr)
	}
}

// setWantOutLocked switches EPOLLOUT interest. Precondition: raw.mu held.
func (raw *rawConn) setWantOutLocked(want bool) {
	if raw.mu.wantOut == want {
		return
	}
	raw.mu.wantOut = want
	pl := raw.pl
	if want {
		raw.mu.since = time.Now()
		pl.outPending.Add(1)
	} else {
		pl.outPending.Add(-1)
	}
	if !raw.mu.inEpoll {
		return // the poller adds it with the right interest
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP}
	if want {
		ev.Events |= syscall.EPOLLOUT
	}
	setKey(&ev, raw.key)
	syscall.EpollCtl(pl.epfd, syscall.EPOLL_CTL_MOD, raw.mu.fd, &ev) //nolint:errcheck // fails only for a closing socket
	if want {
		pl.wake() // recompute the epoll_wait timeout for the write deadline
	}
}
