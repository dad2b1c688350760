package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHostWithoutSchemeRefused: a host without a scheme is refused before
// anything starts, in every mode, with what to do.
func TestHostWithoutSchemeRefused(t *testing.T) {
	classHost := writeScenario(t, "users:\n  - name: A\n    host: 127.0.0.1:8080\n    tasks:\n      - path: /\n")
	fileHost := writeScenario(t, "host: localhost:8080\nusers:\n  - name: A\n    tasks:\n      - path: /\n")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"flag standalone", []string{"-H", "127.0.0.1:8080", "--headless", "-t", "1s"}, 2, `-H/--host: master: host has no scheme: "127.0.0.1:8080": add http://`},
		{"flag master", []string{"--master", "-H", "localhost:8089", "--headless"}, 2, "add http://"},
		{"flag worker", []string{"--worker", "-H", "example.com"}, 2, "add http://"},
		{"flag no host name", []string{"-H", "http://", "--headless"}, 2, "names no host"},
		{"scenario host", []string{"-f", fileHost, "--headless", "-t", "1s"}, 1, fileHost + `: host: master: host has no scheme: "localhost:8080": add http://`},
		{"class host", []string{"-f", classHost, "--headless", "-t", "1s"}, 1, "user class A: host: master: host has no scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			if code != tt.code || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("run(%q) = %d, stderr %q; want %d and %q", tt.args, code, errb.String(), tt.code, tt.want)
			}
		})
	}
}
