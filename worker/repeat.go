package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cicada-load/cicada/protocol"
)

// Causes of rate-limited log lines and exception messages (the keys of
// Worker.repeats). A peer can make each of them repeat without bound.
const (
	causeUnknownClass   = "unknown user class"
	causeSpawnTimestamp = "unusable spawn timestamp"
	causeSpawnCeiling   = "spawn beyond the user ceiling"
	causeSpawnData      = "spawn without valid data"
	causeMalformed      = "malformed message"
	causeUnsupported    = "unsupported message type"
	causeUnknownType    = "unknown message type"
	causeHandlerPanic   = "custom message handler panic"
	causeSpawnOld       = "spawn older than the last"
	causeReconnect      = "reconnect message"
	causeSendFailed     = "send to the master failed"
	causeEncode         = "message encoding failed"
	causeStop           = "stop message"
	causeQuit           = "quit message"
	causeRate           = "arrival rate message"
)

// maxRepeatCauses bounds the causes the limiter tracks (the causes above,
// some per message type); beyond it, causes share one budget.
const maxRepeatCauses = 64

// logRepeated logs msg at level, at most once per Options.RepeatInterval
// for cause; the repeats in between are counted, and the count is added to
// the next line of that cause ("suppressed") or logged by
// flushRepeated. It reports whether the line was logged.
func (w *Worker) logRepeated(level slog.Level, cause, msg string, args ...any) bool {
	ok, n := w.repeats.Allow(cause, time.Now())
	if !ok {
		return false
	}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	w.log.Log(context.Background(), level, msg, args...)
	return true
}

// reportProblem logs a problem the master's messages cause as an ERROR
// and sends it to the master as an exception, at most once per
// Options.RepeatInterval for cause (repeats are counted and summarised by
// flushRepeated). It reports whether the problem went out.
func (w *Worker) reportProblem(cause, msg, traceback string, args ...any) bool {
	ok, n := w.repeats.Allow(cause, time.Now())
	if !ok {
		return false
	}
	if n > 0 {
		args = append(args, "suppressed", n)
		msg += fmt.Sprintf(" (%d similar problems were not reported)", n)
	}
	w.log.Error(msg, args...)
	w.send(protocol.TypeException, &protocol.Exception{Msg: msg, Traceback: traceback})
	return true
}

// flushRepeated logs a summary line for each cause whose repeats were
// suppressed and that has been quiet for an interval, and for task
// exceptions over Options.ExceptionRate. Called by housekeeping.
func (w *Worker) flushRepeated() {
	for _, s := range w.repeats.Flush(time.Now()) {
		w.log.Warn("similar log lines and exception messages were suppressed", "cause", s.Key, "count", s.Count)
	}
	if n := w.exc.takeDropped(); n > 0 {
		w.log.Warn("task exceptions over the rate limit were not sent to the master", "count", n, "limit_per_second", w.opts.ExceptionRate)
	}
}
