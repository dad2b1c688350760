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
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/scenario"
	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker"
)

// TestLocustMasterWebSocketRows: a real Locust 2.12.1 master with one
// cicada worker running a websocket class: the master's CSV has the WS
// rows, with as many exchanges as messages reached the target (but for
// the users' last, interrupted ones).
func TestLocustMasterWebSocketRows(t *testing.T) {
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
	p := testpeer.StartLocust(t, testpeer.LocustConfig{
		Dir:        dir,
		Locustfile: "from locust import User, task\n\nclass Chat(User):\n    @task\n    def chat(self):\n        pass\n",
		Args: []string{"--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", strconv.Itoa(port),
			"--headless", "--expect-workers", "1", "-u", "4", "-r", "4", "-t", "4s", "-H", srv.URL(), "--csv", out},
	})
	f, err := scenario.Parse("chat.yaml", []byte(`users:
  - name: Chat
    kind: websocket
    url: /ws
    wait: constant(0.05)
    tasks:
      - steps: [{name: hello, send: hello, expect: {equals: hello}}]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Options{MasterPort: port,
		Transport: zmtp.Options{ReconnectMin: 50 * time.Millisecond, ReconnectMax: 500 * time.Millisecond}}, f.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the worker", 0, func(ctx context.Context) { _ = w.Run(ctx) })
	exited, err := p.Wait(60 * time.Second)
	if !exited || err != nil {
		t.Fatalf("locust master: exited %v, %v; log:\n%s", exited, err, p.Log())
	}
	fh, err := os.Open(out + "_stats.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for _, r := range rows[1:] {
		n, _ := strconv.Atoi(r[2])
		fl, _ := strconv.Atoi(r[3])
		got[r[0]+" "+r[1]] = [2]int{n, fl}
	}
	hello := got["WS hello"]
	sent := srv.SocketCounters().WSMessages
	if hello[0] < 20 || hello[1] != 0 || sent < int64(hello[0]) || sent > int64(hello[0])+4 {
		t.Fatalf("master's rows %v; the target received %d messages", got, sent)
	}
	if c := got["WS connect /ws"]; c[0] != 4 || c[1] != 0 {
		t.Fatalf("connect row %v", c)
	}
}
