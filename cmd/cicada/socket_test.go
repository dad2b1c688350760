package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStandaloneWebSocket runs a websocket class standalone against the
// built-in target: the stats CSV has one WS row per step with as many
// exchanges as messages reached the target (but for the users' last,
// interrupted ones), and the failed check's row fails every time.
func TestStandaloneWebSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 2 s load test")
	}
	srv := startTarget(t)
	path := writeScenario(t, `users:
  - name: Chat
    kind: websocket
    url: /ws
    wait: constant(0.05)
    tasks:
      - steps:
          - {name: hello, send: hello, expect: {equals: hello}}
          - {name: wrong, send: abc, expect: {contains: xyz}}
`)
	prefix := filepath.Join(t.TempDir(), "run")
	var out syncBuffer
	var stdout bytes.Buffer
	code := run([]string{"-f", path, "--headless", "-u", "3", "-r", "3", "-t", "2s", "-H", srv.URL(), "--csv", prefix,
		"--expect-workers-max-wait", "20"}, &stdout, &out)
	if code != 1 { // the failing check makes failures, so exit code 1 as in Locust
		t.Fatalf("exit code %d, stderr:\n%s", code, out.String())
	}
	f, err := os.Open(prefix + "_stats.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ reqs, fails int }
	got := map[string]row{}
	for _, r := range rows[1:] {
		n, _ := strconv.Atoi(r[2])
		fl, _ := strconv.Atoi(r[3])
		got[r[0]+" "+r[1]] = row{n, fl}
	}
	hello, wrong := got["WS hello"], got["WS wrong"]
	if hello.reqs == 0 || hello.fails != 0 || wrong.fails != wrong.reqs || wrong.reqs < hello.reqs-3 || wrong.reqs > hello.reqs {
		t.Fatalf("rows %v", got)
	}
	// The stop interrupts at most one exchange per user (not recorded,
	// as in Locust), whose message may have reached the target.
	if sent, n := srv.SocketCounters().WSMessages, int64(hello.reqs+wrong.reqs); sent < n || sent > n+3 {
		t.Fatalf("the target received %d messages; the CSV has %d WS exchanges (%v)", sent, n, got)
	}
	if c := got["WS connect /ws"]; c.reqs != 3 || c.fails != 0 {
		t.Fatalf("connect row %+v", c)
	}
	if !strings.Contains(out.String()+stdout.String(), `CatchResponseError('WS "wrong": reply "abc" does not contain "xyz"')`) {
		t.Errorf("the error report does not name the failed step:\n%s", stdout.String())
	}
}

func TestTargetTCPEchoNeedsKernelTarget(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"target", "--dataplane", "afpacket", "--tcp-echo", "127.0.0.1:0"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--tcp-echo is served by the kernel target") {
		t.Fatalf("code %d, stderr %q", code, errb.String())
	}
}
