package scenario

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/worker"
)

// TestScenarioRunsOverHTTP runs a YAML scenario in a real worker, driven by
// a minimal master on zmtp.Router, against an HTTP server that records what
// it gets: on_start with a JSON body, headers with variables, a sequential
// multi-request task, checks and on_stop.
func TestScenarioRunsOverHTTP(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("X-Team")+" "+string(body))
		mu.Unlock()
		if r.URL.Path == "/cart/items" {
			w.WriteHeader(201)
		}
		io.WriteString(w, "ok price")
	}))
	defer srv.Close()
	env := map[string]string{"TARGET": srv.URL, "TEAM": "blue"}
	f, err := Parse("run.yaml", []byte(`
host: ${TARGET}
http:
  headers: {X-Team: "${TEAM}"}
users:
  - name: Buyer
    wait: constant(0.01)
    sequential: true
    on_start:
      - {method: POST, path: /login, json: {user: "${USER_NAME:-demo}", n: 1}}
    on_stop:
      - {method: POST, path: /logout}
    tasks:
      - {path: /cart, checks: {body_contains: price}}
      - name: checkout
        requests:
          - {method: POST, path: /cart/items, json: [1, 2], checks: {status: 201}}
          - {method: POST, path: /checkout, body: "pay=card", headers: {Content-Type: text/plain}}
`), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}

	r, err := zmtp.Listen("tcp://127.0.0.1:0", zmtp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := worker.New(worker.Options{MasterPort: r.Addr().(*net.TCPAddr).Port, HeartbeatInterval: 50 * time.Millisecond}, f.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()

	send := func(typ string, data any) {
		b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: w.NodeID()})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Send(w.NodeID(), b); err != nil {
			t.Fatal(err)
		}
	}
	recv := func(typ string) protocol.Message {
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		defer rcancel()
		for {
			_, frames, err := r.Recv(rctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v", typ, err)
			}
			m, err := protocol.Decode(frames[0])
			if err != nil {
				t.Fatal(err)
			}
			if m.Type == typ {
				return m
			}
		}
	}
	recv(protocol.TypeClientReady)
	send(protocol.TypeAck, &protocol.Ack{Index: 0})
	send(protocol.TypeSpawn, &protocol.Spawn{Timestamp: 1, UserClassesCount: map[string]int64{"Buyer": 1}, ParsedOptions: map[string]any{}})
	recv(protocol.TypeSpawningComplete)
	seenN := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	if err := testpeer.Poll(20*time.Second, 5*time.Millisecond, func() bool { return seenN() >= 7 }); err != nil {
		t.Fatalf("only %d requests reached the server", seenN())
	}
	send(protocol.TypeQuit, nil)
	var reqs, fails int64
	for {
		m := recv(protocol.TypeStats)
		rep := m.Data.(*protocol.StatsReport)
		reqs += rep.Total.NumRequests
		fails += rep.Total.NumFailures
		if rep.UserCount == 0 && reqs > 0 {
			break
		}
	}
	if err := <-res; err != nil {
		t.Fatalf("Run = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		`POST /login application/json blue {"n":1,"user":"demo"}`,
		"GET /cart  blue ",
		"POST /cart/items application/json blue [1,2]",
		"POST /checkout text/plain blue pay=card",
		"GET /cart  blue ",
	}
	for i, wnt := range want {
		if seen[i] != wnt {
			t.Fatalf("request %d = %q; want %q (all: %q)", i, seen[i], wnt, seen)
		}
	}
	if last := seen[len(seen)-1]; !strings.HasPrefix(last, "POST /logout") {
		t.Errorf("last request = %q; want on_stop's POST /logout", last)
	}
	if fails != 0 || reqs != int64(len(seen)) {
		t.Errorf("stats: %d requests, %d failures; the server saw %d", reqs, fails, len(seen))
	}
}
