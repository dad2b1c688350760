package target

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/wsframe"
)

// wsDial upgrades a raw connection to /ws and returns it with its reader.
func wsDial(t *testing.T, s *Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	const key = "dGhlIHNhbXBsZSBub25jZQ=="
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "+key+"\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("handshake: %d %v", resp.StatusCode, resp.Header)
	}
	return c, br
}

func TestWSEndpoint(t *testing.T) {
	s := startServer(t, Options{})
	tests := []struct {
		name   string
		frame  []byte
		wantOp byte
		want   string
	}{
		{"echo", wsframe.AppendFrame(nil, wsframe.OpText, []byte("hi"), &[4]byte{1, 2, 3, 4}), wsframe.OpText, "hi"},
		{"unmasked from a client", wsframe.AppendFrame(nil, wsframe.OpText, []byte("hi"), nil), wsframe.OpClose, "\x03\xea"}, // 1002
		{"close command", wsframe.AppendFrame(nil, wsframe.OpText, []byte("!close 4003 x"), &[4]byte{9, 8, 7, 6}), wsframe.OpClose, "\x0f\xa3x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br := wsDial(t, s)
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.Write(tt.frame)
			f, err := (&wsframe.Reader{R: br}).Next(nil)
			if err != nil || f.Op != tt.wantOp || string(f.Payload) != tt.want {
				t.Fatalf("got op %d %q, %v; want op %d %q", f.Op, f.Payload, err, tt.wantOp, tt.want)
			}
		})
	}
	if got := s.SocketCounters(); got.WSAccepted != 3 || got.WSMessages != 2 {
		t.Fatalf("counters %+v", got)
	}
}

func TestWSEndpointRefusesPlainGET(t *testing.T) {
	s := startServer(t, Options{})
	resp, err := http.Get(s.URL() + WSPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "WebSocket upgrade") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

func TestSocketsClosedAtShutdown(t *testing.T) {
	s, err := New(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(t.Context()) }()
	addr, err := s.ListenTCPEcho("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListenTCPEcho("127.0.0.1:0"); !errors.Is(err, ErrClosed) {
		t.Fatalf("second echo listener: %v", err)
	}
	tc, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	io.WriteString(tc, "abc")
	b := make([]byte, 3)
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(tc, b); err != nil || string(b) != "abc" {
		t.Fatalf("echo %q %v", b, err)
	}
	wc, br := wsDial(t, s)
	s.Close()
	<-done
	wc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the WebSocket outlived Close")
	}
	if _, err := tc.Read(b); err == nil {
		t.Fatal("the TCP echo connection outlived Close")
	}
}
