package scenario

// WebSocket and raw TCP user classes (issue 16):
//
//	users:
//	  - name: ChatUser
//	    kind: websocket          # http (the default), websocket or tcp
//	    url: /ws                 # websocket: a path on the host, or ws:// wss://; tcp: tcp://h:p or tls://h:p
//	    headers: {X-Token: abc}  # websocket handshake headers (the user's cookies are sent too)
//	    wait: constant(10)       # the connection stays open between tasks
//	    on_start:                # HTTP requests, as in any class (a login that sets a cookie)
//	      - path: /login
//	    tasks:
//	      - name: chat
//	        steps:
//	          - name: hello                    # the stats name (method WS or TCP)
//	            send: "hello"                  # YAML's double-quoted escapes work: "\r\n", "\x00"
//	            expect: {contains: hello, timeout: 5s}
//	          - {send_hex: "00ff", name: bin}  # a binary message (websocket) or raw bytes
//	          - {expect: {regex: "^ok"}}       # read a reply without sending
//	          - hold: 30s                      # keep the connection, no I/O
//	          - {send: "bye", expect: {close: 4000}}  # the server must close with 4000
//	          - close: 1000                    # close the connection (tcp: close: true)
//
// TCP replies end at until: {delimiter: "\n"}, {length: 16} or, without
// either, {idle: 200ms} of silence (the default, 100 ms). expect checks
// are contains (a string or a list), regex, equals, equals_hex, close
// (websocket: a close code) and timeout.

import (
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// socketClass is the socket part of a user class.
type socketClass struct {
	kind     worker.SocketKind // 0: HTTP
	kindNode *yaml.Node
	url      string
	urlNode  *yaml.Node
	headers  []httpc.Header
	hdrNode  *yaml.Node
}

// socketClassField reads a user class's kind, url and headers.
func (p *parser) socketClassField(sc *socketClass, key string, v *yaml.Node, field string) error {
	var err error
	switch key {
	case "kind":
		var k string
		k, err = p.str(v, field)
		sc.kindNode = v
		switch strings.TrimSpace(k) {
		case "http", "":
			sc.kind = 0
		case "websocket":
			sc.kind = worker.WebSocket
		case "tcp":
			sc.kind = worker.TCP
		default:
			if err == nil {
				err = p.errf(v, field, "kind %q is not one of http, websocket, tcp", k)
			}
		}
	case "url":
		sc.url, err = p.str(v, field)
		sc.urlNode = v
	case "headers":
		sc.headers, err = p.headers(v, field)
		sc.hdrNode = v
	}
	return err
}

// checkSocketClass refuses socket fields on an HTTP class and checks the URL.
func (p *parser) checkSocketClass(sc *socketClass, n *yaml.Node, path string) error {
	switch sc.kind {
	case 0:
		if sc.urlNode != nil {
			return p.errf(sc.urlNode, path+".url", "url belongs to kind: websocket or kind: tcp (HTTP classes use the host and their tasks' paths)")
		}
		if sc.hdrNode != nil {
			return p.errf(sc.hdrNode, path+".headers", "headers here are WebSocket handshake headers: set kind: websocket (HTTP headers go in http.headers or a request's headers)")
		}
	case worker.WebSocket:
		if sc.urlNode == nil {
			return p.errf(n, path+".url", "missing: a websocket class needs a url (a path on the host like /ws, or ws:// or wss://)")
		}
		u := sc.url
		if strings.Contains(u, "://") && !hasAnyPrefix(u, "ws://", "wss://", "http://", "https://") {
			return p.errf(sc.urlNode, path+".url", "%q: a websocket url is ws://, wss:// or a path", u)
		}
	case worker.TCP:
		if sc.urlNode == nil {
			return p.errf(n, path+".url", "missing: a tcp class needs a url, tcp://host:port or tls://host:port")
		}
		if !hasAnyPrefix(sc.url, "tcp://", "tls://") {
			return p.errf(sc.urlNode, path+".url", "%q: a tcp url is tcp://host:port or tls://host:port", sc.url)
		}
		if sc.hdrNode != nil {
			return p.errf(sc.hdrNode, path+".headers", "a tcp class has no headers")
		}
	}
	return nil
}

func hasAnyPrefix(s string, ps ...string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// classTask reads a task of a class: HTTP requests, or socket steps.
func (p *parser) classTask(sc *socketClass, n *yaml.Node, path string) (worker.Task, error) {
	if sc.kind == 0 {
		return p.task(n, path)
	}
	t := worker.Task{}
	s := &worker.Socket{Kind: sc.kind, URL: sc.url, Headers: sc.headers}
	var haveSteps bool
	err := p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		var err error
		switch key {
		case "name":
			t.Name, err = p.str(v, field)
		case "weight":
			t.Weight, err = p.int_(v, field, 1)
		case "steps":
			haveSteps = true
			err = p.list(v, field, func(_ int, item *yaml.Node, f string) error {
				st, err := p.socketStep(sc.kind, item, f)
				s.Steps = append(s.Steps, st)
				return err
			})
		case "path", "method", "requests", "body", "json":
			return p.errf(v, field, "a %s class's tasks have steps, not HTTP requests (%s)", kindWord(sc.kind), key)
		default:
			return errUnknown
		}
		return err
	})
	if err != nil {
		return t, err
	}
	if !haveSteps || len(s.Steps) == 0 {
		return t, p.errf(n, path+".steps", "missing: a %s task needs steps", kindWord(sc.kind))
	}
	if t.Name == "" {
		t.Name = s.Steps[0].Name
	}
	t.Socket = s
	t.Fn = worker.SocketFunc(s)
	return t, nil
}

