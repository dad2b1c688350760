package scenario

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/worker"
)

// benchInUser runs fn b.N times inside the task of one real user of a
// worker (driven by a minimal master), timing only the loop.
func benchInUser(b *testing.B, sc worker.Scenario, fn worker.TaskFunc) {
	b.Helper()
	done := make(chan struct{})
	uc := sc.Classes[0]
	uc.Tasks = []worker.Task{{Name: "bench", Fn: func(ctx context.Context, u *worker.User) error {
		defer close(done)
		if err := fn(ctx, u); err != nil { // warm up: connect, first allocations
			b.Error(err)
			return worker.ErrStopUser
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			_ = fn(ctx, u)
		}
		b.StopTimer()
		return worker.ErrStopUser
	}}}
	sc.Classes = []worker.UserClass{uc}
	r, err := zmtp.Listen("tcp://127.0.0.1:0", zmtp.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	w, err := worker.New(worker.Options{MasterPort: r.Addr().(*net.TCPAddr).Port, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, sc)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := testpeer.Go(b, "the worker", 10*time.Second, func(ctx context.Context) { _ = w.Run(ctx) })
	send := func(typ string, data any) {
		m, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: w.NodeID()})
		if err != nil {
			b.Fatal(err)
		}
		_ = r.Send(w.NodeID(), m)
	}
	for {
		_, frames, err := r.Recv(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if m, _ := protocol.Decode(frames[0]); m.Type == protocol.TypeClientReady {
			break
		}
	}
	send(protocol.TypeAck, &protocol.Ack{Index: 0})
	send(protocol.TypeSpawn, &protocol.Spawn{Timestamp: 1, UserClassesCount: map[string]int64{uc.Name: 1}, ParsedOptions: map[string]any{}})
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatal("the benchmark's user did not finish")
	}
	send(protocol.TypeQuit, nil)
	<-ran
}

// BenchmarkRequest compares one request as fixed data with the same
// request with two templated headers and three captures (JSON path,
// regular expression, header), each sent by a real user to a local nginx
// that answers a small JSON body. The difference is the cost of
// correlation per request.
func BenchmarkRequest(b *testing.B) {
	ng := testpeer.StartNginx(b, testpeer.NginxConfig{Locations: []testpeer.Location{
		{Path: "/login", Status: 200, Body: `{"token":"tok-123","user":{"id":42,"name":"ann"}}`},
	}})
	for _, tc := range []struct{ name, yaml string }{
		{"fixed", `
users:
  - name: U
    tasks:
      - {path: /login, headers: {Authorization: "Bearer tok-123", X-User: ann}}
`},
		{"3_captures_2_templated_headers", `
users:
  - name: U
    on_start:
      - {path: /login, capture: {token: {json: $.token}, name: {regex: '"name":"([^"]+)"'}, server: {header: Server}}}
    tasks:
      - path: /login
        headers: {Authorization: "Bearer ${token}", X-User: "${name}"}
        capture: {token: {json: $.token}, name: {regex: '"name":"([^"]+)"'}, server: {header: Server}}
`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f, err := Parse("bench.yaml", []byte("host: "+ng.URL()+"\n"+tc.yaml), nil)
			if err != nil {
				b.Fatal(err)
			}
			task := f.Scenario.Classes[0].Tasks[0].Fn
			onStart := f.Scenario.Classes[0].OnStart
			benchInUser(b, f.Scenario, func(ctx context.Context, u *worker.User) error {
				if onStart != nil {
					if err := onStart(ctx, u); err != nil {
						return err
					}
					onStart = nil
				}
				err := task(ctx, u)
				if st, ok := u.Data.(*userState); ok && (len(st.vals) != 3 || st.vals[0] != "tok-123" || st.vals[1] != "ann" || !strings.HasPrefix(st.vals[2], "nginx")) {
					b.Errorf("captured %q", st.vals)
				}
				return err
			})
		})
	}
}

// BenchmarkUniqueRows measures unique rows as a worker takes them through
// a cicada master (prefetching, adaptive batches): rows/s for one worker.
func BenchmarkUniqueRows(b *testing.B) {
	f := parseT(b, "users: [{name: U, tasks: [{path: /}]}]")
	c := startCluster(b, f, 1, 0, "")
	fd := &feed{name: "bench", mode: modeUnique, exhausted: exhaustRecycle, digest: "d", rows: make([][]string, 1<<22)}
	fc := registerFeedClient(c.workers[0])
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := fc.take(ctx, fd); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkTemplate: expanding a path and a JSON body template into the
// user's reused buffer (the CPU part of a templated request).
func BenchmarkTemplate(b *testing.B) {
	path, err := compileTemplate("/orders/${a}?user=${b}&page=2", testEnv, testSlots)
	if err != nil {
		b.Fatal(err)
	}
	vals := []string{"12345", `ann "the" user`}
	var buf []byte
	b.ReportAllocs()
	for range b.N {
		buf = path.appendTo(buf[:0], vals, appendRaw)
		buf = path.appendTo(buf, vals, appendJSONString)
	}
}

// BenchmarkJSONFind: a JSON path in a 1 kB response, scanned (find) and
// decoded (lookup), per lookup.
func BenchmarkJSONFind(b *testing.B) {
	body := []byte(`{"meta":{"page":1,"pages":9},"items":[` + strings.Repeat(`{"id":1,"name":"item","tags":["a","b"]},`, 20) +
		`{"id":2,"name":"last"}],"token":"tok-123"}`)
	p, err := parseJSONPath("$.items[-1].name")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("find", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if raw, ok := p.find(body); !ok || string(raw) != `"last"` {
				b.Fatal(string(raw))
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			d, _ := decodeJSON(body)
			if v, ok := p.lookup(d); !ok || v != "last" {
				b.Fatal(v)
			}
		}
	})
}
