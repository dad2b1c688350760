//go:build linux

package zmtp

import (
	"fmt"
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
//
// Files, along gVisor's seams (rawfile / fdbased / stack): this one is the
// poller loop and its tables; poll_conn_linux.go is a connection's I/O
// (adopting the socket, reading and parsing in place, writing);
// poll_sys_linux.go holds the system-call wrappers.

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
