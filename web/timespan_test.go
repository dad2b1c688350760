package web

import (
	"errors"
	"testing"
	"time"
)

func TestParseTimespan(t *testing.T) {
	// Expected values from locust.util.timespan.parse_timespan (2.12.1).
	tests := []struct {
		in   string
		want time.Duration // -1: error
	}{
		{"20", 20 * time.Second},
		{"20s", 20 * time.Second},
		{"3m", 3 * time.Minute},
		{"2h", 2 * time.Hour},
		{"1h20m", 80 * time.Minute},
		{"3h30m10s", 3*time.Hour + 30*time.Minute + 10*time.Second},
		{"0", 0},
		{"0s", 0},
		{"3m20", 3 * time.Minute},
		{"10s junk", 10 * time.Second},
		{"1h 20m", time.Hour},
		{"20\n", 20 * time.Second},
		{"5s3m", 5 * time.Second},
		{"007", 7 * time.Second},
		{"1h1h", time.Hour},
		{"abc", -1},
		{"", -1},
		{"h", -1},
		{"1x", -1},
		{"m5s", -1},
		{"-5", -1},
		{"99999999999999999999", -1}, // Python: OverflowError later (HTTP 500)
	}
	for _, tt := range tests {
		got, err := ParseTimespan(tt.in)
		if tt.want < 0 {
			if !errors.Is(err, ErrBadTimespan) {
				t.Errorf("ParseTimespan(%q) = %v, %v; want ErrBadTimespan", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseTimespan(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseTimespan(f *testing.F) {
	for _, s := range []string{"20", "1h20m", "3h30m10s", "x", "10s junk"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTimespan(s)
		if err == nil && (d < 0 || d > maxTimespan || d%time.Second != 0) {
			t.Fatalf("ParseTimespan(%q) = %v", s, d)
		}
	})
}
