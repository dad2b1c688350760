package zmtp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

var testCreds = PlainAuth{Username: "cicada", Password: "s3cret"}

// plainOpts are testOpts with PLAIN credentials.
func plainOpts(log *logCapture, creds *PlainAuth) Options {
	o := testOpts(log)
	o.Plain = creds
	return o
}

// plainHello is what a PLAIN client sends before it reads anything: its
// greeting and HELLO.
func plainHello(username, password string) []byte {
	return appendHello(appendGreetingMech(nil, mechPlain, false), username, password)
}

// countMessages counts log records whose message is msg.
func countMessages(log *logCapture, msg string) int {
	n := 0
	for _, m := range log.messages() {
		if m == msg {
			n++
		}
	}
	return n
}

func TestPlainRoundTrip(t *testing.T) {
	for _, poller := range []bool{true, false} {
		t.Run(fmt.Sprintf("poller=%v", poller), func(t *testing.T) {
			ro := plainOpts(nil, &testCreds)
			ro.noPoller = !poller
			r := newRouter(t, ro)
			d := newDealer(t, endpointOf(r), "plain-worker", plainOpts(nil, &PlainAuth{Username: "cicada", Password: "s3cret"}))
			waitConnectedID(t, r.Events(), "plain-worker")
			if err := d.Send([]byte("client_ready")); err != nil {
				t.Fatal(err)
			}
			if id, f := routerRecv(t, r); id != "plain-worker" || string(f[0]) != "client_ready" {
				t.Fatalf("Recv = %q %q; want plain-worker [client_ready]", id, f)
			}
			if err := r.Send("plain-worker", []byte("ack")); err != nil {
				t.Fatal(err)
			}
			if f := dealerRecv(t, d); string(f[0]) != "ack" {
				t.Fatalf("dealer got %q; want ack", f)
			}
			if n := r.AuthRefusals(); n != 0 {
				t.Fatalf("AuthRefusals() = %d; want 0", n)
			}
		})
	}
}

// TestPlainRouterRefuses: a PLAIN Router refuses peers with wrong
// credentials and NULL peers (what a Python Locust worker is), counts them,
// tells them why with an ERROR command, and keeps serving good peers.
func TestPlainRouterRefuses(t *testing.T) {
	tests := []struct {
		name  string
		creds *PlainAuth // the Dealer's; nil: NULL mechanism
	}{
		{"wrong password", &PlainAuth{Username: "cicada", Password: "guess"}},
		{"wrong username", &PlainAuth{Username: "admin", Password: "s3cret"}},
		{"password as prefix", &PlainAuth{Username: "cicada", Password: "s3cre"}},
		{"NULL peer", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rlog, dlog := &logCapture{}, &logCapture{}
			r := newRouter(t, plainOpts(rlog, &testCreds))
			d := newDealer(t, endpointOf(r), "intruder", plainOpts(dlog, tt.creds))
			rlog.waitErr(t, ErrAuth)
			if tt.creds != nil {
				// The Dealer learns why: its peer's ERROR command.
				dlog.waitErr(t, ErrPeerError)
				if !dlog.hasErr(ErrAuth) {
					t.Fatalf("dealer logged %v; want an error matching ErrAuth", dlog.errs())
				}
			} else {
				// A NULL Dealer sees the PLAIN greeting.
				dlog.waitErr(t, ErrMechanism)
			}
			if n := r.AuthRefusals(); n < 1 {
				t.Fatalf("AuthRefusals() = %d; want >= 1", n)
			}
			d.Close()
			for _, p := range r.Peers() {
				t.Fatalf("refused peer registered: %q", p)
			}
			good := newDealer(t, endpointOf(r), "good", plainOpts(nil, &testCreds))
			waitConnectedID(t, r.Events(), "good")
			good.Close()
		})
	}
}

// TestPlainDealerRefusesNullRouter: a Dealer with credentials never falls
// back to NULL (Locust's master, or a cicada master without a secret).
func TestPlainDealerRefusesNullRouter(t *testing.T) {
	rlog, dlog := &logCapture{}, &logCapture{}
	r := newRouter(t, testOpts(rlog))
	d := newDealer(t, endpointOf(r), "w", plainOpts(dlog, &testCreds))
	dlog.waitErr(t, ErrAuth)
	rlog.waitErr(t, ErrMechanism)
	d.Close()
	if p := r.Peers(); len(p) != 0 {
		t.Fatalf("NULL router registered the PLAIN dealer: %q", p)
	}
}

