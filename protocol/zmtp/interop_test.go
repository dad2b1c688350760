package zmtp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
)

// debianPython is Debian's python3 with python3-zmq (pyzmq 24 / libzmq
// 4.3); "python3" on PATH may be another Python without zmq.
const debianPython = testpeer.PythonBin

// needPyZMQ skips the test when python3-zmq is missing, and fails it when
// CI=true.
func needPyZMQ(t *testing.T) {
	t.Helper()
	testpeer.RequirePython(t, "zmq")
}

// pyPeer is a running testdata/zmqpeer.py.
type pyPeer struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *testpeer.SyncBuffer
	exited chan struct{}
}

func startPy(t testing.TB, args ...string) *pyPeer {
	t.Helper()
	cmd := exec.Command(debianPython, append([]string{"testdata/zmqpeer.py"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &pyPeer{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 1000), stderr: &testpeer.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start zmqpeer.py: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	return p
}

// next returns the next output line.
func (p *pyPeer) next() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("zmqpeer.py exited; stderr:\n%s", p.stderr)
		}
		return l
	case <-time.After(waitLong):
		p.t.Fatalf("zmqpeer.py printed nothing for %v", waitLong)
	}
	return ""
}

// expectMsg returns the frames of the next "msg" line.
func (p *pyPeer) expectMsg() []string {
	p.t.Helper()
	l := p.next()
	f := strings.Fields(l)
	if len(f) == 0 || f[0] != "msg" {
		p.t.Fatalf("zmqpeer.py printed %q; want msg ...", l)
	}
	return f[1:]
}

func (p *pyPeer) ready() string {
	p.t.Helper()
	l := p.next()
	ep, ok := strings.CutPrefix(l, "ready ")
	if !ok {
		p.t.Fatalf("zmqpeer.py printed %q; want ready ...", l)
	}
	return ep
}

func (p *pyPeer) send(tokens ...string) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.stdin, "send %s\n", strings.Join(tokens, " ")); err != nil {
		p.t.Fatalf("write to zmqpeer.py: %v", err)
	}
}

// kill stops the process with SIGKILL, as a crash would.
func (p *pyPeer) kill() {
	p.cmd.Process.Kill()
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(waitLong):
	}
	for range p.lines { // drain so the scanner goroutine ends
	}
}

// tok is how zmqpeer.py prints (and parses) a frame.
func tok(b []byte) string {
	switch {
	case len(b) == 0:
		return "-"
	case len(b) > 4096:
		sum := sha256.Sum256(b)
		return fmt.Sprintf("#%d:%s", len(b), hex.EncodeToString(sum[:]))
	}
	return hex.EncodeToString(b)
}

func toks(frames [][]byte) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = tok(f)
	}
	return out
}

func TestInteropPyDealerToGoRouter(t *testing.T) { servingModes(t, testInteropPyDealerToGoRouter) }

func testInteropPyDealerToGoRouter(t *testing.T, m servingMode) {
	needPyZMQ(t)
	r := newRouter(t, m.opts(nil))
	py := startPy(t, "dealer", endpointOf(r), "py-dealer-1", "--heartbeat", "100", "--heartbeat-timeout", "1000")
	py.ready()
	waitConnectedID(t, r.Events(), "py-dealer-1")

	py.send(tok([]byte("hello")), "-", tok([]byte("world")))
	id, f := routerRecv(t, r)
	if id != "py-dealer-1" || !framesEqual(f, strFrames("hello", "", "world")) {
		t.Fatalf("Recv = %q %q; want py-dealer-1 [hello  world]", id, f)
	}
	reply := [][]byte{[]byte("multi"), bytes.Repeat([]byte{0xAB}, 4<<20), {}}
	if err := r.Send(id, reply...); err != nil {
		t.Fatal(err)
	}
	if got := py.expectMsg(); strings.Join(got, " ") != strings.Join(toks(reply), " ") {
		t.Fatalf("python got %q; want %q", got, toks(reply))
	}
	py.send("*4194304:cd")
	if _, f := routerRecv(t, r); len(f) != 1 || !bytes.Equal(f[0], bytes.Repeat([]byte{0xCD}, 4<<20)) {
		t.Fatalf("4 MB frame from python: %d frames", len(f))
	}

	// libzmq sends a PING every 100 ms and drops the connection if nothing
	// comes back within 1 s: the connection must survive 2.5 s of that.
	// (Without PONGs it is dropped; checked by hand against a build that
	// swallows them.)
	time.Sleep(2500 * time.Millisecond) // real time has to pass for libzmq's heartbeats; nothing to poll
	select {
	case ev := <-r.Events():
		t.Fatalf("unexpected event during heartbeats: %+v", ev)
	default:
	}
	py.send(tok([]byte("still here")))
	if id, f := routerRecv(t, r); id != "py-dealer-1" || string(f[0]) != "still here" {
		t.Fatalf("after heartbeats Recv = %q %q", id, f)
	}

	// A python DEALER without identity gets a generated one.
	anon := startPy(t, "dealer", endpointOf(r), "-")
	anon.ready()
	anon.send(tok([]byte("anon")))
	id, _ = routerRecv(t, r)
	if len(id) != 5 || id[0] != 0 {
		t.Fatalf("anonymous python dealer identity = % x", id)
	}
}

