package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/web"
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

// TestPythonLocustfile: -f locustfile.py (and a bare cicada next to
// ./locustfile.py, as Locust) reads the locustfile; Python under another
// name, or a directory without one, is refused with what to do.
func TestPythonLocustfile(t *testing.T) {
	const py = "from locust import HttpUser, task\n\nclass A(HttpUser):\n    @task\n    def t(self):\n        self.client.get(\"/\")\n"
	dir := t.TempDir()
	for _, name := range []string{"locustfile.py", "locustfile"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(py), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "pkg"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	tests := []struct {
		name string
		args []string
		code int
		want string // in stdout when code is 0, in stderr otherwise
	}{
		{"py suffix", []string{"-f", "locustfile.py", "--list"}, 0, "Available Users:\n    A\n"},
		{"bare next to locustfile.py", []string{"--list"}, 0, "Available Users:\n    A\n"},
		{"python content", []string{"-f", "locustfile", "--headless", "-t", "1s"}, 1, "-f locustfile looks like Python: a Python locustfile must be named *.py"},
		{"empty directory", []string{"-f", "pkg", "--headless", "-t", "1s"}, 1, "directory pkg holds no locustfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			got := errb.String()
			if tt.code == 0 {
				got = out.String()
			}
			if code != tt.code || !strings.Contains(got, tt.want) {
				t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d and %q", tt.args, code, out.String(), errb.String(), tt.code, tt.want)
			}
		})
	}
}

func TestBuiltinDefaultScenarioNamed(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "built-in\ndefault scenario: user class HelloWorldUser") ||
		!strings.Contains(out.String(), "Python locustfiles (.py, a\ncomma-separated list, a directory)") {
		t.Errorf("--help: code %d, out %q; want the built-in default scenario and Python locustfiles named", code, out.String())
	}
	t.Chdir(t.TempDir())
	out.Reset()
	errb.Reset()
	if code := run([]string{"--list"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "No -f given: running "+defaultScenarioName) ||
		!strings.Contains(out.String(), "HelloWorldUser") {
		t.Errorf("--list without -f: code %d, out %q, log %q; want the built-in default named in the log", code, out.String(), errb.String())
	}
}

// TestSwarmFormRefusesHostWithoutScheme: the web form's host goes through
// the same check as -H (Master.Start): success false with "add http://",
// and the test's host stays as it was.
func TestSwarmFormRefusesHostWithoutScheme(t *testing.T) {
	m, err := master.New(master.Options{BindHost: "127.0.0.1", BindPort: -1, Host: "http://127.0.0.1:1",
		UserClasses: []master.UserClass{{Name: "A"}}, FinalReportTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the master", 30*time.Second, func(ctx context.Context) { _, _ = m.Run(ctx) })
	h := web.New(web.Options{}, &masterRunner{m: m, distributed: true}).Handler()
	for _, host := range []string{"127.0.0.1:8080", "localhost:8089", "example.com"} {
		form := url.Values{"user_count": {"1"}, "spawn_rate": {"1"}, "host": {host}}
		req := httptest.NewRequest(http.MethodPost, "/swarm", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var body struct {
			Success bool   `json:"success"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("POST /swarm host=%s: %v (%q)", host, err, rec.Body.String())
		}
		if body.Success || !strings.Contains(body.Message, "add http://") {
			t.Errorf("POST /swarm host=%s = %v, %q; want success false and 'add http://'", host, body.Success, body.Message)
		}
	}
	if got := m.Status().Host; got != "http://127.0.0.1:1" {
		t.Errorf("host after the refused forms = %q; want it unchanged", got)
	}
}
