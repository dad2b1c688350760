package locustfile

import (
	"bufio"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// corpus is the outcome of every upstream Locust example
// (testdata/upstream, Locust's examples directory): it runs (line 0) or is
// refused at line with its first unsupported construct. doc/locustfile.md
// lists the same.
var corpus = []struct {
	file      string
	line      int
	construct string
}{
	{"add_command_line_argument.py", 4, "event hook @events.init_command_line_parser.add_listener"},
	{"basic.py", 0, ""},
	{"bottlenecked_server.py", 12, "import threading"},
	{"browse_docs_sequence_test.py", 8, "import pyquery"},
	{"browse_docs_test.py", 8, "import pyquery"},
	{"csrf_form_authentication.py", 13, "assignment match = re.search(...)"},
	{"custom_messages.py", 4, "import gevent"},
	{"custom_shape/double_wave.py", 35, "LoadTestShape DoubleWave: def tick"},
	{"custom_shape/stages.py", 0, ""},
	{"custom_shape/staging_user_classes.py", 45, "LoadTestShape StagesShapeWithCustomUsers: def tick"},
	{"custom_shape/step_load.py", 36, "LoadTestShape StepLoadShape: def tick"},
	{"custom_shape/wait_user_count.py", 27, "module-level assignment Step = namedtuple(...)"},
	{"custom_wait_function.py", 32, "wait_time = lambda"},
	{"custom_xmlrpc_client/server.py", 3, "import xmlrpc.server"},
	{"custom_xmlrpc_client/xmlrpc_locustfile.py", 4, "import xmlrpc.client"},
	{"debugging.py", 0, ""},
	{"debugging_advanced.py", 12, "raise"},
	{"dispatch_test_scripts/locustfile.py", 64, "LoadTestShape RampUpThenDownLoadShape: for loop"},
	{"dns_ex.py", 6, "import dns.message"},
	{"dynamic_user_credentials.py", 14, "if statement"},
	{"events.py", 28, "event hook @events.init.add_listener"},
	{"extend_web_ui.py", 13, "import flask"},
	{"fast_http_locust.py", 0, ""},
	{"grpc/grpc_user.py", 8, "import grpc"},
	{"grpc/hello_pb2.py", 7, "import google.protobuf"},
	{"grpc/hello_pb2_grpc.py", 4, "import grpc"},
	{"grpc/hello_server.py", 3, "import concurrent"},
	{"grpc/locustfile.py", 3, "import gevent"},
	{"locustfile.py", 18, "call of time.sleep"},
	{"manual_stats_reporting.py", 27, "decorator @contextmanager"},
	{"markov_taskset.py", 16, "base class MarkovTaskSet"},
	{"milvus/locustfile.py", 10, "import pymilvus"},
	{"mongodb/locustfile.py", 7, "base class MongoDBUser"},
	{"mqtt/locustfile.py", 8, "base class MqttUser"},
	{"mqtt/locustfile_custom_mqtt_client.py", 9, "base class MqttClient"},
	{"multiple_hosts.py", 10, "def __init__"},
	{"nested_inline_tasksets.py", 0, ""},
	{"open_closed_workload.py", 0, ""},
	{"openai_ex.py", 10, "base class OpenAIUser"},
	{"postgres/locustfile.py", 7, "module-level assignment logger = getLogger(...)"},
	{"qdrant/locustfile.py", 10, "import qdrant_client.models"},
	{"response_validations.py", 39, "event hook @events.init.add_listener"},
	{"rest.py", 16, "with self.rest"},
	{"sdk_session_patching/session_patch_locustfile.py", 4, "import archivist.archivist"},
	{"semaphore_wait.py", 3, "import gevent.lock"},
	{"socketio/echo_server.py", 2, "import gevent.monkey"},
	{"socketio/socketio_ex.py", 4, "import threading"},
	{"stop_on_threshold.py", 7, "import gevent"},
	{"terraform/aws/plan/basic.py", 0, ""},
	{"test_pytest.py", 0, "defines no HttpUser"},
	{"testdata_from_csv.py", 7, "import csv"},
	{"testdata_management.py", 33, "import requests"},
	{"use_as_lib.py", 7, "import gevent"},
	{"web_ui_auth/basic.py", 14, "import flask"},
	{"web_ui_auth/custom_form.py", 17, "import flask"},
	{"web_ui_cache_stats.py", 13, "import flask"},
	{"worker_index.py", 5, "import locust_plugins"},
	{"x-forwarded-for.py", 9, "def __init__"}}

func TestCorpus(t *testing.T) {
	var files []string
	err := filepath.WalkDir("testdata/upstream", func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".py") {
			rel, _ := filepath.Rel("testdata/upstream", p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(corpus) {
		t.Fatalf("testdata/upstream holds %d files, the table %d", len(files), len(corpus))
	}
	runs := 0
	for _, c := range corpus {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/upstream", c.file))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Read(c.file, data)
			if c.construct == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if _, err := Translate([]*Module{m}, nil); err != nil {
					t.Fatalf("translation: %v", err)
				}
				runs++
				return
			}
			if err == nil {
				t.Fatalf("read, want refused at line %d (%s)", c.line, c.construct)
			}
			var e *Error
			if !errors.As(err, &e) {
				if c.line == 0 && errors.Is(err, ErrNoUsers) && strings.Contains(err.Error(), c.construct) {
					return
				}
				t.Fatalf("error %v is not an *Error", err)
			}
			if e.Line != c.line || e.Construct != c.construct {
				t.Errorf("refused at line %d for %q, want line %d for %q (%v)", e.Line, e.Construct, c.line, c.construct, err)
			}
			if !strings.HasPrefix(err.Error(), c.file+":") && !strings.Contains(err.Error(), " "+c.file+":") {
				t.Errorf("the error does not name the file: %v", err)
			}
		})
	}
	t.Logf("%d of %d upstream examples run", runs, len(corpus))
}

