package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/worker"
)

func TestLoadSeed(t *testing.T) {
	t.Setenv("TARGET", "")
	f, err := Load("../examples/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Scenario.Host != "http://127.0.0.1:8080" {
		t.Errorf("host = %q; want the default", f.Scenario.Host)
	}
	if len(f.Scenario.Classes) != 1 {
		t.Fatalf("classes = %d", len(f.Scenario.Classes))
	}
	c := f.Scenario.Classes[0]
	if c.Name != "HelloWorldUser" || len(c.Tasks) != 1 || c.Tasks[0].Name != "/" {
		t.Fatalf("class = %+v", c)
	}
	if got := c.Wait(&worker.User{}); got != 900*time.Second {
		t.Fatalf("wait = %v; want 900s", got)
	}
	if _, err := worker.New(worker.Options{}, f.Scenario); err != nil {
		t.Fatalf("worker.New(seed) = %v", err)
	}
}

func TestLoadShop(t *testing.T) {
	t.Setenv("TARGET", "http://shop.test:9000")
	f, err := Load("../examples/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Scenario.Host != "http://shop.test:9000" {
		t.Errorf("host = %q", f.Scenario.Host)
	}
	want := []struct {
		name       string
		weight     int
		fixed      int
		tasks      int
		sequential bool
	}{{"Browser", 3, 0, 3, false}, {"Buyer", 1, 0, 2, true}, {"Admin", 0, 1, 1, false}}
	if len(f.Scenario.Classes) != len(want) {
		t.Fatalf("classes = %d", len(f.Scenario.Classes))
	}
	for i, w := range want {
		c := f.Scenario.Classes[i]
		if c.Name != w.name || c.Weight != w.weight || c.FixedCount != w.fixed || len(c.Tasks) != w.tasks || c.Sequential != w.sequential {
			t.Errorf("class %d = %s w=%d fixed=%d tasks=%d seq=%v; want %+v", i, c.Name, c.Weight, c.FixedCount, len(c.Tasks), c.Sequential, w)
		}
	}
	if f.Scenario.Classes[0].OnStart == nil || f.Scenario.Classes[0].OnStop == nil {
		t.Error("Browser on_start/on_stop missing")
	}
	if got := f.Scenario.Classes[0].Tasks[1].Name; got != "/search?q=[term]" {
		t.Errorf("task name = %q", got)
	}
	if got := f.Scenario.Classes[1].Tasks[1].Name; got != "checkout" {
		t.Errorf("multi-request task name = %q", got)
	}
	if f.Scenario.HTTP.Timeout != 10*time.Second || f.Scenario.HTTP.ConnectTimeout != 3*time.Second {
		t.Errorf("http options = %+v", f.Scenario.HTTP)
	}
	if len(f.Stages) != 3 || f.Stages[1] != (master.Stage{Duration: 3 * time.Minute, Users: 200, SpawnRate: 20}) {
		t.Errorf("stages = %+v", f.Stages)
	}
	if _, err := worker.New(worker.Options{}, f.Scenario); err != nil {
		t.Fatalf("worker.New(shop) = %v", err)
	}
}

func TestWaitTimes(t *testing.T) {
	tests := []struct {
		in       string
		min, max time.Duration
	}{
		{"constant(900)", 900 * time.Second, 900 * time.Second},
		{"constant(0.5)", 500 * time.Millisecond, 500 * time.Millisecond},
		{" between( 1 , 3 ) ", time.Second, 3 * time.Second},
		{"constant_pacing(2)", 2 * time.Second, 2 * time.Second}, // first call
		{"constant_throughput(4)", 250 * time.Millisecond, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			f, err := Parse("w.yaml", []byte("users: [{name: U, wait: '"+tt.in+"', tasks: [{path: /}]}]"), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := f.Scenario.Classes[0].Wait(&worker.User{})
			if got < tt.min || got > tt.max {
				t.Fatalf("wait %s = %v; want in [%v, %v]", tt.in, got, tt.min, tt.max)
			}
		})
	}
}

