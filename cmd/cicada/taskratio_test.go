package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// ratioCases are the same user classes as a locustfile and a YAML
// scenario, with the arguments both are run with.
var ratioCases = []struct {
	name       string
	locustfile string
	yaml       string
	args       []string
}{
	{"weights", `
from locust import HttpUser, task, tag
class Shop(HttpUser):
    weight = 3
    @task
    def browse(self): pass
    @tag("login")
    @task(2)
    def login(self): pass
    @task(5)
    def buy(self): pass
class Admin(HttpUser):
    @task
    def report(self): pass
`, `
users:
  - name: Shop
    weight: 3
    tasks:
      - {name: browse, path: /b}
      - {name: login, path: /l, weight: 2, tags: [login]}
      - {name: buy, path: /buy, weight: 5}
  - name: Admin
    tasks:
      - {name: report, path: /r}
`, nil},
	{"users rounded half to even with a fixed count", `
from locust import HttpUser, task
class A(HttpUser):
    @task(3)
    def a1(self): pass
    @task
    def a2(self): pass
class B(HttpUser):
    @task
    def b1(self): pass
class Pinned(HttpUser):
    fixed_count = 2
    @task
    def p1(self): pass
    @task(2)
    def p2(self): pass
`, `
users:
  - name: A
    tasks:
      - {name: a1, path: /a1, weight: 3}
      - {name: a2, path: /a2}
  - name: B
    tasks:
      - {name: b1, path: /b1}
  - name: Pinned
    fixed_count: 2
    tasks:
      - {name: p1, path: /p1}
      - {name: p2, path: /p2, weight: 2}
`, []string{"-u", "5"}},
	{"no -u with a fixed count; tags and equal weights ignored", `
from locust import HttpUser, task
class A(HttpUser):
    weight = 2
    @task(7)
    def x(self): pass
    @task(3)
    def y(self): pass
class Pinned(HttpUser):
    fixed_count = 1
    @task
    def z(self): pass
`, `
users:
  - name: A
    weight: 2
    tasks:
      - {name: x, path: /x, weight: 7}
      - {name: y, path: /y, weight: 3}
  - name: Pinned
    fixed_count: 1
    tasks:
      - {name: z, path: /z}
`, []string{"-T", "nosuch", "--equal-weights"}},
	{"picked classes", `
from locust import HttpUser, task
class A(HttpUser):
    @task
    def x(self): pass
class B(HttpUser):
    weight = 5
    @task
    def y(self): pass
class C(HttpUser):
    @task
    def z(self): pass
`, `
users:
  - {name: A, tasks: [{name: x, path: /x}]}
  - {name: B, weight: 5, tasks: [{name: y, path: /y}]}
  - {name: C, tasks: [{name: z, path: /z}]}
`, []string{"-u", "7", "B"}}, // one: Locust orders picked classes as a set does (at random)
}

// TestShowTaskRatioAsLocust runs Locust 2.12.1's --show-task-ratio and
// --show-task-ratio-json on each locustfile and cicada's on the same
// classes in YAML: the outputs are byte for byte equal.
func TestShowTaskRatioAsLocust(t *testing.T) {
	locust := testpeer.RequirePeer(t, "locust")
	for _, tc := range ratioCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			py := filepath.Join(dir, "locustfile.py")
			if err := os.WriteFile(py, []byte(tc.locustfile), 0o644); err != nil {
				t.Fatal(err)
			}
			yml := writeScenario(t, tc.yaml)
			for _, flag := range []string{"--show-task-ratio", "--show-task-ratio-json"} {
				args := append([]string{"-f", py, flag}, tc.args...)
				cmd := exec.Command(locust, args...)
				cmd.Dir = dir
				want, err := cmd.Output()
				if err != nil {
					t.Fatalf("locust %v: %v", args, err)
				}
				var out, errb bytes.Buffer
				if code := run(append([]string{"-f", yml, flag}, tc.args...), &out, &errb); code != 0 {
					t.Fatalf("cicada %s: exit %d, stderr %q", flag, code, errb.String())
				}
				if out.String() != string(want) {
					t.Errorf("cicada %s %v:\n%s\nLocust:\n%s", flag, tc.args, out.String(), want)
				}
				// The same locustfile through cicada's locustfile reader.
				out.Reset()
				errb.Reset()
				if code := run(append([]string{"-f", py, flag}, tc.args...), &out, &errb); code != 0 || out.String() != string(want) {
					t.Errorf("cicada -f locustfile.py %s %v: exit %d, stderr %q:\n%s\nLocust:\n%s", flag, tc.args, code, errb.String(), out.String(), want)
				}
			}
		})
	}
}

// TestShowTaskRatioNeedsScenario: a master without -f has no tasks to show.
func TestShowTaskRatioNeedsScenario(t *testing.T) {
	var out, errb bytes.Buffer
	t.Chdir(t.TempDir())
	if code := run([]string{"--master", "--show-task-ratio"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "needs a scenario") {
		t.Errorf("code %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
