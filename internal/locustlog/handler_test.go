package locustlog

import (
	"bytes"
	"log/slog"
	"regexp"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	var buf bytes.Buffer
	h := New(&buf, slog.LevelInfo)
	h.hostname = "myhost"
	log := slog.New(h).With("logger", "cicada.main")
	r := slog.NewRecord(time.Date(2026, 11, 30, 3, 57, 28, 538_900_000, time.Local), slog.LevelInfo, "Starting cicada", 0)
	r.AddAttrs(slog.String("mode", "master"), slog.Int("workers", 2))
	if err := log.Handler().Handle(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Warn("careful", "path", "a b")
	want := regexp.MustCompile(`^\[2026-11-30 03:57:28,538\] myhost/INFO/cicada.main: Starting cicada mode=master workers=2
\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] myhost/WARNING/cicada.main: careful path="a b"
$`)
	if !want.MatchString(buf.String()) {
		t.Errorf("output:\n%s", buf.String())
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "Warning": slog.LevelWarn, "ERROR": slog.LevelError, "CRITICAL": LevelCritical} {
		if got, err := ParseLevel(in); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseLevel("LOUD"); err == nil {
		t.Error("ParseLevel(LOUD) succeeded")
	}
}
