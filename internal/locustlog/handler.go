// Package locustlog formats log records the way Locust does, so scripts that
// grep Locust's logs work on cicada's:
//
//	[2026-11-30 03:57:28,538] myhost/INFO/cicada.master: Starting cicada 1.0
//
// Attributes are appended as key=value after the message. The logger name
// comes from the "logger" attribute (set it with Logger.With("logger", "x")).
package locustlog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// LevelCritical is Locust's CRITICAL level, above slog's ERROR.
const LevelCritical = slog.Level(12)

// Handler is a slog.Handler writing Locust-format lines. It is safe for
// concurrent use; lines are written whole.
type Handler struct {
	mu       *sync.Mutex
	w        io.Writer
	level    slog.Leveler
	hostname string
	logger   string
	attrs    string
	now      func() time.Time
}

// New returns a handler writing records at or above level to w.
func New(w io.Writer, level slog.Leveler) *Handler {
	host, _ := os.Hostname()
	return &Handler{mu: &sync.Mutex{}, w: w, level: level, hostname: host, logger: "cicada", now: time.Now}
}

// ParseLevel maps Locust's level names (DEBUG/INFO/WARNING/ERROR/CRITICAL).
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToUpper(s) {
	case "DEBUG":
		return slog.LevelDebug, nil
	case "INFO", "":
		return slog.LevelInfo, nil
	case "WARNING", "WARN":
		return slog.LevelWarn, nil
	case "ERROR":
		return slog.LevelError, nil
	case "CRITICAL":
		return LevelCritical, nil
	}
	return 0, fmt.Errorf("locustlog: invalid level %q", s)
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// Handle implements slog.Handler.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	t := r.Time
	if t.IsZero() {
		t = h.now()
	}
	var b strings.Builder
	b.WriteByte('[')
	b.WriteString(t.Format("2006-01-02 15:04:05"))
	fmt.Fprintf(&b, ",%03d] %s/%s/%s: %s", t.Nanosecond()/1e6, h.hostname, levelName(r.Level), h.logger, r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, "", a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// WithAttrs implements slog.Handler; the "logger" attribute names the logger.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range attrs {
		if a.Key == "logger" {
			n.logger = a.Value.String()
			continue
		}
		appendAttr(&b, "", a)
	}
	n.attrs = b.String()
	return &n
}

// WithGroup implements slog.Handler by prefixing later keys.
func (h *Handler) WithGroup(name string) slog.Handler {
	n := *h
	n.attrs = h.attrs
	if name != "" {
		n.logger = h.logger
	}
	return &n
}

func appendAttr(b *strings.Builder, prefix string, a slog.Attr) {
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			appendAttr(b, prefix+a.Key+".", g)
		}
		return
	}
	v := a.Value.Resolve().String()
	if strings.ContainsAny(v, " \t\"=") {
		v = fmt.Sprintf("%q", v)
	}
	fmt.Fprintf(b, " %s%s=%s", prefix, a.Key, v)
}

func levelName(l slog.Level) string {
	switch {
	case l >= LevelCritical:
		return "CRITICAL"
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARNING"
	case l >= slog.LevelInfo:
		return "INFO"
	}
	return "DEBUG"
}
