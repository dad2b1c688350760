//go:build linux

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

// The Router's Linux data path. After its handshake, a connection's socket
// leaves Go's network poller: the Router duplicates the descriptor, closes
// the net.Conn and serves the socket from one poller goroutine with its own
// epoll set. One goroutine then reads every peer, messages are parsed in
// place from one shared buffer, and sends are written by the sending
// goroutine itself. A master with thousands of workers thus pays one read
// system call per message and one wake-up per poll round, instead of
// per-connection reader and writer goroutines, their 32 KiB buffers and the
// scheduler hand-offs between them.
//
// Ownership: the poller goroutine is the only one that reads a socket,
// changes the poller's tables or closes a descriptor; writers hold
// rawConn.mu, under which the descriptor is closed, so a write never meets
// a reused descriptor number.

// pollReadSize is the shared read buffer. pollReadBudget is about the
// most read from one peer per poll round, so that one flooding peer cannot
// starve the others.
const (
	pollReadSize   = 64 << 10
	pollReadBudget = 256 << 10
)

// pollEvents is the most events one epoll_wait returns (a variable for
// tests).
var pollEvents = 1024

// pollQuietRounds is how many rounds in a row find nothing before a Router
// with a PollInterval stops polling and blocks until data arrives.
const pollQuietRounds = 100

// wakeKey is the epoll key of the poller's wake-up pipe.
const wakeKey = 0

// poller serves the sockets of a Router's established connections.
type poller struct {
	r     *Router
	epfd  int
	wakeR int // read end of the wake-up pipe (in the epoll set)
	wakeW int
	woken atomic.Bool // a wake-up byte is in the pipe or about to be

	mu struct {
		sync.Mutex
		adds   []*rawConn
		dead   []*rawConn
		nextK  uint64
		exited bool // the pipe is closed
	}
	outPending atomic.Int64 // connections waiting for EPOLLOUT (write timeouts)
	blocking   atomic.Bool  // in a blocking epoll_wait (tests)

	// Poller goroutine only.
	lastWriteCheck time.Time
	conns          map[uint64]*rawConn
	buf            []byte
	frames         [][]byte
	events         []syscall.EpollEvent
}

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

// newPoller creates the epoll set and its wake-up pipe.
func newPoller(r *Router) (*poller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("zmtp: epoll_create1: %w", err)
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		syscall.Close(epfd)
		return nil, fmt.Errorf("zmtp: pipe2: %w", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	setKey(&ev, wakeKey)
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p[0], &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, fmt.Errorf("zmtp: epoll_ctl: %w", err)
	}
	pl := &poller{
		r: r, epfd: epfd, wakeR: p[0], wakeW: p[1],
		conns:  make(map[uint64]*rawConn),
		buf:    make([]byte, pollReadSize),
		events: make([]syscall.EpollEvent, pollEvents),
	}
	pl.mu.nextK = wakeKey + 1
	return pl, nil
}

func setKey(ev *syscall.EpollEvent, k uint64) {
	ev.Fd = int32(uint32(k))
	ev.Pad = int32(uint32(k >> 32))
}