func TestInteropGoDealerToPyRouter(t *testing.T) {
	needPyZMQ(t)
	py := startPy(t, "router", "tcp://127.0.0.1:*", "--echo")
	ep := py.ready()
	d := newDealer(t, ep, "go-dealer-1", testOpts(nil))
	waitEvent(t, d.Events(), Connected, waitLong)
	tests := [][][]byte{
		strFrames("hello"),
		strFrames("a", "", "c"),
		{bytes.Repeat([]byte("big"), 4<<20/3)},
	}
	for _, frames := range tests {
		if err := d.Send(frames...); err != nil {
			t.Fatal(err)
		}
		got := py.expectMsg()
		want := append([]string{tok([]byte("go-dealer-1"))}, toks(frames)...)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("python router got %q; want %q", got, want)
		}
		if echo := dealerRecv(t, d); !framesEqual(echo, frames) {
			t.Fatalf("echo = %d frames; want %d", len(echo), len(frames))
		}
	}
}

func TestInteropPyRouterRestart(t *testing.T) {
	needPyZMQ(t)
	py := startPy(t, "router", "tcp://127.0.0.1:*", "--echo")
	ep := py.ready()
	d := newDealer(t, ep, "go-worker", testOpts(nil))
	waitEvent(t, d.Events(), Connected, waitLong)
	d.Send([]byte("before"))
	py.expectMsg()
	dealerRecv(t, d)

	py.kill()
	waitEvent(t, d.Events(), Disconnected, waitLong)
	for i := range 3 { // queued while the router is down
		if err := d.Send([]byte(fmt.Sprint("queued-", i))); err != nil {
			t.Fatal(err)
		}
	}
	py2 := startPy(t, "router", ep, "--echo")
	py2.ready()
	waitEvent(t, d.Events(), Connected, waitLong)
	for i := range 3 {
		want := []string{tok([]byte("go-worker")), tok([]byte(fmt.Sprint("queued-", i)))}
		if got := py2.expectMsg(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("restarted router got %q; want %q", got, want)
		}
		if f := dealerRecv(t, d); string(f[0]) != fmt.Sprint("queued-", i) {
			t.Fatalf("echo %d = %q", i, f)
		}
	}
}

func TestInteropPyDealerRestart(t *testing.T) { servingModes(t, testInteropPyDealerRestart) }

func testInteropPyDealerRestart(t *testing.T, m servingMode) {
	needPyZMQ(t)
	r := newRouter(t, m.opts(nil))
	py := startPy(t, "dealer", endpointOf(r), "py-restart")
	py.ready()
	py.send(tok([]byte("one")))
	if id, f := routerRecv(t, r); id != "py-restart" || string(f[0]) != "one" {
		t.Fatalf("Recv = %q %q", id, f)
	}
	py.kill()
	py2 := startPy(t, "dealer", endpointOf(r), "py-restart")
	py2.ready()
	py2.send(tok([]byte("two")))
	if id, f := routerRecv(t, r); id != "py-restart" || string(f[0]) != "two" {
		t.Fatalf("Recv after restart = %q %q", id, f)
	}
	if err := r.Send("py-restart", []byte("to the new one")); err != nil {
		t.Fatal(err)
	}
	if got := py2.expectMsg(); len(got) != 1 || got[0] != tok([]byte("to the new one")) {
		t.Fatalf("restarted python dealer got %q", got)
	}
}