// TestPlainDealerHandshakeErrors drives a Dealer against fake PLAIN servers
// that misbehave.
func TestPlainDealerHandshakeErrors(t *testing.T) {
	tests := []struct {
		name    string
		answer  func(nc net.Conn, br *bufio.Reader) // after reading the HELLO
		wantErr error
	}{
		{"ERROR for HELLO", func(nc net.Conn, _ *bufio.Reader) { nc.Write(appendError(nil, "400")) }, ErrAuth},
		// libzmq 4.3.4's refusal, as pyzmq 24 on Debian 12 sends it.
		{"libzmq 4.3 ERROR for HELLO", func(nc net.Conn, _ *bufio.Reader) {
			nc.Write([]byte{0x04, 0x09, '^', 'R', 'R', 'O', 'R', 3, '4', '0', '0'})
		}, ErrPeerError},
		{"READY for HELLO", func(nc net.Conn, _ *bufio.Reader) { nc.Write(appendReady(nil, "ROUTER", "")) }, ErrAuth},
		{"message for HELLO", func(nc net.Conn, _ *bufio.Reader) { nc.Write(appendMessage(nil, strFrames("hi"))) }, ErrProtocol},
		{"ERROR for INITIATE", func(nc net.Conn, br *bufio.Reader) {
			nc.Write(appendCommand(nil, "WELCOME", nil))
			fr := frameReader{br: br, max: 1 << 16}
			fr.readFrame(1 << 16) //nolint:errcheck // the INITIATE
			nc.Write(appendError(nil, "later"))
		}, ErrPeerError},
		{"PUB in READY", func(nc net.Conn, br *bufio.Reader) {
			nc.Write(appendCommand(nil, "WELCOME", nil))
			fr := frameReader{br: br, max: 1 << 16}
			fr.readFrame(1 << 16) //nolint:errcheck // the INITIATE
			nc.Write(appendReady(nil, "PUB", ""))
		}, ErrSocketType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFakeServer(t, func(nc net.Conn) {
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(waitLong))
				nc.Write(appendGreetingMech(nil, mechPlain, true))
				br := bufio.NewReader(nc)
				var g [greetingSize]byte
				if _, err := readGreeting(br, &g); err != nil {
					return
				}
				fr := frameReader{br: br, max: 1 << 16}
				if _, _, err := fr.readFrame(1 << 16); err != nil { // HELLO
					return
				}
				tt.answer(nc, br)
				fr.readFrame(1 << 16) //nolint:errcheck // wait for the Dealer to leave
			})
			log := &logCapture{}
			d := newDealer(t, s.endpoint(), "w", plainOpts(log, &testCreds))
			log.waitErr(t, tt.wantErr)
			d.Close()
		})
	}
}