// TestCorpusTaskRatio compares, for every example the reader accepts, the
// flattened task shares with the tree `locust --show-task-ratio` prints
// (Debian's Locust 2.12.1).
func TestCorpusTaskRatio(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python Locust once per accepted example")
	}
	bin := testpeer.RequirePeer(t, testpeer.LocustBin)
	for _, c := range corpus {
		if c.construct != "" {
			continue
		}
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata/upstream", c.file)
			l, err := Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "-f", path, "--show-task-ratio").CombinedOutput()
			if err != nil {
				t.Fatalf("locust: %v\n%s", err, out)
			}
			want := locustRatios(t, string(out))
			got := map[string]map[string]float64{}
			for _, uc := range l.File.Scenario.Classes {
				weight := func(w int) int { // the worker's rule: 0 means 1
					return max(w, 1)
				}
				total := 0
				for _, task := range uc.Tasks {
					total += weight(task.Weight)
				}
				got[uc.Name] = map[string]float64{}
				for _, task := range uc.Tasks {
					name := task.Name[strings.LastIndexByte(task.Name, '.')+1:]
					got[uc.Name][name] += float64(weight(task.Weight)) / float64(total)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("classes: got %v, Locust %v", got, want)
			}
			for class, w := range want {
				g := got[class]
				if len(g) != len(w) {
					t.Errorf("%s: tasks %v, Locust %v", class, g, w)
					continue
				}
				for name, share := range w {
					if math.Abs(g[name]-share) > 0.002 {
						t.Errorf("%s.%s: share %.4f, Locust %.4f", class, name, g[name], share)
					}
				}
			}
		})
	}
}

// locustRatios reads the "Task ratio per User class" tree of
// --show-task-ratio into each class's leaf shares (products of the
// percentages along the nesting).
func locustRatios(t *testing.T, out string) map[string]map[string]float64 {
	t.Helper()
	res := map[string]map[string]float64{}
	type node struct {
		level int
		name  string
		share float64
	}
	var stack []node
	var rows []node
	in := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "Task ratio per User class") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "---") {
			continue
		}
		if strings.TrimSpace(line) == "" {
			if len(rows) > 0 {
				break
			}
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("unexpected --show-task-ratio line %q", line)
		}
		pct, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatalf("unexpected --show-task-ratio line %q", line)
		}
		rows = append(rows, node{level: (indent - 1) / 2, name: f[1], share: pct / 100})
	}
	for i, n := range rows {
		for len(stack) > 0 && stack[len(stack)-1].level >= n.level {
			stack = stack[:len(stack)-1]
		}
		if n.level > 0 {
			n.share *= stack[len(stack)-1].share
		}
		stack = append(stack, n)
		leaf := i+1 == len(rows) || rows[i+1].level <= n.level
		if n.level == 0 {
			res[n.name] = map[string]float64{}
			continue
		}
		if leaf {
			cls := stack[0].name
			res[cls][n.name] += n.share / stack[0].share
		}
	}
	if len(res) == 0 {
		t.Fatalf("no task ratio in Locust's output:\n%s", out)
	}
	return res
}
