package locustfile

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/scenario"
)

const shop = `"""A shop."""
from locust import HttpUser, FastHttpUser, SequentialTaskSet, task, tag, between, constant_pacing
import os

API = "/api/v1"
HEADERS = {"X-Client": "cicada"}
ITEMS = 3


class Buyer(HttpUser):
    host = "http://127.0.0.1:8080"
    weight = 3
    wait_time = between(0.5, 2)

    def on_start(self):
        resp = self.client.post(f"{API}/login", json={"user": "u$1", "n": ITEMS, "ok": True, "x": None})
        self.token = resp.json()["token"]

    @tag("browse", "smoke")
    @task(5)
    def browse(self):
        self.client.get(API + "/items", params={"page": 2, "q": "a b"}, headers=HEADERS, name="items")

    @task
    def order(self):
        with self.client.post("/orders", data={"qty": "1"}, headers={"Authorization": f"Bearer {self.token}"},
                              catch_response=True) as r:
            if r.status_code != 201:
                r.failure("not created")
            if "order-" not in r.text or r.elapsed.total_seconds() > 0.8:
                r.failure("bad")
            if r.json()["items"][0]["id"] != 42:
                r.failure("wrong id")
            order_id = r.json()["id"]
        self.client.request_name = "/orders/[id]"
        self.client.get(f"/orders/{order_id}?env={os.environ.get('STAGE', 'dev')}")
        self.client.request_name = None
        with self.client.get("/health", catch_response=True) as r2:
            if r2.status_code in (200, 204):
                r2.success()
            else:
                r2.failure("down")


class Checkout(SequentialTaskSet):
    @task
    def cart(self):
        self.client.get("/cart")

    @task(2)
    def pay(self):
        self.user.client.put("/pay", "raw body")


class Sequential(FastHttpUser):
    fixed_count = 1
    wait_time = constant_pacing(1)
    tasks = [Checkout]


if __name__ == "__main__":
    pass
`

const shopYAML = `users:
  - name: Buyer
    weight: 3
    host: http://127.0.0.1:8080
    wait: between(0.5, 2)
    on_start:
      - method: POST
        path: /api/v1/login
        json: {user: u$$1, n: 3, ok: true, x: null}
        headers:
          Content-Type: application/json
        capture:
          token: {json: $.token}
    tasks:
      - name: browse
        weight: 5
        tags: [browse, smoke]
        requests:
          - path: /api/v1/items?page=2&q=a+b
            name: items
            headers:
              X-Client: cicada
      - name: order
        requests:
          - method: POST
            path: /orders
            headers:
              Authorization: Bearer ${token}
              Content-Type: application/x-www-form-urlencoded
            body: qty=1
            capture:
              order_id: {json: $.id}
            checks:
              status: 201
              body_contains: [order-]
              max_response_time: 800
              json:
                $.items[0].id: 42
          - path: /orders/${order_id}?env=${STAGE:-dev}
            name: /orders/[id]
          - path: /health
            checks:
              status: [200, 204]
  - name: Sequential
    fixed_count: 1
    wait: constant_pacing(1)
    sequential: true
    tasks:
      - name: cart
        requests:
          - path: /cart
      - name: pay
        weight: 2
        requests:
          - method: PUT
            path: /pay
            body: raw body
`

func TestReadShop(t *testing.T) {
	m, err := Read("shop.py", []byte(shop))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Refused) != 0 {
		t.Fatalf("refused: %v", m.Refused)
	}
	got := string(m.YAML(nil))
	// The JSON key order of a Python dict is kept; headers of json= come
	// from the scenario, so compare without the Content-Type line order.
	want := strings.Replace(shopYAML, "        json: {user: u$$1, n: 3, ok: true, x: null}\n        headers:\n          Content-Type: application/json\n",
		"        json: {user: u$$1, n: 3, ok: true, x: null}\n", 1)
	got = got[strings.Index(got, "users:"):]
	if got != want {
		t.Errorf("YAML:\n%s\nwant:\n%s", got, want)
	}
}

