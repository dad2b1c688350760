package scenario

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker"
)

const socketYAML = `
host: http://127.0.0.1:8080
users:
  - name: Chat
    kind: websocket
    url: /ws
    headers: {X-Token: abc}
    wait: constant(1)
    on_start: [{path: /login}]
    tasks:
      - name: chat
        weight: 2
        steps:
          - {name: hello, send: "hello\r\n", expect: {contains: [hel, lo], timeout: 2s}}
          - {send_hex: "00 ff", expect: {equals_hex: 00ff}}
          - {send: x, binary: true, expect: {regex: "^x$"}}
          - {hold: 1.5}
          - {send: "!close 4000", expect: {close: 4000}}
          - {close: 4001}
  - name: Raw
    kind: tcp
    url: tls://127.0.0.1:7
    tasks:
      - steps:
          - {name: line, send: "ping\n", until: {delimiter: "\n"}, expect: {equals: "ping\n"}}
          - {send: abc, until: {length: 3}, expect: }
          - {send: z, until: {idle: 50ms}, expect: {contains: z}}
          - {close: true}
`

func TestSocketParse(t *testing.T) {
	f, err := Parse("s.yaml", []byte(socketYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	chat, raw := f.Scenario.Classes[0], f.Scenario.Classes[1]
	s := chat.Tasks[0].Socket
	if s == nil || s.Kind != worker.WebSocket || s.URL != "/ws" || len(s.Headers) != 1 || chat.Tasks[0].Weight != 2 || chat.Tasks[0].Fn == nil {
		t.Fatalf("chat task %+v", chat.Tasks[0])
	}
	if chat.OnStartRequests == nil {
		t.Fatal("on_start requests lost")
	}
	st := s.Steps
	checks := []struct {
		name string
		ok   bool
	}{
		{"hello", st[0].Name == "hello" && string(st[0].Send) == "hello\r\n" && len(st[0].Expect.Contains) == 2 && st[0].Expect.Timeout == 2*time.Second},
		{"hex", bytes.Equal(st[1].Send, []byte{0, 0xff}) && st[1].Binary && st[1].Expect.HasEquals && bytes.Equal(st[1].Expect.Equals, []byte{0, 0xff})},
		{"binary", st[2].Binary && st[2].Expect.Regex.String() == "^x$"},
		{"hold", st[3].Hold == 1500*time.Millisecond && st[3].Send == nil},
		{"expect close", st[4].Expect.CloseCode == 4000},
		{"close", st[5].Close == 4001},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("step %s: %+v", c.name, st)
		}
	}
	rs := raw.Tasks[0].Socket
	if rs.Kind != worker.TCP || rs.URL != "tls://127.0.0.1:7" || string(rs.Steps[0].Until.Delimiter) != "\n" ||
		rs.Steps[1].Until.Length != 3 || rs.Steps[1].Expect == nil || rs.Steps[2].Until.Idle != 50*time.Millisecond || rs.Steps[3].Close == 0 {
		t.Fatalf("tcp task %+v", rs)
	}
}

func TestSocketParseErrors(t *testing.T) {
	class := func(kind, body string) string {
		return "host: http://h\nusers:\n  - name: U\n    kind: " + kind + "\n" + body
	}
	tests := []struct {
		name, yaml, want string
	}{
		{"bad kind", class("grpc", "    tasks: [{path: /}]\n"), `users[0].kind: kind "grpc" is not one of http, websocket, tcp`},
		{"no url", class("websocket", "    tasks: [{steps: [{send: a}]}]\n"), "users[0].url: missing: a websocket class needs a url"},
		{"tcp url", class("tcp", "    url: http://h:1\n    tasks: [{steps: [{send: a}]}]\n"), `users[0].url: "http://h:1": a tcp url is tcp://host:port`},
		{"ws url", class("websocket", "    url: ftp://h\n    tasks: [{steps: [{send: a}]}]\n"), "a websocket url is ws://"},
		{"url on http", class("http", "    url: /ws\n    tasks: [{path: /}]\n"), "users[0].url: url belongs to kind: websocket"},
		{"path in ws task", class("websocket", "    url: /ws\n    tasks: [{path: /}]\n"), "users[0].tasks[0].path: a websocket class's tasks have steps"},
		{"no steps", class("websocket", "    url: /ws\n    tasks: [{name: x}]\n"), "users[0].tasks[0].steps: missing"},
		{"empty step", class("websocket", "    url: /ws\n    tasks: [{steps: [{name: x}]}]\n"), "users[0].tasks[0].steps[0]: a step needs send"},
		{"bad hex", class("tcp", "    url: tcp://h:1\n    tasks: [{steps: [{send_hex: zz}]}]\n"), "users[0].tasks[0].steps[0].send_hex: encoding/hex"},
		{"send twice", class("tcp", "    url: tcp://h:1\n    tasks: [{steps: [{send: a, send_hex: '00'}]}]\n"), "send or send_hex, not both"},
		{"until on ws", class("websocket", "    url: /ws\n    tasks: [{steps: [{send: a, until: {length: 1}}]}]\n"), "until is for tcp replies"},
		{"until without expect", class("tcp", "    url: tcp://h:1\n    tasks: [{steps: [{send: a, until: {length: 1}}]}]\n"), "until without expect"},
		{"delimiter and length", class("tcp", "    url: tcp://h:1\n    tasks: [{steps: [{send: a, expect: {}, until: {length: 1, delimiter: x}}]}]\n"), "delimiter or length, not both"},
		{"bad regex", class("websocket", "    url: /ws\n    tasks: [{steps: [{expect: {regex: '('}}]}]\n"), "expect.regex: bad regular expression"},
		{"bad close code", class("websocket", "    url: /ws\n    tasks: [{steps: [{close: 1005}]}]\n"), `steps[0].close: "1005" is not a close code`},
		{"tcp close code", class("tcp", "    url: tcp://h:1\n    tasks: [{steps: [{close: 1000}]}]\n"), "a tcp close is true or false"},
		{"expect close on tcp", class("tcp", "    url: tcp://h:1\n    tasks: [{steps: [{expect: {close: 1000}}]}]\n"), "expect.close is a websocket close code"},
		{"unknown step field", class("websocket", "    url: /ws\n    tasks: [{steps: [{sned: a}]}]\n"), `unknown field "sned"`},
		{"binary on tcp", class("tcp", "    url: tcp://h:1\n    tasks: [{steps: [{send: a, binary: true}]}]\n"), "binary is for websocket"},
		{"tcp headers", class("tcp", "    url: tcp://h:1\n    headers: {A: b}\n    tasks: [{steps: [{send: a}]}]\n"), "a tcp class has no headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tt.yaml), nil)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "s.yaml:") {
				t.Fatalf("err = %v; want one naming %q", err, tt.want)
			}
		})
	}
}

