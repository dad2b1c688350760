package worker

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestMainRefusesBadPorts checks that Main's --master-port and
// LOCUST_MASTER_NODE_PORT outside 1-65535 are refused with exit code 2
// instead of connecting to 5557 (for 0) or nowhere (issue 20 item 12).
func TestMainRefusesBadPorts(t *testing.T) {
	sc := Scenario{Classes: []UserClass{{Name: "U", Tasks: []Task{{Name: "t", Fn: func(context.Context, *User) error { return nil }}}}}}
	tests := []struct {
		name string
		args []string
		env  string
	}{
		{"flag 0", []string{"--master-port", "0"}, ""},
		{"flag -1", []string{"--master-port", "-1"}, ""},
		{"flag 65536", []string{"--master-port", "65536"}, ""},
		{"env 99999", nil, "99999"},
		{"env 0", nil, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			getenv := func(k string) string {
				if k == "LOCUST_MASTER_NODE_PORT" {
					return tt.env
				}
				return ""
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a worker that starts anyway ends at once
			if code := mainArgs(ctx, tt.args, getenv, &stderr, sc); code != 2 || !strings.Contains(stderr.String(), "must be 1-65535") {
				t.Errorf("mainArgs(%q, LOCUST_MASTER_NODE_PORT=%q) = %d, stderr %q; want 2 and \"must be 1-65535\"", tt.args, tt.env, code, stderr.String())
			}
		})
	}
}

// TestMainSharesConfigParsing: Main reads its options with package config
// (log levels as locustlog parses them, LOCUST_* variables, the master's
// options accepted) and refuses what config refuses with exit code 2.
func TestMainSharesConfigParsing(t *testing.T) {
	sc := Scenario{Classes: []UserClass{{Name: "U", Tasks: []Task{{Name: "t", Fn: func(context.Context, *User) error { return nil }}}}}}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int // -1: any code but 2
		wantErr  string
	}{
		{"level CRITICAL", []string{"-L", "CRITICAL"}, nil, -1, ""},
		{"level from LOCUST_LOGLEVEL", nil, map[string]string{"LOCUST_LOGLEVEL": "loud"}, 2, "Invalid --loglevel"},
		{"master options accepted", []string{"--users", "5", "--headless", "--node-id", "n1"}, nil, -1, ""},
		{"unknown option", []string{"--no-such-option"}, nil, 2, "unknown flag: --no-such-option"},
		{"bad timespan", []string{"--run-time", "soon"}, nil, 2, "run-time"},
		{"max-users", []string{"--max-users", "-1"}, nil, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a worker that starts ends at once
			code := mainArgs(ctx, tt.args, func(k string) string { return tt.env[k] }, &stderr, sc)
			if tt.wantCode == -1 && code == 2 || tt.wantCode != -1 && code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("mainArgs(%q, %v) = %d, stderr %q; want code %d (-1: not 2) and %q", tt.args, tt.env, code, stderr.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
}