// TestPlainHostileHandshakes sends hand-made PLAIN handshakes to a PLAIN
// Router: each is refused (with an ERROR command when the greetings were
// exchanged), counted when it is an authentication failure, and the Router
// goes on serving.
func TestPlainHostileHandshakes(t *testing.T) {
	greet := appendGreetingMech(nil, mechPlain, false)
	cmd := func(name string, data []byte) []byte {
		return append(bytes.Clone(greet), appendCommand(nil, name, data)...)
	}
	long := strings.Repeat("u", 255)
	tests := []struct {
		name      string
		send      []byte
		wantErr   error
		wantERROR bool
		counted   bool // an AuthRefusals refusal
	}{
		{"CURVE mechanism", greetingBytes(3, 0, "CURVE"), ErrMechanism, false, false},
		{"NULL mechanism", clientHello("DEALER", "null-peer"), ErrAuth, true, true},
		{"wrong password", plainHello("cicada", "nope"), ErrAuth, true, true},
		{"empty HELLO", cmd("HELLO", nil), ErrAuth, true, true},
		{"username overruns", cmd("HELLO", []byte{10, 'a', 'b'}), ErrProtocol, true, true},
		{"password overruns", cmd("HELLO", []byte{1, 'a', 200, 'b'}), ErrProtocol, true, true},
		{"no password length", cmd("HELLO", []byte{1, 'a'}), ErrProtocol, true, true},
		{"bytes after password", cmd("HELLO", append(appendHello(nil, "cicada", "s3cret")[8:], 'x')), ErrProtocol, true, true},
		{"255-byte username and password", plainHello(long, long), ErrAuth, true, true},
		{"oversized HELLO (600 bytes)", cmd("HELLO", bytes.Repeat([]byte{0xFF}, 600)), ErrFrameTooLarge, true, true},
		{"2^50 HELLO header", append(bytes.Clone(greet), longHeader(flagCommand, 1<<50)...), ErrFrameTooLarge, true, true},
		{"INITIATE before HELLO", cmd("INITIATE", appendProperty(nil, "Socket-Type", "DEALER")), ErrProtocol, true, true},
		{"READY before HELLO", cmd("READY", appendProperty(nil, "Socket-Type", "DEALER")), ErrProtocol, true, true},
		{"message before HELLO", append(bytes.Clone(greet), appendMessage(nil, strFrames("hi"))...), ErrProtocol, true, true},
		{"good HELLO then PUB", append(plainHello("cicada", "s3cret"), appendInitiate(nil, "PUB", "")...), ErrSocketType, true, false},
		{"good HELLO then READY", append(plainHello("cicada", "s3cret"), appendReady(nil, "DEALER", "x")...), ErrProtocol, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &logCapture{}
			r := newRouter(t, plainOpts(log, &testCreds))
			nc := rawDial(t, r)
			if _, err := nc.Write(tt.send); err != nil {
				t.Fatalf("write: %v", err)
			}
			got := readAll(t, nc, waitLong)
			log.waitErr(t, tt.wantErr)
			if len(got) < greetingSize {
				t.Fatalf("server sent %d bytes; want at least its greeting", len(got))
			}
			if got[32] != 1 {
				t.Fatalf("PLAIN router greeting as-server = %d; want 1", got[32])
			}
			if sent := bytes.Contains(got[greetingSize:], []byte("\x05ERROR")); sent != tt.wantERROR {
				t.Fatalf("ERROR command sent = %v; want %v (% x)", sent, tt.wantERROR, got[greetingSize:])
			}
			if bytes.Contains(got, []byte("\x05READY")) {
				t.Fatalf("refused peer got a READY: % x", got[greetingSize:])
			}
			want := uint64(0)
			if tt.counted {
				want = 1
			}
			if n := r.AuthRefusals(); n != want {
				t.Fatalf("AuthRefusals() = %d; want %d", n, want)
			}
			if p := r.Peers(); len(p) != 0 {
				t.Fatalf("refused peer registered: %q", p)
			}
			d := newDealer(t, endpointOf(r), "after", plainOpts(nil, &testCreds))
			if err := d.Send([]byte("still serving")); err != nil {
				t.Fatal(err)
			}
			if id, f := routerRecv(t, r); id != "after" || string(f[0]) != "still serving" {
				t.Fatalf("Recv = %q %q", id, f)
			}
		})
	}
}