func eventKey(ev *syscall.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// wake makes a blocked epoll_wait return.
func (pl *poller) wake() {
	if pl.woken.CompareAndSwap(false, true) {
		pl.mu.Lock()
		if !pl.mu.exited {
			var b [1]byte
			syscall.Write(pl.wakeW, b[:]) //nolint:errcheck // a full pipe already wakes
		}
		pl.mu.Unlock()
	}
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
	if err := rc.Control(func(s uintptr) {
		var r1 uintptr
		var e syscall.Errno
		r1, _, e = syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if e != 0 {
			derr = e
			return
		}
		fd = int(r1)
	}); err != nil {
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

// add hands a prepared, registered connection to the poller.
func (pl *poller) add(raw *rawConn) {
	pl.mu.Lock()
	pl.mu.adds = append(pl.mu.adds, raw)
	pl.mu.Unlock()
	pl.wake()
}

// kill ends raw's connection (conn.shutdown calls it once): later writes
// fail, the peer sees the socket shut down, and the poller closes it.
func (pl *poller) kill(raw *rawConn) {
	raw.killed.Store(true)
	raw.mu.Lock()
	if !raw.mu.closed {
		raw.mu.closed = true
		syscall.Shutdown(raw.mu.fd, syscall.SHUT_RDWR) //nolint:errcheck // the close follows
	}
	raw.mu.Unlock()
	pl.mu.Lock()
	pl.mu.dead = append(pl.mu.dead, raw)
	pl.mu.Unlock()
	pl.wake()
}

// run is the poller goroutine. It ends when the Router closes and every
// connection is gone.
func (pl *poller) run() {
	defer func() {
		pl.mu.Lock()
		pl.mu.exited = true
		syscall.Close(pl.epfd)
		syscall.Close(pl.wakeR)
		syscall.Close(pl.wakeW)
		pl.mu.Unlock()
	}()
	interval := pl.r.opts.PollInterval
	h := pl.r.handler
	quiet := 0 // consecutive rounds that found nothing
	for {
		start := time.Now()
		pl.mu.Lock()
		adds, dead := pl.mu.adds, pl.mu.dead
		pl.mu.adds, pl.mu.dead = nil, nil
		pl.mu.Unlock()
		delivered := false
		for _, raw := range adds {
			delivered = pl.start(raw) || delivered
		}
		for _, raw := range dead {
			pl.finalize(raw)
		}
		closing := pl.r.isClosing()
		// Connection goroutines still in their handshake may yet add a
		// connection (or kill one): once they are gone (counted first),
		// whatever they queued is in the lists.
		if closing && len(pl.conns) == 0 && pl.r.g.running() == 1 {
			pl.mu.Lock()
			idle := len(pl.mu.adds) == 0 && len(pl.mu.dead) == 0
			pl.mu.Unlock()
			if idle {
				return
			}
		}
		timeout := -1
		switch {
		case delivered:
			timeout = 0
		case closing:
			timeout = 5
		case pl.outPending.Load() > 0:
			timeout = 100
		}
		// With an interval, poll: look once per interval without blocking,
		// and block in epoll_wait only after a quiet spell. A thread
		// blocked in a system call makes the runtime's monitor retake its
		// processor and then poll every 20 µs for a while, a cost paid on
		// every wake-up; waiting for the set in Go's own poller instead
		// costs a wasted wake-up of that poller for every message.
		polling := interval > 0 && quiet < pollQuietRounds
		if polling {
			timeout = 0
		}
		pl.blocking.Store(timeout != 0)
		n, err := syscall.EpollWait(pl.epfd, pl.events, timeout)
		pl.blocking.Store(false)
		if n > 0 {
			quiet = 0
		} else {
			quiet++
		}
		if err != nil && err != syscall.EINTR {
			pl.r.log.Error("zmtp: epoll_wait failed", "err", err)
			time.Sleep(10 * time.Millisecond) // not expected; do not spin
		}
		for i := 0; i < n; i++ {
			ev := &pl.events[i]
			k := eventKey(ev)
			if k == wakeKey {
				var b [64]byte
				syscall.Read(pl.wakeR, b[:]) //nolint:errcheck // drained; EAGAIN is fine
				pl.woken.Store(false)
				continue
			}
			raw := pl.conns[k]
			if raw == nil {
				continue // finalized earlier in this round
			}
			if ev.Events&(syscall.EPOLLOUT|syscall.EPOLLERR) != 0 {
				raw.flush()
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLHUP|syscall.EPOLLRDHUP|syscall.EPOLLERR) != 0 {
				delivered = pl.read(raw) || delivered
			}
		}
		if pl.outPending.Load() > 0 && time.Since(pl.lastWriteCheck) >= 100*time.Millisecond {
			pl.lastWriteCheck = time.Now()
			pl.checkWriteTimeouts() // a scan of every connection: ten times a second at most
		}
		if delivered && h != nil {
			h.FlushMessages()
		}
		// A full batch of events may leave more ready peers: read them
		// now rather than an interval later, or a busy Router would fall
		// behind for good once its peers outnumber a batch per interval.
		if interval > 0 && (delivered || polling) && n < len(pl.events) {
			if d := interval - time.Since(start); d > 0 {
				time.Sleep(d) // a batching interval: messages wait here, in the kernel
			}
		}
	}
}

// start adds raw to the epoll set and parses what the handshake left.
// It reports whether a message was delivered.
func (pl *poller) start(raw *rawConn) bool {
	raw.mu.Lock()
	if raw.mu.closed {
		raw.mu.Unlock()
		pl.finalize(raw)
		return false
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP}
	if raw.mu.wantOut {
		ev.Events |= syscall.EPOLLOUT
	}
	setKey(&ev, raw.key)
	err := syscall.EpollCtl(pl.epfd, syscall.EPOLL_CTL_ADD, raw.mu.fd, &ev)
	if err == nil {
		raw.mu.inEpoll = true
	}
	raw.mu.Unlock()
	pl.conns[raw.key] = raw
	if err != nil {
		raw.p.c.shutdown(fmt.Errorf("zmtp: epoll_ctl: %w", err))
		return false
	}
	if len(raw.pend) == 0 {
		return false
	}
	data := raw.pend
	raw.pend = nil
	return pl.consume(raw, data, true)
}

// finalize closes raw's descriptor, forgets it and reports the
// disconnection. Poller goroutine only; idempotent.
func (pl *poller) finalize(raw *rawConn) {
	if raw.dead {
		return
	}
	raw.dead = true
	delete(pl.conns, raw.key)
	raw.mu.Lock()
	raw.mu.closed = true
	if raw.mu.wantOut {
		raw.mu.wantOut = false
		pl.outPending.Add(-1)
	}
	if raw.mu.inEpoll {
		syscall.EpollCtl(pl.epfd, syscall.EPOLL_CTL_DEL, raw.mu.fd, nil) //nolint:errcheck // close removes it anyway
	}
	syscall.Close(raw.mu.fd)
	raw.mu.fd = -1
	if raw.mu.out != nil {
		putBuf(raw.mu.out)
		raw.mu.out = nil
	}
	raw.mu.Unlock()
	if raw.pend != nil {
		putBuf(raw.pend)
		raw.pend = nil
	}
	if raw.p != nil {
		raw.p.c.shutdown(ErrClosed) // no-op unless the poller itself ends it
		pl.r.unregister(raw.p)
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
		var n int
		var err error
		for {
			n, err = syscall.Read(fd, target)
			if err != syscall.EINTR {
				break
			}
		}
		switch {
		case err == syscall.EAGAIN:
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

// checkWriteTimeouts drops peers whose write has waited longer than
// Options.WriteTimeout. Poller goroutine only.
func (pl *poller) checkWriteTimeouts() {
	wt := pl.r.opts.WriteTimeout
	now := time.Now()
	for _, raw := range pl.conns {
		raw.mu.Lock()
		late := raw.mu.wantOut && !raw.mu.closed && now.Sub(raw.mu.since) >= wt
		raw.mu.Unlock()
		if late {
			raw.p.c.shutdown(fmt.Errorf("%w after %v: %w", ErrWriteTimeout, wt, os.ErrDeadlineExceeded))
		}
	}
}
