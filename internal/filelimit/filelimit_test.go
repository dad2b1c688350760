package filelimit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		max     int64
		want    string
		wantErr error
		msg     string // part of the error text
	}{
		{"regular file", small, 10, "0123456789", nil, ""},
		{"symlink to a regular file", link, 100, "0123456789", nil, ""},
		{"one byte over", small, 9, "", ErrTooLarge, "has 10 bytes, the limit is 9 bytes"},
		{"dev zero", "/dev/zero", 1 << 20, "", ErrNotRegular, "is a character device"},
		{"directory", dir, 1 << 20, "", ErrNotRegular, "is a directory"},
		{"fifo without writer", fifo, 1 << 20, "", ErrNotRegular, "is a named pipe"},
		{"missing", filepath.Join(dir, "nope"), 1 << 20, "", os.ErrNotExist, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan struct{})
			var got []byte
			var err error
			go func() { defer close(done); got, err = Read(tt.path, tt.max) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Read(%s) did not return within 10 s", tt.path)
			}
			if tt.wantErr == nil {
				if err != nil || string(got) != tt.want {
					t.Fatalf("Read(%s, %d) = %q, %v; want %q, nil", tt.path, tt.max, got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Read(%s, %d) error = %v; want %v containing %q", tt.path, tt.max, err, tt.wantErr, tt.msg)
			}
		})
	}
}

func TestSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0 bytes"}, {1000, "1000 bytes"}, {1024, "1 KiB"}, {16 << 20, "16 MiB"}, {1<<20 + 1, "1048577 bytes"},
	}
	for _, tt := range tests {
		if got := Size(tt.in); got != tt.want {
			t.Errorf("Size(%d) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