func FuzzParseSocket(f *testing.F) {
	f.Add([]byte(socketYAML))
	f.Add([]byte("users: [{name: A, kind: tcp, url: 'tcp://h:1', tasks: [{steps: [{send_hex: '0a', expect: {equals_hex: '0a'}, until: {length: 1}}]}]}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data, nil)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, c := range file.Scenario.Classes {
			for _, tk := range c.Tasks {
				if tk.Fn == nil || (tk.Socket != nil && len(tk.Socket.Steps) == 0) {
					t.Fatalf("task %+v without a function or steps", tk)
				}
			}
		}
	})
}

// TestSocketScenarioRuns runs a websocket and a tcp class from YAML in a
// real worker, driven by a minimal master, against the built-in target:
// every exchange is a request in the stats (method WS or TCP), and the
// number of WS exchanges that sent a message is the number of messages
// the target received.
func TestSocketScenarioRuns(t *testing.T) {
	srv, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the target", 0, func(ctx context.Context) { _ = srv.Run(ctx) })
	echo, err := srv.ListenTCPEcho("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("run.yaml", []byte(`
host: `+srv.URL()+`
users:
  - name: Chat
    kind: websocket
    url: /ws
    wait: constant(0.01)
    on_start: [{path: '/ws/set-cookie?sid=7'}]
    tasks:
      - name: chat
        steps:
          - {name: hello, send: hello, expect: {equals: hello}}
          - {name: cookie, send: "!cookie", expect: {equals: sid=7}}
          - {name: wrong, send: abc, expect: {contains: xyz}}
  - name: Raw
    kind: tcp
    url: tcp://`+echo.String()+`
    wait: constant(0.01)
    tasks:
      - steps:
          - {name: line, send: "ping\n", until: {delimiter: "\n"}, expect: {equals: "ping\n"}}
`), nil)
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
	var conns *protocol.ConnCounters
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
			if hb, ok := m.Data.(*protocol.Heartbeat); ok && hb.Connections != nil {
				conns = hb.Connections
			}
			if m.Type == typ {
				return m
			}
		}
	}
	recv(protocol.TypeClientReady)
	send(protocol.TypeAck, &protocol.Ack{Index: 0})
	send(protocol.TypeSpawn, &protocol.Spawn{Timestamp: 1, UserClassesCount: map[string]int64{"Chat": 2, "Raw": 1}, ParsedOptions: map[string]any{}})
	recv(protocol.TypeSpawningComplete)
	if err := testpeer.Poll(20*time.Second, 5*time.Millisecond, func() bool { return srv.SocketCounters().WSMessages >= 30 }); err != nil {
		t.Fatalf("only %d WebSocket messages reached the target", srv.SocketCounters().WSMessages)
	}
	// A heartbeat built before the last connects counts fewer: wait for
	// one that has them (one a second; at most ten).
	for i := 0; i < 10 && (conns == nil || conns.Established < 3); i++ {
		recv(protocol.TypeHeartbeat)
	}
	if conns == nil || conns.Established < 3 {
		t.Fatalf("heartbeat counters %+v; want the 3 socket connections (and the on_start HTTP ones)", conns)
	}
	send(protocol.TypeQuit, nil)
	type key struct{ method, name string }
	reqs, fails := map[key]int64{}, map[key]int64{}
	for {
		m := recv(protocol.TypeStats)
		rep := m.Data.(*protocol.StatsReport)
		for _, e := range rep.Stats {
			method := ""
			if e.Method != nil {
				method = *e.Method
			}
			reqs[key{method, e.Name}] += e.NumRequests
			fails[key{method, e.Name}] += e.NumFailures
		}
		if rep.UserCount == 0 && len(reqs) > 0 {
			break
		}
	}
	if err := <-res; err != nil {
		t.Fatalf("Run = %v", err)
	}
	hello, cookie, wrong := reqs[key{"WS", "hello"}], reqs[key{"WS", "cookie"}], reqs[key{"WS", "wrong"}]
	// Quit lets running tasks finish, so every task ran its three steps.
	if hello == 0 || cookie != hello || wrong != hello {
		t.Fatalf("WS rows: hello %d, cookie %d, wrong %d (all %v)", hello, cookie, wrong, reqs)
	}
	if got := srv.SocketCounters().WSMessages; got != 3*hello {
		t.Fatalf("the target received %d messages; the stats have %d WS exchanges", got, 3*hello)
	}
	if fails[key{"WS", "hello"}] != 0 || fails[key{"WS", "cookie"}] != 0 || fails[key{"WS", "wrong"}] != wrong {
		t.Fatalf("failures %v", fails)
	}
	if reqs[key{"WS", "connect /ws"}] != 2 || reqs[key{"TCP", "line"}] == 0 || fails[key{"TCP", "line"}] != 0 {
		t.Fatalf("rows %v, failures %v", reqs, fails)
	}
}

func TestSocketExampleLoads(t *testing.T) {
	f, err := Load("../examples/websocket.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Scenario.Classes) != 2 || f.Scenario.Classes[0].Tasks[0].Socket.Kind != worker.WebSocket ||
		f.Scenario.Classes[1].Tasks[0].Socket.Kind != worker.TCP {
		t.Fatalf("classes %+v", f.Scenario.Classes)
	}
}
