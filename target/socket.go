package target

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/cicada-load/cicada/internal/wsframe"
)

// The WebSocket echo endpoint (GET /ws with an RFC 6455 upgrade) answers
// every message with the same message, except these text commands:
//
//	!close CODE [REASON]  the server closes with that code and reason
//	!drop                 the server drops the TCP connection (no close frame: 1006)
//	!silence              no reply (for timeouts)
//	!ping DATA            the server pings with DATA, then echoes DATA once it has the pong
//	!header NAME          the value of handshake header NAME ("" if absent)
//	!cookie               the handshake's Cookie header
//
// A connection has its own goroutine and a 4 KiB read buffer on the
// server; frames above 1 MiB close it with 1009. The TCP echo listener
// (Options.TCPEcho) writes back every byte it reads.

// WSPath is the WebSocket echo endpoint's path.
const WSPath = "/ws"

// maxWSMessage bounds an echoed message.
const maxWSMessage = 1 << 20

// SocketCounters are the counters of the WebSocket and TCP echo endpoints.
type SocketCounters struct {
	WSAccepted  int64 `json:"ws_accepted"`
	WSOpen      int64 `json:"ws_open"`
	WSMessages  int64 `json:"ws_messages"` // data messages received
	TCPAccepted int64 `json:"tcp_accepted"`
	TCPOpen     int64 `json:"tcp_open"`
}

// sockets is the state of a Server's socket endpoints.
type sockets struct {
	once  sync.Once
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	dead  bool

	wsAccepted, wsOpen, wsMessages atomic.Int64
	tcpAccepted, tcpOpen           atomic.Int64
	tcpLn                          net.Listener
}

var socketsOf sync.Map // *Server -> *sockets: the Server struct stays as it is

func (s *Server) sockets() *sockets {
	v, _ := socketsOf.LoadOrStore(s, &sockets{conns: map[net.Conn]struct{}{}})
	sk := v.(*sockets)
	sk.once.Do(func() {
		go func() {
			<-s.done
			sk.mu.Lock()
			sk.dead = true
			for c := range sk.conns {
				c.Close()
			}
			if sk.tcpLn != nil {
				sk.tcpLn.Close()
			}
			sk.mu.Unlock()
			socketsOf.Delete(s)
		}()
	})
	return sk
}

// add registers a connection to close at shutdown; false if shut down.
func (sk *sockets) add(c net.Conn) bool {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if sk.dead {
		return false
	}
	sk.conns[c] = struct{}{}
	return true
}

func (sk *sockets) remove(c net.Conn) {
	sk.mu.Lock()
	delete(sk.conns, c)
	sk.mu.Unlock()
}

// SocketCounters returns the socket endpoints' counters.
func (s *Server) SocketCounters() SocketCounters {
	sk := s.sockets()
	return SocketCounters{
		WSAccepted: sk.wsAccepted.Load(), WSOpen: sk.wsOpen.Load(), WSMessages: sk.wsMessages.Load(),
		TCPAccepted: sk.tcpAccepted.Load(), TCPOpen: sk.tcpOpen.Load(),
	}
}

var prefixWS = []byte(WSPath)

// serveWSPaths serves WSPath and WSPath + "/set-cookie?name=value" (which
// sets the cookies of its query, Path=/, for handshake cookie tests);
// other paths under WSPath get the page.
func (s *Server) serveWSPaths(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case WSPath:
		s.serveWS(ctx)
	case WSPath + "/set-cookie":
		for k, v := range ctx.QueryArgs().All() {
			var c fasthttp.Cookie
			c.SetKeyBytes(k)
			c.SetValueBytes(v)
			c.SetPath("/")
			ctx.Response.Header.SetCookie(&c)
		}
		s.servePage(ctx)
	default:
		s.servePage(ctx)
	}
}

// serveWS answers a WebSocket upgrade on WSPath and hands the connection
// to the echo loop.
func (s *Server) serveWS(ctx *fasthttp.RequestCtx) {
	key := string(ctx.Request.Header.Peek("Sec-WebSocket-Key"))
	if !ctx.IsGet() || !bytes.EqualFold(ctx.Request.Header.Peek("Upgrade"), []byte("websocket")) || key == "" ||
		string(ctx.Request.Header.Peek("Sec-WebSocket-Version")) != "13" {
		ctx.Response.Header.Set("Sec-WebSocket-Version", "13")
		badRequest(ctx, "a WebSocket upgrade (GET, Upgrade: websocket, Sec-WebSocket-Key, version 13) is needed on "+WSPath)
		return
	}
	hs := map[string]string{}
	for k, v := range ctx.Request.Header.All() {
		hs[strings.ToLower(string(k))] = string(v)
	}
	ctx.SetStatusCode(fasthttp.StatusSwitchingProtocols)
	ctx.Response.Header.Set("Upgrade", "websocket")
	ctx.Response.Header.Set("Connection", "Upgrade")
	ctx.Response.Header.Set("Sec-WebSocket-Accept", wsframe.AcceptKey(key))
	ctx.Response.SkipBody = true
	sk := s.sockets()
	ctx.Hijack(func(c net.Conn) {
		if !sk.add(c) {
			return
		}
		defer sk.remove(c)
		sk.wsAccepted.Add(1)
		sk.wsOpen.Add(1)
		defer sk.wsOpen.Add(-1)
		wsEcho(c, hs, sk)
	})
}