func TestTranslateRefusesWhatScenarioCannotHold(t *testing.T) {
	m, err := Read("shop.py", []byte(shop))
	if err != nil {
		t.Fatal(err)
	}
	l, err := Translate([]*Module{m}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	// Sequential needs nothing beyond today's scenario; Buyer needs the
	// agreed capture/tags/json checks, which the scenario package reads
	// once issue #15's work is merged.
	if !l.File.Scenario.ExactClassNames {
		t.Error("a locustfile's scenario lets one class serve any name")
	}
	names := map[string]bool{}
	for _, c := range l.File.Scenario.Classes {
		names[c.Name] = true
	}
	if !names["Sequential"] {
		t.Fatalf("Sequential not loaded: %v", l.Refused)
	}
	for _, c := range l.File.Scenario.Classes {
		if c.Name == "Sequential" && (!c.Sequential || c.FixedCount != 1 || len(c.Tasks) != 2 || c.Tasks[1].Weight != 2) {
			t.Errorf("Sequential: %+v", c)
		}
	}
	if !names["Buyer"] {
		if len(l.Refused) != 1 || l.Refused[0].Class != "Buyer" || l.Refused[0].Construct != "translation" {
			t.Fatalf("refused: %v", l.Refused)
		}
		t.Logf("Buyer waits for the agreed syntax: %v", l.Refused[0])
	}
}

func TestReadFlattensNestedTaskSets(t *testing.T) {
	src := `from locust import HttpUser, TaskSet, task

def top(l):
    l.client.get("/top")

class Inner(TaskSet):
    @task(3)
    def a(self):
        self.client.get("/a")

    @task
    def b(self):
        self.interrupt()

class U(HttpUser):
    tasks = {Inner: 2, top: 1}
`
	m, err := Read("n.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, tk := range m.Users[0].Tasks {
		got[tk.Name] = tk.Weight
	}
	// Locust: Inner 2/3 (a 3/4, b 1/4), top 1/3: a 1/2, b 1/6, top 1/3.
	want := map[string]int{"a": 3, "b": 1, "top": 2}
	if len(got) != len(want) || got["a"] != 3 || got["b"] != 1 || got["top"] != 2 {
		t.Errorf("weights %v, want %v", got, want)
	}
	l, err := Translate([]*Module{m}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.File.Scenario.Classes[0].Tasks); n != 3 {
		t.Errorf("%d tasks", n)
	}
}

func TestReadShape(t *testing.T) {
	src := `from locust import HttpUser, LoadTestShape, task

class U(HttpUser):
    @task
    def t(self):
        self.client.get("/")

class Shape(LoadTestShape):
    stages = [
        {"duration": 10, "users": 5, "spawn_rate": 5},
        {"duration": 30.5, "users": 1, "spawn_rate": 0.5},
    ]

    def tick(self):
        run_time = self.get_run_time()
        for stage in self.stages:
            if run_time < stage["duration"]:
                return (stage["users"], stage["spawn_rate"])
        return None
`
	m, err := Read("s.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	l, err := Translate([]*Module{m}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := l.File.Stages
	if len(st) != 2 || st[0].Users != 5 || st[1].Duration.Seconds() != 30.5 || st[1].SpawnRate != 0.5 {
		t.Errorf("stages %+v", st)
	}
}

func TestReadRefusals(t *testing.T) {
	head := "from locust import HttpUser, task, between\n"
	tests := []struct {
		name, src string
		class     bool // a class refusal (the file still loads other classes)
		line      int
		construct string
	}{
		{"third-party import", "import requests\n", false, 2, "import requests"},
		{"event hook", "from locust import events\n@events.test_start.add_listener\ndef f(environment, **kw):\n    pass\n", false, 3, "event hook @events.test_start.add_listener"},
		{"module code", "print('x')\n", false, 2, "print(...)"},
		{"module call assignment", "X = open('f')\n", false, 2, "module-level assignment X = open(...)"},
		{"while loop in task", "class U(HttpUser):\n    @task\n    def t(self):\n        while True:\n            self.client.get('/')\n", true, 5, "while loop"},
		{"for over a call", "class U(HttpUser):\n    @task\n    def t(self):\n        for i in self.items():\n            self.client.get('/')\n", true, 5, "for loop"},
		{"recursive helper", "class U(HttpUser):\n    def h(self):\n        self.h()\n    @task\n    def t(self):\n        self.h()\n", true, 4, "call of self.h"},
		{"nested empty loops", "class U(HttpUser):\n    @task\n    def t(self):\n        for a in range(1000):\n            for b in range(1000):\n                for c in range(1000):\n                    pass\n", true, 7, "for loop"},
		{"self attribute set in a task", "class U(HttpUser):\n    @task\n    def t(self):\n        self.page = '2'\n", true, 5, "assignment self.page = '2'"},
		{"helper with arguments", "class U(HttpUser):\n    def h(self, x):\n        pass\n    @task\n    def t(self):\n        self.h(1)\n", true, 7, "call of self.h with arguments"},
		{"sleep", "import time\nclass U(HttpUser):\n    @task\n    def t(self):\n        time.sleep(1)\n", true, 6, "call of time.sleep"},
		{"random kept in a local", "import random\nclass U(HttpUser):\n    @task\n    def t(self):\n        n = random.randint(1, 9)\n        self.client.get(f'/i/{n}')\n", true, 6, "assignment n = random.randint(...)"},
		{"random over a non-constant", "import random\nclass U(HttpUser):\n    @task\n    def t(self):\n        self.client.get(f'/i/{random.randint(1, self.n)}')\n", true, 6, "URL f-string"},
		{"random.random", "import random\nclass U(HttpUser):\n    @task\n    def t(self):\n        self.client.get(f'/i/{random.random()}')\n", true, 6, "URL f-string"},
		{"lambda wait", "class U(HttpUser):\n    wait_time = lambda self: 1\n    @task\n    def t(self):\n        pass\n", true, 3, "wait_time = lambda"},
		{"files kwarg", "class U(HttpUser):\n    @task\n    def t(self):\n        self.client.post('/u', files={'f': 'x'})\n", true, 5, "files= in a request"},
		{"unknown check", "class U(HttpUser):\n    @task\n    def t(self):\n        with self.client.get('/', catch_response=True) as r:\n            if r.status_code == 500:\n                r.success()\n", true, 6, "if statement in a catch_response block"},
		{"init", "class U(HttpUser):\n    def __init__(self, env):\n        super().__init__(env)\n    @task\n    def t(self):\n        pass\n", true, 3, "def __init__"},
		{"unknown base", "from locust.contrib.fasthttp import FastHttpSession\nclass U(FastHttpSession):\n    pass\n", true, 3, "base class FastHttpSession"},
		{"syntax", "class U(HttpUser:\n    pass\n", false, 2, "syntax"},
		{"match", "match x:\n    case 1:\n        pass\n", false, 2, "syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := head + tt.src
			m, err := Read("t.py", []byte(src))
			if err == nil {
				t.Fatalf("read; want a refusal")
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%v is not an *Error", err)
			}
			if tt.class != (e.Class != "") || tt.class && (m == nil || len(m.Refused) != 1) {
				t.Errorf("class refusal %v, want %v: %v", e.Class != "", tt.class, err)
			}
			if e.Line != tt.line || e.Construct != tt.construct {
				t.Errorf("line %d construct %q, want %d %q: %v", e.Line, e.Construct, tt.line, tt.construct, err)
			}
			if !strings.HasPrefix(e.Error(), "t.py:") {
				t.Errorf("error does not start with the file: %v", e)
			}
			wantSentinel := ErrUnsupported
			if tt.construct == "syntax" {
				wantSentinel = ErrSyntax
			}
			if !errors.Is(err, wantSentinel) {
				t.Errorf("error does not wrap %v: %v", wantSentinel, err)
			}
		})
	}
}

func TestReadKeepsUnderstoodClasses(t *testing.T) {
	src := `from locust import HttpUser, task
import time

class Good(HttpUser):
    @task
    def t(self):
        self.client.get("/")

class Bad(HttpUser):
    @task
    def t(self):
        time.sleep(1)
`
	m, err := Read("k.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Users) != 1 || m.Users[0].Name != "Good" || len(m.Refused) != 1 || m.Refused[0].Class != "Bad" {
		t.Fatalf("users %v refused %v", m.Users, m.Refused)
	}
	if !strings.Contains(string(m.YAML(nil)), "# not translated: k.py:12:9: class Bad: call of time.sleep") {
		t.Errorf("the YAML does not list the refusal:\n%s", m.YAML(nil))
	}
}

func TestLoadDirectoryAndList(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := writeFile(dir+"/"+name, src); err != nil {
			t.Fatal(err)
		}
	}
	one := "from locust import HttpUser, task\nclass %s(HttpUser):\n    @task\n    def t(self):\n        self.client.get('/')\n"
	write("a.py", strings.Replace(one, "%s", "A", 1))
	write("b.py", strings.Replace(one, "%s", "B", 1))
	write("_helper.py", "import nothing_at_all\n")
	l, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.File.Scenario.Classes); n != 2 {
		t.Fatalf("%d classes from the directory", n)
	}
	l, err = Load(dir+"/a.py,"+dir+"/b.py", nil)
	if err != nil || len(l.File.Scenario.Classes) != 2 {
		t.Fatalf("list: %v", err)
	}
	write("c.py", strings.Replace(one, "%s", "A", 1))
	if _, err := Load(dir+"/a.py,"+dir+"/c.py", nil); err == nil || !strings.Contains(err.Error(), "duplicate user class") {
		t.Errorf("duplicate classes across files: %v", err)
	}
	if _, err := Load(dir+"/a.yaml", nil); err == nil {
		t.Errorf("a .yaml in a locustfile list was accepted")
	}
	var se *scenario.Error
	_ = se
}

