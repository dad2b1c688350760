package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/filelimit"
)

// TestLoadRefusesUnboundedFiles checks that Load refuses what is not a
// regular file or is larger than MaxFileSize, at once and with a clear
// error (issue 20 item 11: -f /dev/zero grew to 3.7 GB in 4 s, a 100 MB
// file used 3.4 GB).
func TestLoadRefusesUnboundedFiles(t *testing.T) {
	dir := t.TempDir()
	sized := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		// A valid scenario, padded with a YAML comment to size bytes.
		head := "users:\n  - name: A\n    tasks: [{path: /}]\n#"
		if _, err := f.WriteString(head + strings.Repeat("x", int(size)-len(head)-1) + "\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	tests := []struct {
		name    string
		path    string
		wantErr error
	}{
		{"at the limit", sized("limit.yaml", MaxFileSize), nil},
		{"one byte over the limit", sized("over.yaml", MaxFileSize+1), filelimit.ErrTooLarge},
		{"dev zero", "/dev/zero", filelimit.ErrNotRegular},
		{"directory", dir, filelimit.ErrNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Load(tt.path)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Load(%s) error = %v; want %v", tt.path, err, tt.wantErr)
			}
			if err != nil && (!strings.HasPrefix(err.Error(), "scenario: ") || !strings.Contains(err.Error(), tt.path)) {
				t.Errorf("Load(%s) error = %q; want it to start with \"scenario: \" and name the file", tt.path, err)
			}
			if d := time.Since(start); err != nil && d > 5*time.Second {
				t.Errorf("Load(%s) took %v to refuse; want at once", tt.path, d)
			}
		})
	}
}