// wsEcho is one WebSocket connection's echo loop.
func wsEcho(c net.Conn, hs map[string]string, sk *sockets) {
	br := bufio.NewReaderSize(c, 4096)
	rd := &wsframe.Reader{R: br, Server: true, MaxMessage: maxWSMessage}
	var buf, out []byte
	var pingData []byte // a !ping waiting for its pong
	send := func(op byte, p []byte) bool {
		out = wsframe.AppendFrame(out[:0], op, p, nil)
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Write(out)
		return err == nil
	}
	closeWith := func(code int, reason string) {
		out = wsframe.AppendClose(out[:0], code, reason, nil)
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.Write(out)
		// Wait a little for the client's close frame, then close.
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		for range 16 {
			f, err := rd.Next(buf)
			if err != nil || f.Op == wsframe.OpClose {
				return
			}
		}
	}
	for {
		f, err := rd.Next(buf)
		if err != nil {
			if errors.Is(err, wsframe.ErrProtocol) || errors.Is(err, wsframe.ErrTooLarge) {
				closeWith(wsframe.CloseCodeFor(err), "")
			}
			return
		}
		switch f.Op {
		case wsframe.OpPing:
			if !send(wsframe.OpPong, f.Payload) {
				return
			}
			continue
		case wsframe.OpPong:
			if pingData != nil && bytes.Equal(f.Payload, pingData) {
				if !send(wsframe.OpText, pingData) {
					return
				}
				pingData = nil
			}
			continue
		case wsframe.OpClose:
			code, _, _ := wsframe.ParseClose(f.Payload)
			out = wsframe.AppendClose(out[:0], 0, "", nil)
			if code != wsframe.CloseNoStatus {
				out = wsframe.AppendClose(out[:0], code, "", nil)
			}
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(out)
			return
		}
		buf = f.Payload
		sk.wsMessages.Add(1)
		if f.Op == wsframe.OpText && len(f.Payload) > 0 && f.Payload[0] == '!' {
			cmd, arg, _ := strings.Cut(string(f.Payload[1:]), " ")
			switch cmd {
			case "close":
				cs, reason, _ := strings.Cut(arg, " ")
				code, err := strconv.Atoi(cs)
				if err != nil || !wsframe.ValidCloseCode(code) {
					code, reason = wsframe.CloseProtocolError, fmt.Sprintf("bad close code %q", cs)
				}
				closeWith(code, reason)
				return
			case "drop":
				return
			case "silence":
				continue
			case "ping":
				pingData = []byte(arg)
				if !send(wsframe.OpPing, pingData) {
					return
				}
				continue
			case "header":
				if !send(wsframe.OpText, []byte(hs[strings.ToLower(arg)])) {
					return
				}
				continue
			case "cookie":
				if !send(wsframe.OpText, []byte(hs["cookie"])) {
					return
				}
				continue
			}
		}
		if !send(f.Op, f.Payload) {
			return
		}
	}
}

// ListenTCPEcho starts the TCP echo listener on addr ("127.0.0.1:0" picks
// a port) and returns its address. It runs until the Server is closed.
func (s *Server) ListenTCPEcho(addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("target: tcp echo: listen %s: %w", addr, err)
	}
	sk := s.sockets()
	sk.mu.Lock()
	if sk.dead || sk.tcpLn != nil {
		sk.mu.Unlock()
		ln.Close()
		return nil, fmt.Errorf("target: tcp echo: %w (or already listening)", ErrClosed)
	}
	sk.tcpLn = ln
	sk.mu.Unlock()
	go func() {
		var delay time.Duration
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				delay = min(max(2*delay, 5*time.Millisecond), time.Second) // EMFILE: back off
				time.Sleep(delay)
				continue
			}
			delay = 0
			if !sk.add(c) {
				c.Close()
				return
			}
			sk.tcpAccepted.Add(1)
			sk.tcpOpen.Add(1)
			go func() {
				defer func() {
					c.Close()
					sk.remove(c)
					sk.tcpOpen.Add(-1)
				}()
				// A plain loop: io.Copy of a socket onto itself would splice
				// through a pipe and wait to fill it.
				b := make([]byte, 4096)
				for {
					n, err := c.Read(b)
					if n > 0 {
						if _, werr := c.Write(b[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr(), nil
}