func TestErrorsNameFileLineField(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // substring: file:line:col: field: message
	}{
		{"unknown top field", "hots: x\nusers: []\n", `bad.yaml:1:1: hots: unknown field "hots"`},
		{"unknown class field", "users:\n  - name: A\n    wieght: 2\n    tasks: [{path: /}]\n", `bad.yaml:3:5: users[0].wieght: unknown field "wieght"`},
		{"unknown request field", "users:\n  - name: A\n    tasks:\n      - path: /\n        methd: GET\n", `bad.yaml:5:9: users[0].tasks[0].methd: unknown field "methd"`},
		{"bad weight", "users:\n  - name: A\n    weight: many\n    tasks: [{path: /}]\n", `bad.yaml:3:13: users[0].weight: must be an integer`},
		{"negative fixed", "users:\n  - name: A\n    fixed_count: -1\n    tasks: [{path: /}]\n", `users[0].fixed_count: must be at least 0`},
		{"bad wait", "users:\n  - name: A\n    wait: sometimes\n    tasks: [{path: /}]\n", `bad.yaml:3:11: users[0].wait: "sometimes" is not one of`},
		{"no tasks", "users:\n  - name: A\n", `bad.yaml:2:5: users[0].tasks: missing`},
		{"no name", "users:\n  - tasks: [{path: /}]\n", `users[0].name: missing`},
		{"no path", "users:\n  - name: A\n    tasks:\n      - method: GET\n", `bad.yaml:4:9: users[0].tasks[0].path: missing`},
		{"no users", "host: x\n", `users: missing`},
		{"duplicate class", "users:\n  - {name: A, tasks: [{path: /}]}\n  - {name: A, tasks: [{path: /}]}\n", `users[1].name: duplicate user class "A"`},
		{"duplicate key", "users:\n  - name: A\n    name: B\n    tasks: [{path: /}]\n", `users[0].name: duplicate field`},
		{"bad method", "users:\n  - name: A\n    tasks: [{path: /, method: 'GE T'}]\n", `users[0].tasks[0].method: invalid HTTP method`},
		{"bad status", "users:\n  - name: A\n    tasks: [{path: /, checks: {status: [200, abc]}}]\n", `users[0].tasks[0].checks.status: invalid status code "abc"`},
		{"unknown check", "users:\n  - name: A\n    tasks: [{path: /, checks: {stauts: 200}}]\n", `users[0].tasks[0].checks.stauts: unknown field`},
		{"body and json", "users:\n  - name: A\n    tasks: [{path: /, body: x, json: {a: 1}}]\n", `body or json, not both`},
		{"unset env", "host: ${NOPE_NOT_SET}\nusers: [{name: A, tasks: [{path: /}]}]\n", `bad.yaml:1:7: host: environment variable NOPE_NOT_SET is not set`},
		{"stages not increasing", "users: [{name: A, tasks: [{path: /}]}]\nstages:\n  - {duration: 30s, users: 1}\n  - {duration: 30s, users: 2}\n", `bad.yaml:4:5: stages[1].duration: must be larger than the previous stage's (30s): durations are cumulative`},
		{"stage without users", "users: [{name: A, tasks: [{path: /}]}]\nstages:\n  - {duration: 30s}\n", `stages[0]: a stage needs duration and users`},
		// Durations past timespan.Max used to wrap around time.Duration.
		{"stage duration overflow", "users: [{name: A, tasks: [{path: /}]}]\nstages:\n  - {duration: 1e20, users: 1}\n", `bad.yaml:3:16: stages[0].duration: 1e20 is above the maximum of 876000h0m0s (100 years)`},
		{"stage go duration above maximum", "users: [{name: A, tasks: [{path: /}]}]\nstages:\n  - {duration: 876001h, users: 1}\n", `stages[0].duration: 876001h is above the maximum`},
		{"timeout overflow", "http: {timeout: 9223372037}\nusers: [{name: A, tasks: [{path: /}]}]\n", `http.timeout: 9223372037 is above the maximum`},
		{"max_response_time overflow", "users:\n  - name: A\n    tasks: [{path: /, checks: {max_response_time: 1e300}}]\n", `users[0].tasks[0].checks.max_response_time: 1e300 is above the maximum`},
		{"constant wait overflow", "users:\n  - name: A\n    wait: constant(1e300)\n    tasks: [{path: /}]\n", `users[0].wait: 1e+300 s in "constant(1e300)" is above the maximum`},
		{"between wait overflow", "users:\n  - name: A\n    wait: between(1, 1e20)\n    tasks: [{path: /}]\n", `users[0].wait: 1e+20 s in "between(1, 1e20)" is above the maximum`},
		{"yaml syntax", "users:\n  - name: A\n   tasks: x\n", `YAML syntax`},
		{"users not a list", "users: {name: A}\n", `bad.yaml:1:8: users: must be a list, not a mapping`},
		{"task both", "users:\n  - name: A\n    tasks:\n      - path: /\n        requests: [{path: /x}]\n", `users[0].tasks[0]: a task has either request fields`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(tt.yaml), nil)
			if err == nil {
				t.Fatalf("Parse(%q) = nil error; want %q", tt.yaml, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error = %q; want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "1", "EMPTY": "", "HOST": "h.example"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"${A}", "1"},
		{"x${A}y${A}", "x1y1"},
		{"${B:-dflt}", "dflt"},
		{"${EMPTY:-dflt}", "dflt"}, // like the shell's :-
		{"${EMPTY}", ""},
		{"http://${HOST}:${PORT:-80}/", "http://h.example:80/"},
		{"$$HOME", "$HOME"},
		{"cost $5", "cost $5"},
		{"$(rm -rf /)", "$(rm -rf /)"}, // no shell
		{"${A:-${B}}", ""},             // checked below: no nesting
	}
	for _, tt := range tests[:len(tests)-1] {
		got, err := expand(tt.in, lookup)
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"${", "${NOPE}", "${1A}", "${A B}"} {
		if _, err := expand(bad, lookup); err == nil {
			t.Errorf("expand(%q) = nil error", bad)
		}
	}
}

func TestEnvInNumbersAndJSON(t *testing.T) {
	env := map[string]string{"W": "7", "SKU": "A-1"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	f, err := Parse("e.yaml", []byte(`
users:
  - name: U
    weight: ${W}
    tasks:
      - {method: post, path: /x, json: {sku: "${SKU}", qty: 2, ok: true, none: null}}
`), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if f.Scenario.Classes[0].Weight != 7 {
		t.Fatalf("weight = %d; want 7", f.Scenario.Classes[0].Weight)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("users: [{name: A, wait: constant(1), tasks: [{path: /}]}]"))
	f.Add([]byte("host: ${X:-y}\nusers:\n  - name: A\n    tasks:\n      - requests: [{path: /a, json: {a: [1, 2]}}]\nstages: [{duration: 1, users: 2}]"))
	f.Add([]byte("users: [{name: A, tasks: [{path: /}]}]\nload: {max_in_flight: 3, stages: [{duration: 1s, rate: 2.5}, {duration: 2s, rate: 0}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data, nil)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if len(file.Scenario.Classes) == 0 {
			t.Fatal("no classes without an error")
		}
	})
}
