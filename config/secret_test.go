package config

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClusterSecret(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("s", MaxClusterSecret)
	tests := []struct {
		name    string
		env     string // CICADA_CLUSTER_SECRET
		args    []string
		want    string
		wantErr string // part of the error; "" for none
	}{
		{"none", "", nil, "", ""},
		{"env", "from-env", nil, "from-env", ""},
		{"file with newline", "", []string{"--cluster-secret-file", file("nl", "from-file\n")}, "from-file", ""},
		{"file with CRLF", "", []string{"--cluster-secret-file", file("crlf", "from-file\r\n")}, "from-file", ""},
		{"file without newline", "", []string{"--cluster-secret-file", file("bare", "  spaces kept ")}, "  spaces kept ", ""},
		{"255-byte file", "", []string{"--cluster-secret-file", file("max", long+"\n")}, long, ""},
		{"256-byte file", "", []string{"--cluster-secret-file", file("256", long+"x\n")}, "", "longer than 255"},
		{"huge file", "", []string{"--cluster-secret-file", file("huge", strings.Repeat("\n", 5000))}, "", "more than 4096"},
		{"secret after 4096 line breaks", "", []string{"--cluster-secret-file", file("hidden", long+strings.Repeat("\n", 4000)+"tail")}, "", "more than 4096"},
		{"empty file", "", []string{"--cluster-secret-file", file("empty", "\n")}, "", "empty"},
		{"missing file", "", []string{"--cluster-secret-file", filepath.Join(dir, "nope")}, "", "no such file"},
		{"directory", "", []string{"--cluster-secret-file", dir}, "", "not a regular file"},
		{"256-byte env", long + "x", nil, "", "longer than 255"},
		{"env and file", "from-env", []string{"--cluster-secret-file", file("both", "from-file")}, "", "both set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == ClusterSecretEnv {
					return tt.env
				}
				return ""
			}
			cfg, err := NewParser(io.Discard, getenv, t.TempDir(), t.TempDir()).Parse(tt.args)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) error = %v; want ErrUsage containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.args, err)
			}
			if cfg.ClusterSecret != tt.want {
				t.Fatalf("Parse(%q).ClusterSecret = %q; want %q", tt.args, cfg.ClusterSecret, tt.want)
			}
		})
	}
}

// TestClusterSecretFileFromEnv: the file option has its environment
// variable, like every option.
func TestClusterSecretFileFromEnv(t *testing.T) {
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte("via-env-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "CICADA_CLUSTER_SECRET_FILE" {
			return p
		}
		return ""
	}
	cfg, err := NewParser(io.Discard, getenv, t.TempDir(), t.TempDir()).Parse(nil)
	if err != nil || cfg.ClusterSecret != "via-env-file" {
		t.Fatalf("Parse with CICADA_CLUSTER_SECRET_FILE = %q, %v; want via-env-file", cfg.ClusterSecret, err)
	}
}

// TestClusterSecretDevice: a device such as /dev/zero is refused without
// being read.
func TestClusterSecretDevice(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skip(err)
	}
	_, err := ReadClusterSecret(os.DevNull)
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("ReadClusterSecret(%s) = %v; want not a regular file", os.DevNull, err)
	}
}
