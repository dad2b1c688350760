package worker_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/scenario"
	"github.com/cicada-load/cicada/worker"
)

// TestCicadaMasterHeadless runs cicada's own master (in process, headless)
// with two cicada workers against nginx, with a two-class scenario whose
// weights and fixed_count come from the YAML file: the split follows them,
// nothing fails and the master's total equals nginx's access log.
func TestCicadaMasterHeadless(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4 s test")
	}
	t.Parallel()
	ng := worker.StartNginx(t)
	f, err := scenario.Parse("two.yaml", []byte(`
users:
  - {name: Reader, weight: 3, wait: constant(0.2), tasks: [{path: /read}]}
  - {name: Writer, weight: 1, wait: constant(0.2), tasks: [{method: POST, path: /write}]}
  - {name: Admin, fixed_count: 1, wait: constant(0.2), tasks: [{path: /admin}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var classes []master.UserClass
	for _, c := range f.Scenario.Classes {
		classes = append(classes, master.UserClass{Name: c.Name, Weight: c.Weight, FixedCount: c.FixedCount})
	}
	csv := filepath.Join(t.TempDir(), "OUT")
	m, err := master.New(master.Options{
		BindHost: "127.0.0.1", BindPort: -1, Headless: true, ExpectWorkers: 2,
		Users: 41, SpawnRate: 100, RunTime: 4 * time.Second, Host: ng.URL(),
		UserClasses: classes, CSVPrefix: csv,
	})
	if err != nil {
		t.Fatal(err)
	}
	port := m.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		code int
		err  error
	}
	res := make(chan result, 1)
	go func() { r, err := m.Run(ctx); res <- result{r.ExitCode(), err} }()

	var ws []*worker.Worker
	wres := make(chan error, 2)
	for range 2 {
		w, err := worker.New(worker.Options{MasterPort: port}, f.Scenario)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
		go func() { wres <- w.Run(ctx) }()
	}
	worker.PollUntil(t, 30*time.Second, "41 users on the workers", func() bool {
		var n int64
		for _, w := range ws {
			_, c := w.UserCount()
			n += c
		}
		return n == 41
	})
	byClass := map[string]int64{}
	for _, w := range ws {
		m, _ := w.UserCount()
		for k, v := range m {
			byClass[k] += v
		}
	}
	if byClass["Admin"] != 1 || byClass["Reader"] != 30 || byClass["Writer"] != 10 {
		t.Errorf("users per class = %v; want Admin 1, Reader 30, Writer 10", byClass)
	}
	r := <-res
	if r.err != nil || r.code != 0 {
		t.Fatalf("master Run = %d, %v", r.code, r.err)
	}
	for range 2 {
		select {
		case err := <-wres:
			if err != nil {
				t.Errorf("worker Run = %v; want nil after the master's quit", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("worker did not quit")
		}
	}
	reqs, fails := aggregated(t, csv+"_stats.csv")
	t.Logf("master: %d requests, %d failures; nginx: %d", reqs, fails, ng.Requests(t))
	if fails != 0 || reqs != ng.Requests(t) || reqs == 0 {
		t.Errorf("master counted %d requests (%d failures), nginx logged %d", reqs, fails, ng.Requests(t))
	}
}
