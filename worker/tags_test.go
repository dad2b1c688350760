package worker

import (
	"context"
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
)

// tagClasses are the classes of the tag tests: untagged, singly and
// multiply tagged tasks, a sequential class and a class all of whose tasks
// carry one tag.
func tagClasses() []UserClass {
	nop := func(context.Context, *User) error { return nil }
	return []UserClass{
		{Name: "Shop", Tasks: []Task{
			{Name: "browse", Fn: nop},
			{Name: "login", Fn: nop, Tags: []string{"login", "smoke"}},
			{Name: "buy", Fn: nop, Tags: []string{"checkout"}, Weight: 3},
			{Name: "health", Fn: nop, Tags: []string{"smoke"}},
		}},
		{Name: "Admin", Sequential: true, Tasks: []Task{
			{Name: "report", Fn: nop, Tags: []string{"admin"}, Weight: 2},
			{Name: "audit", Fn: nop, Tags: []string{"admin", "slow"}},
		}},
	}
}

var tagCases = []struct {
	name          string
	tags, exclude []string
	want          map[string][]string
	unmatched     []string
}{
	{"none", nil, nil, map[string][]string{"Shop": {"browse", "login", "buy", "health"}, "Admin": {"report", "audit"}}, nil},
	{"empty lists are none", []string{}, []string{}, map[string][]string{"Shop": {"browse", "login", "buy", "health"}, "Admin": {"report", "audit"}}, nil},
	{"one tag", []string{"smoke"}, nil, map[string][]string{"Shop": {"login", "health"}, "Admin": {}}, nil},
	{"any of two", []string{"checkout", "admin"}, nil, map[string][]string{"Shop": {"buy"}, "Admin": {"report", "audit"}}, nil},
	{"exclude", nil, []string{"smoke"}, map[string][]string{"Shop": {"browse", "buy"}, "Admin": {"report", "audit"}}, nil},
	{"exclude keeps untagged", nil, []string{"admin"}, map[string][]string{"Shop": {"browse", "login", "buy", "health"}, "Admin": {}}, nil},
	{"both", []string{"smoke", "admin"}, []string{"login", "slow"}, map[string][]string{"Shop": {"health"}, "Admin": {"report"}}, nil},
	{"include and exclude the same", []string{"smoke"}, []string{"smoke"}, map[string][]string{"Shop": {}, "Admin": {}}, nil},
	{"unknown tag", []string{"nosuch", "smoke"}, []string{"gone"}, map[string][]string{"Shop": {"login", "health"}, "Admin": {}}, []string{"gone", "nosuch"}},
}

func TestFilterTasks(t *testing.T) {
	for _, tc := range tagCases {
		t.Run(tc.name, func(t *testing.T) {
			got, unmatched := FilterTasks(tagClasses(), tc.tags, tc.exclude)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(unmatched, tc.unmatched) {
				t.Errorf("unmatched %v, want %v", unmatched, tc.unmatched)
			}
		})
	}
}

// locustFilterScript runs Locust 2.12.1's own filter_tasks_by_tags on the
// classes of tagClasses for each case (argv[1], JSON) and prints the kept
// task names per class, as JSON.
const locustFilterScript = `
import json, sys, logging
logging.disable(logging.CRITICAL)
from locust import User, task, tag
from locust.user.task import filter_tasks_by_tags
out = []
for case in json.loads(sys.argv[1]):
    class Shop(User):
        @task
        def browse(self): pass
        @tag("login", "smoke")
        @task
        def login(self): pass
        @tag("checkout")
        @task(3)
        def buy(self): pass
        @tag("smoke")
        @task
        def health(self): pass
    class Admin(User):
        @tag("admin")
        @task(2)
        def report(self): pass
        @tag("admin", "slow")
        @task
        def audit(self): pass
    # Environment._filter_tasks_by_tags: an empty list is no filter.
    tags = set(case["tags"]) if case["tags"] else None
    exclude = set(case["exclude"]) if case["exclude"] else None
    res = {}
    for cls in (Shop, Admin):
        filter_tasks_by_tags(cls, tags, exclude)
        names = []
        for t in cls.tasks:
            if t.__name__ not in names:  # @task(3) repeats the task 3 times
                names.append(t.__name__)
        res[cls.__name__] = names
    out.append(res)
print(json.dumps(out))
`

// TestFilterTasksAsLocust compares FilterTasks with Locust's own
// filter_tasks_by_tags on the same classes, case by case.
func TestFilterTasksAsLocust(t *testing.T) {
	py := testpeer.RequirePython(t, "locust")
	type pyCase struct {
		Tags    []string `json:"tags"`
		Exclude []string `json:"exclude"`
	}
	var cases []pyCase
	for _, tc := range tagCases {
		cases = append(cases, pyCase{tc.tags, tc.exclude})
	}
	in, _ := json.Marshal(cases)
	out, err := exec.Command(py, "-c", locustFilterScript, string(in)).Output()
	if err != nil {
		t.Fatalf("locust filter script: %v", err)
	}
	var want []map[string][]string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("locust filter script output %q: %v", strings.TrimSpace(string(out)), err)
	}
	for i, tc := range tagCases {
		got, _ := FilterTasks(tagClasses(), tc.tags, tc.exclude)
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%s: cicada keeps %v, Locust keeps %v", tc.name, got, want[i])
		}
	}
}

