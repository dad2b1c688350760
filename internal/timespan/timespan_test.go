package timespan

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	// Locust 2.12.1's parse_timespan gives the same value for every
	// accepted input below; the refused ones it either refuses too or
	// runs with another meaning (noted), see the package doc.
	tests := []struct {
		in      string
		want    time.Duration
		wantErr error
	}{
		{in: "20", want: 20 * time.Second},
		{in: "20s", want: 20 * time.Second},
		{in: "3m", want: 3 * time.Minute},
		{in: "2h", want: 2 * time.Hour},
		{in: "1h20m", want: 80 * time.Minute},
		{in: "1h10s", want: time.Hour + 10*time.Second},
		{in: "3h30m10s", want: 3*time.Hour + 30*time.Minute + 10*time.Second},
		{in: "0", want: 0},
		{in: "0s", want: 0},
		{in: "0h0m0s", want: 0},
		{in: "007", want: 7 * time.Second},
		{in: "90m", want: 90 * time.Minute},
		{in: "20\n", want: 20 * time.Second},
		{in: "30s ", want: 30 * time.Second},
		{in: "20 ", want: 20 * time.Second}, // Locust refuses
		{in: "876000h", want: Max},
		{in: "876000", want: 876000 * time.Second},

		{in: "", wantErr: ErrInvalid},
		{in: " ", wantErr: ErrInvalid},
		{in: " 30s", wantErr: ErrInvalid},
		{in: "abc", wantErr: ErrInvalid},
		{in: "h", wantErr: ErrInvalid},
		{in: "1x", wantErr: ErrInvalid},
		{in: "m5s", wantErr: ErrInvalid},
		{in: "-5", wantErr: ErrInvalid},
		{in: "+5", wantErr: ErrInvalid},
		{in: "1.5s", wantErr: ErrInvalid},
		{in: "1H", wantErr: ErrInvalid},
		{in: "٣٠s", wantErr: ErrInvalid},      // Locust: 30 s (Unicode digits)
		{in: "1h 20m", wantErr: ErrInvalid},   // Locust: 1 h
		{in: "10s junk", wantErr: ErrInvalid}, // Locust: 10 s
		{in: "1m1h", wantErr: ErrInvalid},     // Locust: 1 m
		{in: "5m1h", wantErr: ErrInvalid},     // Locust: 5 m
		{in: "5s3m", wantErr: ErrInvalid},     // Locust: 5 s
		{in: "1s1s", wantErr: ErrInvalid},     // Locust: 1 s
		{in: "1h1h", wantErr: ErrInvalid},     // Locust: 1 h
		{in: "3m20", wantErr: ErrInvalid},     // Locust: 3 m

		{in: "876000h1s", wantErr: ErrTooLong},
		{in: "876001h", wantErr: ErrTooLong},
		{in: "5124096h", wantErr: ErrTooLong},     // wrapped to 1526 s before
		{in: "99999999999h", wantErr: ErrTooLong}, // wrapped to a negative span before
		{in: "2562048h", wantErr: ErrTooLong},     // just past time.Duration's range
		{in: "153722868m", wantErr: ErrTooLong},
		{in: "9223372037s", wantErr: ErrTooLong},
		{in: "9223372037", wantErr: ErrTooLong},
		{in: "99999999999999999999", wantErr: ErrTooLong}, // above uint64
		{in: "876000h0m1s", wantErr: ErrTooLong},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseErrorNamesIgnoredText(t *testing.T) {
	_, err := Parse("1h 20m")
	want := `timespan: invalid time span: "1h 20m": unexpected " 20m" after "1h"; ` + Formats
	if err == nil || err.Error() != want {
		t.Errorf("Parse(%q) error = %v; want %s", "1h 20m", err, want)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"20", "1h20m", "3h30m10s", "x", "10s junk", "876000h", "9223372037s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err == nil && (d < 0 || d > Max || d%time.Second != 0) {
			t.Fatalf("Parse(%q) = %v", s, d)
		}
		if err != nil && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLong) {
			t.Fatalf("Parse(%q) error %v wraps neither sentinel", s, err)
		}
	})
}

func TestFromSeconds(t *testing.T) {
	tests := []struct {
		in   float64
		want time.Duration
	}{
		{0, 0},
		{0.3, 300 * time.Millisecond},
		{1.5, 1500 * time.Millisecond},
		{20, 20 * time.Second},
		{Max.Seconds(), Max},
		{Max.Seconds() + 1, Max},
		{9223372037, Max}, // past time.Duration's range
		{1e300, Max},
		{math.Inf(1), Max},
		{-1, 0},
		{math.Inf(-1), 0},
		{math.NaN(), 0},
		{math.Copysign(0, -1), 0},
	}
	for _, tt := range tests {
		if got := FromSeconds(tt.in); got != tt.want {
			t.Errorf("FromSeconds(%v) = %v; want %v", tt.in, got, tt.want)
		}
	}
}
