package main

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// goWorker runs an in-process cicada worker with two Go classes (the shape
// of examples/goapi) against a master on port, counting its requests.
func goWorker(t *testing.T, port int) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	task := func(ctx context.Context, u *worker.User) error {
		n.Add(1)
		return u.DoDiscard(ctx, &httpc.Request{Path: "/"}, nil)
	}
	sc := worker.Scenario{Classes: []worker.UserClass{
		{Name: "WebUser", Weight: 3, Wait: worker.Constant(50 * time.Millisecond), Tasks: []worker.Task{{Name: "index", Fn: task}}},
		{Name: "ComputeUser", Wait: worker.Constant(50 * time.Millisecond), Tasks: []worker.Task{{Name: "compute", Fn: task}}},
	}}
	w, err := worker.New(worker.Options{MasterHost: "127.0.0.1", MasterPort: port, DisableDiagnosis: true, StatsInterval: 200 * time.Millisecond}, sc)
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the Go worker", 20*time.Second, func(ctx context.Context) { _ = w.Run(ctx) })
	return &n
}

// TestMasterWithoutScenarioUsesWorkerClasses: a cicada master started
// without -f dispatches the classes its cicada worker reports (it used to
// dispatch the built-in HelloWorldUser and end with 0 users and exit 1),
// and a master whose -f names other classes than its worker's says so in
// its own output, naming both sides (issue #19 item 8).
func TestMasterWithoutScenarioUsesWorkerClasses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two 2 s tests")
	}
	srv := startTarget(t)
	host := "http://" + srv.Addr().String()
	other := writeScenario(t, "users:\n  - name: ApiUser\n    tasks: [{path: /}]\n  - name: WebUser\n    tasks: [{path: /}]\n")
	tests := []struct {
		name      string
		extra     []string
		code      int
		want      []string
		requests  bool
		forbidden string
	}{
		{"no -f", nil, 0, []string{
			"No -f given: the master dispatches the user classes its cicada workers report",
			"User classes learned from worker", "ComputeUser, WebUser (weight 1 each)", "All users spawned:"}, true, "mismatch"},
		{"mismatch", []string{"-f", other}, -1, []string{
			"ERROR/locust.runners: User class mismatch: the master dispatches ApiUser, WebUser; worker ",
			"has ComputeUser, WebUser, so its users of ApiUser do not start"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port := freePort(t)
			n := goWorker(t, port)
			args := append([]string{"--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(port),
				"--expect-workers", "1", "-u", "4", "-r", "100", "-t", "2s", "-H", host}, tt.extra...)
			var out, errb syncBuffer
			code := run(args, &out, &errb)
			log := errb.String()
			if tt.code >= 0 && code != tt.code {
				t.Errorf("exit code %d; want %d; log:\n%s", code, tt.code, log)
			}
			for _, w := range tt.want {
				if !strings.Contains(log, w) {
					t.Errorf("log lacks %q:\n%s", w, log)
				}
			}
			if tt.forbidden != "" && strings.Contains(log, tt.forbidden) {
				t.Errorf("log has %q:\n%s", tt.forbidden, log)
			}
			if tt.requests && n.Load() == 0 {
				t.Errorf("the worker's users sent no request")
			}
		})
	}
}

// TestMasterListWithoutScenario: a master without -f lists no built-in
// class it would not dispatch, only the names given.
func TestMasterListWithoutScenario(t *testing.T) {
	t.Chdir(t.TempDir())
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--master", "--list"}, "Available Users:\n"},
		{[]string{"--master", "--list", "WebUser"}, "Available Users:\n    WebUser\n"},
		{[]string{"--list"}, "Available Users:\n    HelloWorldUser\n"},
	}
	for _, tt := range tests {
		var out, errb syncBuffer
		if code := run(tt.args, &out, &errb); code != 0 || out.String() != tt.want {
			t.Errorf("run(%q) = %d, out %q; want 0 and %q (log %q)", tt.args, code, out.String(), tt.want, errb.String())
		}
	}
}
