package sockc

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/target"
	"github.com/cicada-load/cicada/worker/httpc"
)

// echo starts the built-in target with its TCP echo listener and returns
// the ws:// URL and the tcp:// URL.
func echo(t *testing.T) (wsURL, tcpURL string) {
	t.Helper()
	srv, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	addr, err := srv.ListenTCPEcho("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "ws://" + srv.Addr().String() + target.WSPath, "tcp://" + addr.String()
}

func TestWSEcho(t *testing.T) {
	wsURL, _ := echo(t)
	var cs Counters
	o := &Options{Counters: &cs, Timeout: 5 * time.Second}
	c, err := DialWS(context.Background(), wsURL, []httpc.Header{{Key: "X-Test", Value: "yes"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		op         byte
		send, want string
	}{
		{Text, "hello", "hello"},
		{Binary, "\x00\x01\xff", "\x00\x01\xff"},
		{Text, strings.Repeat("x", 70000), strings.Repeat("x", 70000)},
		{Text, "!header x-test", "yes"},
		{Text, "!ping abc", "abc"}, // answered only after our pong
	}
	var buf []byte
	for _, tt := range tests {
		if err := c.Send(context.Background(), tt.op, []byte(tt.send)); err != nil {
			t.Fatal(err)
		}
		op, p, err := c.Recv(context.Background(), buf)
		if err != nil || string(p) != tt.want || (tt.op == Binary && op != Binary) {
			t.Fatalf("send %.20q: got op %d %.20q, %v", tt.send, op, p, err)
		}
		buf = p
	}
	if s := cs.Snapshot(); s.Connects != 1 || s.Open != 1 {
		t.Fatalf("counters %+v", s)
	}
	if err := c.Close(1000, "done", true); err != nil {
		t.Fatal(err)
	}
	if s := cs.Snapshot(); s.Open != 0 || s.Closes["ws close 1000 (client)"] != 1 {
		t.Fatalf("after close: %+v", s)
	}
	if err := c.Send(context.Background(), Text, []byte("x")); httpc.Classify(err) != httpc.ClientClosed {
		t.Fatalf("send after close: %v", err)
	}
}

func TestWSServerEnds(t *testing.T) {
	wsURL, _ := echo(t)
	tests := []struct {
		name    string
		send    string
		timeout time.Duration
		check   func(error) bool
		label   string
		kind    httpc.Kind
	}{
		{"close by code", "!close 4001 bye", 0, func(err error) bool {
			var ce *CloseError
			return errors.As(err, &ce) && ce.Code == 4001 && ce.Reason == "bye" && err.Error() == "WebSocketClosed(4001, 'bye')"
		}, "ws close 4001 (server)", httpc.Other},
		{"drop", "!drop", 0, func(err error) bool {
			var ce *CloseError
			return errors.As(err, &ce) && ce.Code == 1006
		}, "ws close 1006 (server)", httpc.Other},
		{"timeout", "!silence", 200 * time.Millisecond, func(err error) bool {
			return httpc.Classify(err) == httpc.ReadTimeout
		}, "ws close (timeout)", httpc.ReadTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs Counters
			c, err := DialWS(context.Background(), wsURL, nil, &Options{Counters: &cs, Timeout: tt.timeout})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(0, "", false)
			if err := c.Send(context.Background(), Text, []byte(tt.send)); err != nil {
				t.Fatal(err)
			}
			_, _, err = c.Recv(context.Background(), nil)
			if !tt.check(err) {
				t.Fatalf("Recv: %v", err)
			}
			s := cs.Snapshot()
			if s.Closes[tt.label] != 1 || s.Open != 0 {
				t.Fatalf("counters %+v, want one %q", s, tt.label)
			}
			if tt.kind != httpc.Other && s.Errors[tt.kind] != 1 {
				t.Fatalf("errors %v, want one %v", s.Errors, tt.kind)
			}
		})
	}
}

func TestWSDialFailures(t *testing.T) {
	wsURL, _ := echo(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "ws://" + ln.Addr().String() + "/ws"
	ln.Close()
	tests := []struct {
		name, url string
		want      string
		kind      httpc.Kind
	}{
		{"not an upgrade endpoint", strings.TrimSuffix(wsURL, "/ws") + "/page", "WebSocketBadStatusException('Handshake status 200 OK')", httpc.HTTPStatus},
		{"refused", closed, "ConnectionRefusedError", httpc.Refused},
		{"bad scheme", "ftp://x/", "invalid URL", httpc.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs Counters
			_, err := DialWS(context.Background(), tt.url, nil, &Options{Counters: &cs})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if tt.kind != httpc.InvalidRequest && cs.Snapshot().ConnectErrors[tt.kind] != 1 {
				t.Fatalf("connect errors %v, want one %v", cs.Snapshot().ConnectErrors, tt.kind)
			}
		})
	}
}

func TestTCPEcho(t *testing.T) {
	_, tcpURL := echo(t)
	var cs Counters
	c, err := DialTCP(context.Background(), tcpURL, &Options{Counters: &cs, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	tests := []struct {
		name  string
		send  string
		until Until
		want  string
		kind  httpc.Kind // of the error, Other for none
	}{
		{"delimiter, rest kept", "one\ntwo\n", Until{Delimiter: []byte("\n")}, "one\n", httpc.Other},
		{"the kept rest", "", Until{Delimiter: []byte("\n")}, "two\n", httpc.Other},
		{"length", "abcdef", Until{Length: 4}, "abcd", httpc.Other},
		{"idle", "", Until{Idle: 50 * time.Millisecond}, "ef", httpc.Other},
		{"split delimiter", "x\r", Until{Delimiter: []byte("\r\n")}, "", httpc.ReadTimeout},
	}
	for _, tt := range tests {
		if tt.send != "" {
			if err := c.Send(ctx, []byte(tt.send)); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
		}
		got, err := c.Read(ctx, tt.until, nil)
		if string(got) != tt.want || httpc.Classify(err) != tt.kind || (tt.kind == httpc.Other) != (err == nil) {
			t.Fatalf("%s: %q, %v; want %q, %v", tt.name, got, err, tt.want, tt.kind)
		}
	}
	s := cs.Snapshot()
	if s.Connects != 1 || s.Closes["tcp close (timeout)"] != 1 || s.Errors[httpc.ReadTimeout] != 1 {
		t.Fatalf("counters %+v", s)
	}
}

func TestTCPURLs(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:1", "tcp://127.0.0.1", "tcp://:80", "tcp://127.0.0.1:80/path"} {
		if _, err := DialTCP(context.Background(), u, nil); !errors.Is(err, ErrInvalidURL) {
			t.Errorf("%s: %v, want ErrInvalidURL", u, err)
		}
	}
}

func BenchmarkWSExchange(b *testing.B) {
	srv, err := target.New(target.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Run(ctx) }()
	c, err := DialWS(ctx, "ws://"+srv.Addr().String()+target.WSPath, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(0, "", false)
	msg := []byte("hello, echo")
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Send(ctx, Text, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Recv(ctx, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWSManyMessagesInOneRead: messages that arrive together, more than
// one read buffer of them, are all delivered in order.
func TestWSManyMessagesInOneRead(t *testing.T) {
	wsURL, _ := echo(t)
	c, err := DialWS(context.Background(), wsURL, nil, &Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(0, "", false)
	const n = 300 // 300 frames of 102 bytes: several 4 KiB buffers
	msg := func(i int) string { return strings.Repeat(string(rune('a'+i%26)), 100) }
	for i := range n {
		if err := c.Send(context.Background(), Text, []byte(msg(i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		_, p, err := c.Recv(context.Background(), nil)
		if err != nil || string(p) != msg(i) {
			t.Fatalf("message %d: %.10q %v", i, p, err)
		}
	}
}
