package ifcheck

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestParseMemAvailable(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"MemTotal:       24000000 kB\nMemFree:        1 kB\nMemAvailable:   22000000 kB\n", 22000000 << 10, true},
		{"MemAvailable: 0 kB", 0, true},
		{"MemTotal: 5 kB\n", 0, false},
		{"MemAvailable: 12 MB\n", 0, false},
		{"MemAvailable: -1 kB\n", 0, false},
		{"MemAvailable: 99999999999999999999 kB\n", 0, false},
		{"MemAvailable: 18014398509481984 kB\n", 0, false}, // 2^54 kB: bytes overflow
		{"MemAvailable:\n", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := parseMemAvailable([]byte(tt.in))
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("parseMemAvailable(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrUnsupported) {
			t.Errorf("parseMemAvailable(%q): %v does not wrap ErrUnsupported", tt.in, err)
		}
	}
}

func FuzzParseMemAvailable(f *testing.F) {
	f.Add([]byte("MemAvailable:   22000000 kB\n"))
	f.Add([]byte("MemAvailable: 1 kB"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseMemAvailable(b)
		if err != nil && (n != 0 || !errors.Is(err, ErrUnsupported)) {
			t.Fatalf("%q: %d, %v", b, n, err)
		}
		if err == nil && n%1024 != 0 {
			t.Fatalf("%q: %d bytes, not whole kB", b, n)
		}
	})
}

func TestCheckTable(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		records uint64
		rec     int
		avail   uint64
		refused bool
	}{
		{1 << 20, 120, 1 * gib, false},
		{1 << 28, 120, 23 * gib, true}, // stack.MaxConns: 30 GiB
		{1 << 28, 120, 31 * gib, false},
		{^uint64(0), 120, 1 << 62, true}, // the product overflows
		{0, 120, 0, false},
	}
	for _, tt := range tests {
		err := checkTable(tt.records, tt.rec, tt.avail, "--client-ips")
		if tt.refused != (err != nil) || (err != nil && (!errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "--client-ips"))) {
			t.Errorf("checkTable(%d, %d, %d) = %v; refused want %v", tt.records, tt.rec, tt.avail, err, tt.refused)
		}
	}
	if runtime.GOOS == "linux" {
		if _, err := memAvailable(); err != nil {
			t.Fatalf("memAvailable = %v", err)
		}
		if err := CheckTable(1<<60, 120, "x"); !errors.Is(err, ErrMemory) {
			t.Fatalf("CheckTable(2^60 records) = %v; want ErrMemory", err)
		}
	}
}
