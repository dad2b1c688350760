package master

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cicada-load/cicada/internal/ratelimit"
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
	// active, further causes share ratelimit.OverflowKey.
	limiterKeys = 1024
)

// warnState limits and marks the loop's warnings. Precondition: loop.
type warnState struct {
	logLimit  *ratelimit.Limiter // log lines per cause (see logf)
	excLimit  *ratelimit.Limiter // worker exception messages per traceback
	cpuWarned bool               // some worker's CPU warning was logged
}

// logf writes a log line of the given cause unless logBurst lines of it
// were written in this interval; the first line after refused ones says
// how many. Precondition: loop.
func (m *Master) logf(level slog.Level, cause, format string, args ...any) {
	// A level that is off costs no clock read, no limiter lookup and no
	// budget of its cause.
	if !m.log.Enabled(context.Background(), level) {
		return
	}
	ok, suppressed := m.st.warn.logLimit.Allow(cause, timeNow())
	if !ok {
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
	now := timeNow()
	for _, x := range m.st.warn.logLimit.Flush(now) {
		cause := x.Key
		if cause == ratelimit.OverflowKey {
			cause = "other causes"
		}
		m.log.Warn(fmt.Sprintf("Suppressed %d similar log messages (%s)", x.Count, cause))
	}
	for _, x := range m.st.warn.excLimit.Flush(now) {
		m.log.Warn(fmt.Sprintf("Suppressed %d exception messages from workers of one cause (more than %d per %v)", x.Count, exceptionBurst, logInterval))
	}
}