// TestTagsOf reads parsed_options' tag lists in the shapes masters send.
func TestTagsOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    map[string]any
		want    []string
		present bool
		wantErr bool
	}{
		{"absent", map[string]any{}, nil, false, false},
		{"nil map", nil, nil, false, false},
		{"null", map[string]any{"tags": nil}, nil, true, false},
		{"list", map[string]any{"tags": []any{"a", "b"}}, []string{"a", "b"}, true, false},
		{"string", map[string]any{"tags": "a, b"}, []string{"a", "b"}, true, false},
		{"not strings", map[string]any{"tags": []any{"a", int64(1)}}, nil, true, true},
		{"number", map[string]any{"tags": 1.5}, nil, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, present, err := tagsOf(tc.opts, "tags")
			if (err != nil) != tc.wantErr || present != tc.present || !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tagsOf = %v, %v, %v; want %v, %v, error %v", got, present, err, tc.want, tc.present, tc.wantErr)
			}
		})
	}
}

// TestPickHonoursTable: pick only returns selected tasks, in sequential
// order for a sequential class, and -1 for a class with none.
func TestPickHonoursTable(t *testing.T) {
	classes := tagClasses()
	for _, tc := range []struct {
		name  string
		class int
		f     tagFilter
		want  map[int]bool // task indexes pick may return
		order []int        // sequential: the exact order
	}{
		{"weighted subset", 0, tagFilter{tags: []string{"smoke"}}, map[int]bool{1: true, 3: true}, nil},
		{"weighted exclude", 0, tagFilter{exclude: []string{"smoke", "checkout"}}, map[int]bool{0: true}, nil},
		{"sequential subset", 1, tagFilter{exclude: []string{"slow"}}, map[int]bool{0: true}, []int{0, 0, 0, 0}},
		{"sequential all", 1, tagFilter{}, map[int]bool{0: true, 1: true}, []int{0, 0, 1, 0, 0, 1}},
		{"none left", 0, tagFilter{tags: []string{"admin"}}, map[int]bool{-1: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uc := classes[tc.class]
			cc, err := compileClass(&uc)
			if err != nil {
				t.Fatal(err)
			}
			cc.table.Store(buildTable(cc.def, tc.f))
			u := &User{class: &classRT{name: uc.Name, def: cc}}
			n := 200
			if tc.order != nil {
				n = len(tc.order)
			}
			for i := range n {
				got := u.pick()
				if !tc.want[got] {
					t.Fatalf("pick %d = %d, not among %v", i, got, tc.want)
				}
				if tc.order != nil && got != tc.order[i] {
					t.Fatalf("pick %d = %d, want %d (order %v)", i, got, tc.order[i], tc.order)
				}
			}
		})
	}
}

// TestSpawnSelectsTasksByTag runs a worker against a fake master: the
// tasks that run are the ones the tags in effect select, where the tags
// come from the spawn's parsed_options when it has the keys (null
// included), else from the worker's own Options; a class left with no
// task reports Locust's exception.
func TestSpawnSelectsTasksByTag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		own       []string       // Options.Tags
		parsed    map[string]any // the spawn's parsed_options
		want      []string       // tasks that must run
		wantNot   []string       // tasks that must not
		noTaskExc bool           // class B has no task: its exception
	}{
		{"master tags", nil, map[string]any{"tags": []any{"a"}}, []string{"a1"}, []string{"u1", "b1"}, true},
		{"master exclude", nil, map[string]any{"exclude_tags": []any{"a"}}, []string{"u1", "b1"}, []string{"a1"}, false},
		{"own tags, master silent", []string{"b"}, map[string]any{}, []string{"b1"}, []string{"u1", "a1"}, false},
		{"master null overrides own", []string{"b"}, map[string]any{"tags": nil, "exclude_tags": nil}, []string{"u1", "a1", "b1"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			ran := map[string]int{}
			fn := func(name string) TaskFunc {
				return func(context.Context, *User) error {
					mu.Lock()
					ran[name]++
					mu.Unlock()
					return nil
				}
			}
			count := func(name string) int {
				mu.Lock()
				defer mu.Unlock()
				return ran[name]
			}
			wait := func(*User) time.Duration { return time.Millisecond }
			sc := Scenario{Classes: []UserClass{
				{Name: "A", Wait: wait, Tasks: []Task{{Name: "u1", Fn: fn("u1")}, {Name: "a1", Fn: fn("a1"), Tags: []string{"a"}}}},
				{Name: "B", Wait: wait, Tasks: []Task{{Name: "b1", Fn: fn("b1"), Tags: []string{"b"}}}},
			}}
			m := newFakeMaster(t, 0)
			opts := fastOptions(t, m.port)
			opts.Tags = tc.own
			rw := startWorker(t, opts, sc)
			register(t, m, rw, 1, 0)
			s := spawnMsg(1, map[string]int64{"A": 2, "B": 2}, f64(0))
			s.ParsedOptions = tc.parsed
			m.send(rw.w.NodeID(), protocol.TypeSpawn, s)
			sc1 := m.await(protocol.TypeSpawningComplete, 1, 10*time.Second).msg.Data.(*protocol.SpawningComplete)
			if sc1.UserCount != 4 {
				t.Fatalf("spawning_complete %+v: a class without tasks still spawns its users, as in Locust", sc1)
			}
			for _, name := range tc.want {
				waitFor(t, 10*time.Second, "task "+name+" runs 20 times", func() bool { return count(name) >= 20 })
			}
			for _, name := range tc.wantNot {
				if n := count(name); n != 0 {
					t.Errorf("task %s ran %d times; the tags exclude it", name, n)
				}
			}
			if tc.noTaskExc {
				exc := m.await(protocol.TypeException, 1, 10*time.Second).msg.Data.(*protocol.Exception)
				if !strings.Contains(exc.Msg, "No tasks defined on B") {
					t.Errorf("exception %q; want Locust's \"No tasks defined on B\"", exc.Msg)
				}
			}
		})
	}
}
