package web

import (
	"bytes"
	"sync"
)

// DefaultLogLines is how many lines a LogBuffer keeps by default, as
// Locust's /logs does (the last 500 lines of the master).
const DefaultLogLines = 500

// LogBuffer is an io.Writer that keeps the last lines written to it, for
// GET /logs: cmd tees the master's log output into it and returns Lines()
// as Logs.Master from its Runner adapter. It is safe for concurrent use.
type LogBuffer struct {
	mu struct {
		sync.Mutex
		lines   []string // ring
		next    int
		full    bool
		partial []byte // text after the last newline
	}
	max int
}

// NewLogBuffer returns a LogBuffer that keeps the last max lines (if max is
// not positive, DefaultLogLines).
func NewLogBuffer(max int) *LogBuffer {
	if max <= 0 {
		max = DefaultLogLines
	}
	b := &LogBuffer{max: max}
	b.mu.lines = make([]string, 0, min(max, 64))
	return b
}

// Write stores every complete line of p (without its newline); a trailing
// partial line is kept until its newline arrives. It never fails.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.mu.partial = append(b.mu.partial, p...)
			break
		}
		line := string(append(b.mu.partial, p[:i]...))
		b.mu.partial = b.mu.partial[:0]
		b.addLocked(line)
		p = p[i+1:]
	}
	return n, nil
}

// addLocked appends one line. Precondition: b.mu is held.
func (b *LogBuffer) addLocked(line string) {
	if len(b.mu.lines) < b.max {
		b.mu.lines = append(b.mu.lines, line)
		return
	}
	b.mu.lines[b.mu.next] = line
	b.mu.next = (b.mu.next + 1) % b.max
	b.mu.full = true
}

// Lines returns the kept lines, oldest first. The result is owned by the
// caller.
func (b *LogBuffer) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.mu.lines))
	if b.mu.full {
		out = append(out, b.mu.lines[b.mu.next:]...)
		return append(out, b.mu.lines[:b.mu.next]...)
	}
	return append(out, b.mu.lines...)
}