func kindWord(k worker.SocketKind) string {
	if k == worker.TCP {
		return "tcp"
	}
	return "websocket"
}

// socketStep reads one step.
func (p *parser) socketStep(kind worker.SocketKind, n *yaml.Node, path string) (worker.SocketStep, error) {
	var st worker.SocketStep
	var sendSet, binarySet bool
	err := p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		var err error
		switch key {
		case "name":
			st.Name, err = p.str(v, field)
		case "send", "send_hex":
			if sendSet {
				return p.errf(v, field, "a step has send or send_hex, not both")
			}
			sendSet = true
			var s string
			s, err = p.str(v, field)
			if err != nil {
				return err
			}
			if key == "send_hex" {
				st.Send, err = hexBytes(s)
				if err != nil {
					return p.errf(v, field, "%v", err)
				}
				if !binarySet {
					st.Binary = true
				}
			} else {
				st.Send = []byte(s)
			}
		case "binary":
			if kind != worker.WebSocket {
				return p.errf(v, field, "binary is for websocket messages (tcp sends bytes)")
			}
			binarySet = true
			st.Binary, err = p.bool_(v, field)
		case "expect":
			st.Expect, err = p.socketExpect(kind, v, field)
		case "until":
			if kind != worker.TCP {
				return p.errf(v, field, "until is for tcp replies (a websocket reply is one message)")
			}
			err = p.until(v, field, &st)
		case "hold":
			st.Hold, err = p.duration(v, field, time.Second)
		case "close":
			st.Close, err = p.closeField(kind, v, field)
		default:
			return errUnknown
		}
		return err
	})
	if err != nil {
		return st, err
	}
	if st.Send == nil && st.Expect == nil && st.Hold == 0 && st.Close == 0 {
		return st, p.errf(n, path, "a step needs send, send_hex, expect, hold or close")
	}
	if (st.Until.Delimiter != nil || st.Until.Length > 0 || st.Until.Idle > 0) && st.Expect == nil {
		return st, p.errf(n, path+".until", "until without expect: nothing is read (add expect: {} to read and accept any reply)")
	}
	return st, nil
}

func (p *parser) closeField(kind worker.SocketKind, v *yaml.Node, field string) (int, error) {
	s, err := p.str(v, field)
	if err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	if b, err := strconv.ParseBool(s); err == nil {
		if !b {
			return 0, nil
		}
		return 1000, nil // tcp ignores the code
	}
	if kind == worker.TCP {
		return 0, p.errf(v, field, "a tcp close is true or false, not %q", s)
	}
	c, err := strconv.Atoi(s)
	if err != nil || !validCloseCode(c) {
		return 0, p.errf(v, field, "%q is not a close code a client may send (1000, 1001, 1003, 1007-1011, 3000-4999)", s)
	}
	return c, nil
}

func validCloseCode(c int) bool {
	return c == 1000 || c == 1001 || c == 1003 || (c >= 1007 && c <= 1011) || (c >= 3000 && c <= 4999)
}

func (p *parser) socketExpect(kind worker.SocketKind, n *yaml.Node, path string) (*worker.SocketExpect, error) {
	e := &worker.SocketExpect{}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return e, nil // expect: with nothing: read a reply, any reply
	}
	err := p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		var err error
		switch key {
		case "contains":
			e.Contains, err = p.strOrList(v, field)
		case "regex":
			var s string
			s, err = p.str(v, field)
			if err == nil {
				e.Regex, err = regexp.Compile(s)
				if err != nil {
					return p.errf(v, field, "bad regular expression: %v", err)
				}
			}
		case "equals", "equals_hex":
			if e.HasEquals {
				return p.errf(v, field, "expect has equals or equals_hex, not both")
			}
			var s string
			s, err = p.str(v, field)
			if err != nil {
				return err
			}
			e.HasEquals = true
			if key == "equals_hex" {
				e.Equals, err = hexBytes(s)
				if err != nil {
					return p.errf(v, field, "%v", err)
				}
			} else {
				e.Equals = []byte(s)
			}
		case "close":
			if kind != worker.WebSocket {
				return p.errf(v, field, "expect.close is a websocket close code (a tcp server's close ends the reply)")
			}
			e.CloseCode, err = p.int_(v, field, 1000)
			if err == nil && e.CloseCode > 4999 {
				err = p.errf(v, field, "close code %d is above 4999", e.CloseCode)
			}
		case "timeout":
			e.Timeout, err = p.duration(v, field, time.Second)
		default:
			return errUnknown
		}
		return err
	})
	return e, err
}

func (p *parser) until(n *yaml.Node, path string, st *worker.SocketStep) error {
	return p.fields(n, path, func(key string, v *yaml.Node, field string) error {
		var err error
		switch key {
		case "delimiter":
			var s string
			s, err = p.str(v, field)
			if err == nil && s == "" {
				err = p.errf(v, field, "must not be empty")
			}
			st.Until.Delimiter = []byte(s)
		case "length":
			st.Until.Length, err = p.int_(v, field, 1)
		case "idle":
			st.Until.Idle, err = p.duration(v, field, time.Second)
			if err == nil && st.Until.Idle == 0 {
				err = p.errf(v, field, "must be above 0")
			}
		default:
			return errUnknown
		}
		if err == nil && st.Until.Delimiter != nil && st.Until.Length > 0 {
			err = p.errf(v, path, "until has delimiter or length, not both")
		}
		return err
	})
}

// hexBytes decodes hex digits, allowing spaces between bytes.
func hexBytes(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}