func TestInteropManyPyDealers(t *testing.T) { servingModes(t, testInteropManyPyDealers) }

func testInteropManyPyDealers(t *testing.T, m servingMode) {
	needPyZMQ(t)
	r := newRouter(t, m.opts(nil))
	const n = 200
	py := startPy(t, "many", endpointOf(r), fmt.Sprint(n))
	seen := map[string]bool{}
	for len(seen) < n {
		id, f := routerRecv(t, r)
		i, ok := strings.CutPrefix(id, "py-")
		if !ok || string(f[0]) != "hello-"+i || seen[id] {
			t.Fatalf("got %q from %q", f, id)
		}
		seen[id] = true
		if err := r.Send(id, []byte("welcome-"+i)); err != nil {
			t.Fatal(err)
		}
	}
	if l := py.next(); l != fmt.Sprint("ok ", n) {
		t.Fatalf("python printed %q; want ok %d", l, n)
	}
}

// TestInteropPyPlainDealerToGoRouter: a pyzmq DEALER with plain_username and
// plain_password joins our PLAIN Router; one with a wrong password is
// refused and counted, and none of its messages arrive.
func TestInteropPyPlainDealerToGoRouter(t *testing.T) {
	needPyZMQ(t)
	log := &logCapture{}
	r := newRouter(t, plainOpts(log, &testCreds))

	bad := startPy(t, "dealer", endpointOf(r), "py-intruder", "--plain", "cicada:wrong")
	bad.ready()
	bad.send(tok([]byte("let me in")))
	waitFor(t, waitLong, "a refused python dealer", func() bool { return r.AuthRefusals() >= 1 })
	log.waitErr(t, ErrAuth)
	bad.kill()

	py := startPy(t, "dealer", endpointOf(r), "py-plain", "--plain", "cicada:s3cret")
	py.ready()
	waitConnectedID(t, r.Events(), "py-plain")
	py.send(tok([]byte("hello")), tok([]byte("plain")))
	id, f := routerRecv(t, r)
	if id != "py-plain" || !framesEqual(f, strFrames("hello", "plain")) {
		t.Fatalf("Recv = %q %q; want py-plain [hello plain] (the refused dealer's message must not arrive)", id, f)
	}
	if err := r.Send(id, []byte("welcome")); err != nil {
		t.Fatal(err)
	}
	if got := py.expectMsg(); len(got) != 1 || got[0] != tok([]byte("welcome")) {
		t.Fatalf("python dealer got %q; want [welcome]", got)
	}
	for _, p := range r.Peers() {
		if p == "py-intruder" {
			t.Fatal("refused python dealer is registered")
		}
	}
}

// TestInteropGoPlainDealerToPyRouter: our Dealer against a pyzmq ROUTER that
// is a PLAIN server (ZAP handler: pyzmq's ThreadAuthenticator), with the
// right and a wrong password.
func TestInteropGoPlainDealerToPyRouter(t *testing.T) {
	needPyZMQ(t)
	py := startPy(t, "router", "tcp://127.0.0.1:*", "--echo", "--plain-server", "cicada:s3cret")
	ep := py.ready()

	log := &logCapture{}
	bad := newDealer(t, ep, "go-intruder", plainOpts(log, &PlainAuth{Username: "cicada", Password: "wrong"}))
	log.waitErr(t, ErrAuth)
	if !log.hasErr(ErrPeerError) {
		t.Fatalf("dealer logged %v; want the router's ERROR (ErrPeerError)", log.errs())
	}
	select {
	case ev := <-bad.Events():
		t.Fatalf("refused dealer got event %+v", ev)
	default:
	}
	bad.Close()

	d := newDealer(t, ep, "go-plain", plainOpts(nil, &testCreds))
	waitEvent(t, d.Events(), Connected, waitLong)
	if err := d.Send([]byte("hello"), []byte("plain")); err != nil {
		t.Fatal(err)
	}
	got := py.expectMsg()
	want := []string{tok([]byte("go-plain")), tok([]byte("hello")), tok([]byte("plain"))}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("python router got %q; want %q", got, want)
	}
	if echo := dealerRecv(t, d); !framesEqual(echo, strFrames("hello", "plain")) {
		t.Fatalf("echo = %q; want [hello plain]", echo)
	}
}
