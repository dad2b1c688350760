package master

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"
)

// Limits on what a flood of worker messages can make the master write: a
// client_ready flood once wrote 277 MB of log in 10 s.
const (
	// logBurst is how many log lines of one cause the master writes per
	// logInterval; the rest are counted and reported in one line.
	logBurst    = 20
	logInterval = time.Second
	// exceptionBurst is how many exception messages of one cause (their
	// traceback) from workers enter the statistics per logInterval (a
	// cicada worker already caps what it sends per second).
	exceptionBurst = 20
	// limiterKeys bounds the causes a limiter tracks; once that many are
	// active, further causes share one.
	limiterKeys = 1024
)

// overflowKey is the cause shared by the causes beyond limiterKeys.
const overflowKey = "\x00other causes"

// limiter allows at most burst events per cause per interval and counts
// the rest. It has the shape of internal/ratelimit's per-key limiter
// (Allow(key) (ok, suppressed)), to be replaced by it. It is not safe for
// concurrent use: the master's loop owns its limiters.
type limiter struct {
	burst    int
	interval time.Duration
	maxKeys  int
	now      func() time.Time
	keys     map[string]*window
}

// window is one cause's current interval.
type window struct {
	start      time.Time
	n          int // events allowed in this interval
	suppressed int // events refused since the last allowed one
}

func newLimiter(burst int, interval time.Duration, now func() time.Time) *limiter {
	return &limiter{burst: burst, interval: interval, maxKeys: limiterKeys, now: now, keys: make(map[string]*window)}
}

// Allow reports whether one more event of cause key may pass now and, if
// so, how many events of that cause were refused since the last one that
// passed (for the caller to mention).
func (l *limiter) Allow(key string) (ok bool, suppressed int) {
	now := l.now()
	w := l.keys[key]
	if w == nil {
		if len(l.keys) >= l.maxKeys {
			l.expire(now, nil)
		}
		if len(l.keys) >= l.maxKeys {
			key = overflowKey
			w = l.keys[key]
		}
		if w == nil {
			w = &window{start: now}
			l.keys[key] = w
		}
	}
	if now.Sub(w.start) >= l.interval {
		w.start, w.n = now, 0
	}
	if w.n >= l.burst {
		w.suppressed++
		return false, 0
	}
	w.n++
	suppressed, w.suppressed = w.suppressed, 0
	return true, suppressed
}

// Flush forgets the causes whose interval has ended and calls report, in
// key order, for those of them with refused events not yet reported.
func (l *limiter) Flush(report func(key string, suppressed int)) {
	l.expire(l.now(), report)
}

func (l *limiter) expire(now time.Time, report func(string, int)) {
	var done []string
	for k, w := range l.keys {
		// Without report (Allow making room), a cause with refused
		// events not yet reported is kept for Flush.
		if now.Sub(w.start) >= l.interval && (report != nil || w.suppressed == 0) {
			done = append(done, k)
		}
	}
	sort.Strings(done)
	for _, k := range done {
		if w := l.keys[k]; w.suppressed > 0 && report != nil {
			report(k, w.suppressed)
		}
		delete(l.keys, k)
	}
}

// logf writes a log line of the given cause unless logBurst lines of it
// were written in this interval; the first line after refused ones says
// how many. Precondition: loop.
func (m *Master) logf(level slog.Level, cause, format string, args ...any) {
	ok, suppressed := m.st.logLimit.Allow(cause)
	if !ok || !m.log.Enabled(context.Background(), level) {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if suppressed > 0 {
		msg += fmt.Sprintf(" (%d similar messages suppressed)", suppressed)
	}
	m.log.Log(context.Background(), level, msg)
}

// flushLimits reports the log lines and exception messages refused in
// intervals that have ended. Precondition: loop.
func (m *Master) flushLimits() {
	m.st.logLimit.Flush(func(cause string, n int) {
		if cause == overflowKey {
			cause = "other causes"
		}
		m.log.Warn(fmt.Sprintf("Suppressed %d similar log messages (%s)", n, cause))
	})
	m.st.excLimit.Flush(func(_ string, n int) {
		m.log.Warn(fmt.Sprintf("Suppressed %d exception messages from workers of one cause (more than %d per %v)", n, exceptionBurst, logInterval))
	})
}