// TestPlainRawClient checks the server's commands byte for byte: WELCOME,
// then READY with our metadata, and the identity from INITIATE.
func TestPlainRawClient(t *testing.T) {
	r := newRouter(t, plainOpts(nil, &testCreds))
	nc := rawDial(t, r)
	nc.SetDeadline(time.Now().Add(waitLong))
	if _, err := nc.Write(append(plainHello("cicada", "s3cret"), appendInitiate(nil, "DEALER", "raw")...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	var g [greetingSize]byte
	if gr, err := readGreeting(br, &g); err != nil || gr.mechanism != mechPlain || !gr.asServer {
		t.Fatalf("greeting = %+v, %v; want PLAIN as server", gr, err)
	}
	fr := frameReader{br: br, max: 1 << 16}
	for _, want := range []string{"WELCOME", "READY"} {
		flags, body, err := fr.readFrame(1 << 16)
		if err != nil || flags&flagCommand == 0 {
			t.Fatalf("reading %s: flags %#x, %v", want, flags, err)
		}
		name, data, err := parseCommand(body)
		if err != nil || string(name) != want {
			t.Fatalf("got command %q (%v); want %s", name, err, want)
		}
		if want == "READY" {
			rd, err := parseReady(data)
			if err != nil || rd.socketType != "ROUTER" {
				t.Fatalf("READY = %+v, %v; want Socket-Type ROUTER", rd, err)
			}
		}
	}
	if _, err := nc.Write(appendMessage(nil, strFrames("raw hello"))); err != nil {
		t.Fatal(err)
	}
	if id, f := routerRecv(t, r); id != "raw" || string(f[0]) != "raw hello" {
		t.Fatalf("Recv = %q %q; want raw [raw hello]", id, f)
	}
}

// TestPlainRefusalsLogRateLimited: a flood of refused peers is counted one
// by one but logged at most once per refusalLogInterval.
func TestPlainRefusalsLogRateLimited(t *testing.T) {
	log := &logCapture{}
	r := newRouter(t, plainOpts(log, &testCreds))
	const n = 30
	start := time.Now()
	for i := range n {
		nc := rawDial(t, r)
		nc.Write(plainHello("cicada", fmt.Sprint("guess-", i)))
		readAll(t, nc, waitLong)
	}
	waitFor(t, waitLong, fmt.Sprintf("%d refusals", n), func() bool { return r.AuthRefusals() == n })
	elapsed := time.Since(start)
	lines := countMessages(log, "zmtp: refused peer")
	if maxLines := 1 + int(elapsed/refusalLogInterval); lines < 1 || lines > maxLines {
		t.Fatalf("%d refusals in %v logged %d lines; want 1..%d", n, elapsed, lines, maxLines)
	}
}

func TestRefusalLogAllow(t *testing.T) {
	var l refusalLog
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at             time.Duration
		ok             bool
		wantSuppressed int
	}{
		{0, true, 0},
		{100 * time.Millisecond, false, 0},
		{999 * time.Millisecond, false, 0},
		{time.Second, true, 2},
		{1500 * time.Millisecond, false, 0},
		{5 * time.Second, true, 1},
		{6 * time.Second, true, 0},
	}
	for _, s := range steps {
		ok, sup := l.allow(t0.Add(s.at))
		if ok != s.ok || sup != s.wantSuppressed {
			t.Fatalf("allow(t0+%v) = %v, %d; want %v, %d", s.at, ok, sup, s.ok, s.wantSuppressed)
		}
	}
}

func TestPlainOptionsRefused(t *testing.T) {
	tests := []struct {
		name  string
		creds PlainAuth
	}{
		{"empty password", PlainAuth{Username: "u"}},
		{"256-byte password", PlainAuth{Username: "u", Password: strings.Repeat("p", 256)}},
		{"256-byte username", PlainAuth{Username: strings.Repeat("u", 256), Password: "p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r, err := Listen("tcp://127.0.0.1:0", Options{Plain: &tt.creds}); !errors.Is(err, ErrBadOptions) {
				if r != nil {
					r.Close()
				}
				t.Fatalf("Listen(Plain %d/%d bytes) = %v; want ErrBadOptions", len(tt.creds.Username), len(tt.creds.Password), err)
			}
			if d, err := Dial("tcp://127.0.0.1:1", "w", Options{Plain: &tt.creds}); !errors.Is(err, ErrBadOptions) {
				if d != nil {
					d.Close()
				}
				t.Fatalf("Dial(Plain %d/%d bytes) = %v; want ErrBadOptions", len(tt.creds.Username), len(tt.creds.Password), err)
			}
		})
	}
	// 255 bytes each and an empty username are allowed.
	ok := PlainAuth{Username: strings.Repeat("u", 255), Password: strings.Repeat("p", 255)}
	r := newRouter(t, plainOpts(nil, &ok))
	d := newDealer(t, endpointOf(r), "max", plainOpts(nil, &ok))
	waitConnectedID(t, r.Events(), "max")
	d.Close()
	anon := PlainAuth{Password: "p"}
	r2 := newRouter(t, plainOpts(nil, &anon))
	d2 := newDealer(t, endpointOf(r2), "anon-user", plainOpts(nil, &anon))
	waitConnectedID(t, r2.Events(), "anon-user")
	d2.Close()
}

// TestPlainOptionsCopied: changing the caller's PlainAuth after Listen does
// not change the Router's credentials.
func TestPlainOptionsCopied(t *testing.T) {
	creds := testCreds
	r := newRouter(t, plainOpts(nil, &creds))
	creds.Password = "changed"
	d := newDealer(t, endpointOf(r), "w", plainOpts(nil, &testCreds))
	waitConnectedID(t, r.Events(), "w")
	d.Close()
}

func TestParseHello(t *testing.T) {
	tests := []struct {
		name       string
		data       []byte
		user, pass string
		wantErr    error
	}{
		{"both", appendHello(nil, "cicada", "s3cret")[8:], "cicada", "s3cret", nil},
		{"empty both", []byte{0, 0}, "", "", nil},
		{"255 each", appendHello(nil, strings.Repeat("u", 255), strings.Repeat("p", 255))[15:], strings.Repeat("u", 255), strings.Repeat("p", 255), nil},
		{"nothing", nil, "", "", ErrProtocol},
		{"username overruns", []byte{3, 'a'}, "", "", ErrProtocol},
		{"no password", []byte{1, 'a'}, "", "", ErrProtocol},
		{"password overruns", []byte{0, 2, 'a'}, "", "", ErrProtocol},
		{"trailing byte", []byte{0, 0, 0}, "", "", ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, p, err := parseHello(tt.data)
			if !errors.Is(err, tt.wantErr) || (err == nil && (string(u) != tt.user || string(p) != tt.pass)) {
				t.Fatalf("parseHello(% x) = %q, %q, %v; want %q, %q, %v", tt.data, u, p, err, tt.user, tt.pass, tt.wantErr)
			}
		})
	}
}
