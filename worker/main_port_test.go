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