func TestReadSelfReferentialAttributeIsBounded(t *testing.T) {
	src := "from locust import HttpUser, task\nclass U(HttpUser):\n    host = host + host\n    @task\n    def t(self):\n        pass\n"
	done := make(chan error, 1)
	go func() {
		_, err := Read("x.py", []byte(src))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "host") {
			t.Errorf("err %v, want a refusal of host", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("reading a self-referential class attribute does not end")
	}
}

func TestReadMergesRepeatedTasks(t *testing.T) {
	src := `from locust import HttpUser, task

def a(u):
    u.client.get("/a")

def b(u):
    u.client.get("/b")

class Base(HttpUser):
    abstract = True
    @task(2)
    def c(self):
        self.client.get("/c")

class U(Base):
    tasks = [a, a, b]
`
	m, err := Read("m.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, tk := range m.Users[0].Tasks {
		got[tk.Name] = tk.Weight
	}
	// Locust: c twice (inherited), a twice, b once.
	if len(got) != 3 || got["c"] != 2 || got["a"] != 2 || got["b"] != 1 {
		t.Errorf("weights %v, want c 2, a 2, b 1", got)
	}
	if len(m.Users) != 1 {
		t.Errorf("the abstract base was read as a user: %d users", len(m.Users))
	}
}

func TestReadUnrollsLoopsAndInlinesHelpers(t *testing.T) {
	src := `from locust import HttpUser, task

IDS = ["a", "b"]

class U(HttpUser):
    def login(self):
        self.client.post("/login")

    def on_start(self):
        self.login()

    @task
    def t(self):
        for i in range(1, 7, 2):
            self.client.get(f"/item/{i}", name="/item")
        for x in IDS:
            self.client.get("/id/" + x)
`
	m, err := Read("u.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	u := m.Users[0]
	var paths []string
	for _, r := range u.Tasks[0].Requests {
		paths = append(paths, r.Path)
	}
	if got := strings.Join(paths, " "); got != "/item/1 /item/3 /item/5 /id/a /id/b" {
		t.Errorf("unrolled paths %q", got)
	}
	if len(u.OnStart) != 1 || u.OnStart[0].Path != "/login" || u.OnStart[0].Method != "POST" {
		t.Errorf("on_start %+v", u.OnStart)
	}
}

func TestReadLongChainsAreBounded(t *testing.T) {
	for _, src := range []string{
		"x = " + strings.Repeat("'a' + ", 100_000) + "'a'\n",
		"x = a" + strings.Repeat(".b", 100_000) + "\n",
	} {
		_, err := Read("c.py", []byte(src))
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "expression too long") {
			t.Errorf("err %v, want expression too long", err)
		}
	}
}

func TestRefusalsSayWhatToDo(t *testing.T) {
	head := "from locust import HttpUser, task\nimport time, re, random\nclass U(HttpUser):\n    @task\n    def t(self):\n"
	tests := []struct{ body, hint string }{
		{"        time.sleep(1)\n", "use wait_time"},
		{"        m = re.search('x', 'y')\n", "capture: {x: {regex:"},
		{"        print('x')\n", "logging from a task"},
		{"        n = random.choice([1, 2])\n", "call it inside the request's arguments"},
		{"        x = DATA.pop()\n", "feeds: with mode: unique"},
	}
	for _, tt := range tests {
		_, err := Read("h.py", []byte(head+tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.hint) {
			t.Errorf("%q: err %v, want the hint %q", tt.body, err, tt.hint)
		}
	}
}

func TestReadSelfAttributesSetInOnStart(t *testing.T) {
	src := `from locust import HttpUser, task

class U(HttpUser):
    def on_start(self):
        self.prefix = "/v2"
        self.prefix = self.prefix + "/shop"

    @task
    def t(self):
        self.client.get(self.prefix + "/items")
`
	m, err := Read("s.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Users[0].Tasks[0].Requests[0].Path; p != "/v2/shop/items" {
		t.Errorf("path %q", p)
	}
}

// TestReadRandomDraws: random.randint and random.choice over constants in
// a request's arguments become variables drawn before each request (each:
// request), one per call, which the scenario loads.
func TestReadRandomDraws(t *testing.T) {
	src := `from locust import HttpUser, task
import random
SIZES = ["S", "M", "L"]
class Shop(HttpUser):
    @task
    def item(self):
        self.client.get(f"/item/{random.randint(1, 500)}?size={random.choice(SIZES)}", name="/item")
        self.client.post("/cart", json={"qty": random.choice((1, 2, 3)), "note": "$5"})
`
	m, err := Read("r.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	u := m.Users[0]
	want := []Var{{Name: "random_1", Lo: 1, Hi: 500}, {Name: "random_2", Choice: []string{"S", "M", "L"}}, {Name: "random_3", Choice: []string{"1", "2", "3"}}}
	if !reflect.DeepEqual(u.Vars, want) {
		t.Fatalf("vars %+v; want %+v", u.Vars, want)
	}
	if p := u.Tasks[0].Requests[0].Path; p != "/item/${random_1}?size=${random_2}" {
		t.Errorf("path %q", p)
	}
	y := m.YAML(nil)
	for _, w := range []string{"random_1: {random_int: [1, 500], each: request}", "random_2: {random_choice: [S, M, L], each: request}"} {
		if !strings.Contains(string(y), w) {
			t.Errorf("YAML lacks %q:\n%s", w, y)
		}
	}
	if _, err := scenario.Parse("r.yaml", y, nil); err != nil {
		t.Fatalf("the scenario refuses the translation: %v\n%s", err, y)
	}
}
