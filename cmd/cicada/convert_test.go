package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/scenario"
)

func TestConvert(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.py")
	mixed := filepath.Join(dir, "mixed.py")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(good, "from locust import HttpUser, task, between\n\nclass A(HttpUser):\n    wait_time = between(1, 2)\n\n"+
		"    @task(3)\n    def index(self):\n        self.client.get('/', name='home')\n")
	write(mixed, "from locust import HttpUser, task\nimport time\n\nclass A(HttpUser):\n    @task\n    def t(self):\n        self.client.get('/')\n\n"+
		"class B(HttpUser):\n    @task\n    def t(self):\n        time.sleep(1)\n")
	out := filepath.Join(dir, "out.yaml")
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderr     string
		outClasses int
	}{
		{"to stdout", []string{good}, 0, "    wait: between(1, 2)\n    tasks:\n      - name: index\n        requests:\n", "", 0},
		{"to a file", []string{good, "-o", out}, 0, "", "", 1},
		{"a class left out", []string{mixed}, 1, "# not translated: " + mixed + ":12:9: class B: call of time.sleep", "not translated: " + mixed + ":12:9: class B", 0},
		{"not python", []string{filepath.Join(dir, "x.yaml")}, 2, "", "is not a .py locustfile", 0},
		{"two arguments", []string{good, mixed}, 2, "", "give one locustfile", 0},
		{"syntax error", []string{writePy(t, "class (:\n")}, 1, "", "cicada convert: error: ", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o, e bytes.Buffer
			code := run(append([]string{"convert"}, tt.args...), &o, &e)
			if code != tt.code || !strings.Contains(o.String(), tt.stdout) || !strings.Contains(e.String(), tt.stderr) {
				t.Errorf("convert %v = %d\nstdout %s\nstderr %s\nwant %d, %q, %q", tt.args, code, o.String(), e.String(), tt.code, tt.stdout, tt.stderr)
			}
			if tt.outClasses > 0 {
				f, err := scenario.Load(out)
				if err != nil || len(f.Scenario.Classes) != tt.outClasses || f.Scenario.Classes[0].Tasks[0].Requests[0].HTTP.Name != "home" {
					t.Errorf("the written scenario: %v, %v", f, err)
				}
			}
		})
	}
}

func writePy(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bad.py")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
