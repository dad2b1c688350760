package worker

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker/httpc"
	"github.com/cicada-load/cicada/worker/sockc"
)

func TestSocketStepsWebSocket(t *testing.T) {
	srv := startTarget(t, target.Options{})
	u, rec, e := testUser(t, srv.URL(), "")
	t.Cleanup(func() { u.sock.close() })
	ctx := context.Background()
	// The user's HTTP session gets a cookie; the handshake must carry it.
	if err := u.DoDiscard(ctx, &httpc.Request{Path: "/ws/set-cookie?session=abc"}, nil); err != nil {
		t.Fatal(err)
	}
	rec.take()
	s := &Socket{Kind: WebSocket, URL: target.WSPath, Headers: []httpc.Header{{Key: "X-A", Value: "b"}}}
	tests := []struct {
		name    string
		step    SocketStep
		failure string // "" for success
		length  int64
		noStats bool
	}{
		{"echo", SocketStep{Send: []byte("hello"), Expect: &SocketExpect{Contains: []string{"ell"}}}, "", 5, false},
		{"header", SocketStep{Name: "hdr", Send: []byte("!header x-a"), Expect: &SocketExpect{Equals: []byte("b"), HasEquals: true}}, "", 1, false},
		{"cookie", SocketStep{Name: "cookie", Send: []byte("!cookie"), Expect: &SocketExpect{Equals: []byte("session=abc"), HasEquals: true}}, "", 11, false},
		{"regex", SocketStep{Name: "re", Send: []byte("abc123"), Expect: &SocketExpect{Regex: regexp.MustCompile(`^abc\d+$`)}}, "", 6, false},
		{"failed expectation", SocketStep{Name: "greet", Send: []byte("hi"), Expect: &SocketExpect{Contains: []string{"bye"}}},
			`CatchResponseError('WS "greet": reply "hi" does not contain "bye"')`, 2, false},
		{"binary send only", SocketStep{Name: "bin", Send: []byte{0, 1}, Binary: true}, "", 0, false},
		{"the binary echo", SocketStep{Name: "recv-bin", Expect: &SocketExpect{Equals: []byte{0, 1}, HasEquals: true}}, "", 2, false},
		{"timeout", SocketStep{Name: "quiet", Send: []byte("!silence"), Expect: &SocketExpect{Timeout: 100 * time.Millisecond}}, "Timeout", 0, false},
		{"reconnect, then close expected", SocketStep{Name: "bye", Send: []byte("!close 4001 done"), Expect: &SocketExpect{CloseCode: 4001}}, "", 0, false},
		{"close with another code", SocketStep{Name: "bye2", Send: []byte("!close 4002"), Expect: &SocketExpect{CloseCode: 4001}},
			`CatchResponseError('WS "bye2": closed with 4002, expected 4001')`, 0, false},
		{"server close unexpected", SocketStep{Name: "oops", Send: []byte("!close 1011 overload"), Expect: &SocketExpect{}},
			`WebSocketClosed(1011, 'overload')`, 0, false},
		{"hold", SocketStep{Hold: 10 * time.Millisecond}, "", 0, true},
	}
	for _, tt := range tests {
		err := u.SocketStep(ctx, s, &tt.step)
		got := rec.take()
		if tt.noStats {
			if err != nil || len(got) != 0 {
				t.Fatalf("%s: %v, %+v", tt.name, err, got)
			}
			continue
		}
		// A step after a closed connection first reconnects.
		if len(got) == 2 && got[0].name == "connect /ws" && got[0].failure == "" {
			got = got[1:]
		}
		if len(got) != 1 || got[0].method != "WS" {
			t.Fatalf("%s: recorded %+v", tt.name, got)
		}
		if !strings.Contains(got[0].failure, tt.failure) || (tt.failure == "") != (got[0].failure == "") || (tt.failure == "") != (err == nil) {
			t.Fatalf("%s: failure %q (err %v), want %q", tt.name, got[0].failure, err, tt.failure)
		}
		if got[0].length != tt.length {
			t.Fatalf("%s: length %d, want %d", tt.name, got[0].length, tt.length)
		}
	}
	c := e.socks.counters.Snapshot()
	if c.Closes["ws close 4001 (server)"] != 1 || c.Closes["ws close 4002 (server)"] != 1 || c.Closes["ws close 1011 (server)"] != 1 ||
		c.Closes["ws close (timeout)"] != 1 || c.Connects != 4 || c.Open != 0 {
		t.Fatalf("counters %+v", c)
	}
}

func TestSocketFuncStopsAtFailure(t *testing.T) {
	srv := startTarget(t, target.Options{})
	addr, err := srv.ListenTCPEcho("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u, rec, e := testUser(t, srv.URL(), "")
	t.Cleanup(func() { u.sock.close() })
	s := &Socket{Kind: TCP, URL: "tcp://" + addr.String(), Steps: []SocketStep{
		{Name: "ping", Send: []byte("ping\n"), Expect: &SocketExpect{Equals: []byte("ping\n"), HasEquals: true}, Until: sockc.Until{Delimiter: []byte("\n")}},
		{Name: "two", Send: []byte("ab"), Expect: &SocketExpect{Contains: []string{"x"}}, Until: sockc.Until{Length: 2}},
		{Name: "never", Send: []byte("x")},
	}}
	if err := SocketFunc(s)(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	want := []struct{ name, failure string }{
		{"connect tcp://" + addr.String(), ""}, {"ping", ""}, {"two", `CatchResponseError('TCP "two": reply "ab" does not contain "x"')`},
	}
	if len(got) != len(want) {
		t.Fatalf("recorded %+v", got)
	}
	for i, w := range want {
		if got[i].method != "TCP" || got[i].name != w.name || got[i].failure != w.failure {
			t.Fatalf("sample %d: %+v, want %+v", i, got[i], w)
		}
	}
	u.sock.close()
	if c := e.socks.counters.Snapshot(); c.Closes["tcp close (client)"] != 1 || c.Open != 0 {
		t.Fatalf("counters %+v", c)
	}
}

func TestSocketConfigErrors(t *testing.T) {
	u, rec, _ := testUser(t, "", "")
	tests := []*Socket{
		{Kind: WebSocket, URL: "/ws"},                   // no host
		{Kind: TCP, URL: "http://127.0.0.1:1"},          // not tcp://
		{Kind: WebSocket, URL: "ftp://127.0.0.1/"},      // not ws://
		{Kind: SocketKind(9), URL: "tcp://127.0.0.1:1"}, // unknown kind
	}
	for _, s := range tests {
		err := SocketFunc(&Socket{Kind: s.Kind, URL: s.URL, Steps: []SocketStep{{Send: []byte("x")}}})(context.Background(), u)
		if !errors.Is(err, ErrSocket) {
			t.Errorf("%+v: %v, want ErrSocket", s, err)
		}
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("recorded %+v", got)
	}
}
