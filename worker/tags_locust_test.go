package worker_test

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/scenario"
	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker"
)

// TestLocustMasterTags runs a real Locust 2.12.1 master with -T smoke and
// a cicada worker whose HelloWorldUser has a task tagged smoke and one
// untagged: the tags reach the worker in the spawn message's
// parsed_options, so the master's stats have the tagged task's requests
// and none of the other's.
func TestLocustMasterTags(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4 s Locust test")
	}
	t.Parallel()
	srv, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the target", 0, func(ctx context.Context) { _ = srv.Run(ctx) })
	dir := t.TempDir()
	port := worker.FreePort(t)
	out := filepath.Join(dir, "OUT")
	m := startLocust(t, dir, "--headless", "--expect-workers", "1", "-u", "2", "-r", "10", "-t", "4s", "-T", "smoke",
		"-H", "http://"+srv.Addr().String(), "--csv", out, "--master-bind-port", strconv.Itoa(port))
	f, err := scenario.Parse("tags.yaml", []byte(`
users:
  - name: HelloWorldUser
    wait: constant(0.05)
    tasks:
      - {path: /tagged, tags: [smoke]}
      - {path: /untagged}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Options{MasterPort: port, DisableDiagnosis: true}, f.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the cicada worker", 20*time.Second, func(ctx context.Context) { _ = w.Run(ctx) })
	if err := m.wait(t, 60*time.Second); err != nil {
		t.Fatalf("locust master exited with %v; log:\n%s", err, m.log())
	}
	data, err := os.Open(out + "_stats.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	rows, err := csv.NewReader(data).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range rows[1:] {
		counts[r[1]], _ = strconv.Atoi(r[2])
	}
	if counts["/tagged"] < 10 || counts["/untagged"] != 0 {
		t.Errorf("master counted %v; want /tagged (tag smoke) only, at least 10 times; log:\n%s", counts, m.log())
	}
}
