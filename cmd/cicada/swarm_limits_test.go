package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/web"
)

// One POST /swarm with user_count=spawn_rate=10^12 used to end the master
// with "fatal error: runtime: out of memory"; counts and rates beyond the
// dispatcher's ceilings are now answered with success false and the bound,
// and the master keeps serving.
func TestSwarmRefusesCountsBeyondCeilings(t *testing.T) {
	m, err := master.New(master.Options{BindHost: "127.0.0.1", BindPort: -1, UserClasses: []master.UserClass{{Name: "A"}},
		FinalReportTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	testpeer.Go(t, "the master", 30*time.Second, func(ctx context.Context) { _, _ = m.Run(ctx) })
	// A registered worker, so that a start reaches the dispatcher.
	d, err := zmtp.Dial("tcp://"+m.Addr().String(), "w_1", zmtp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	b, err := protocol.Encode(protocol.Message{Type: protocol.TypeClientReady, Data: &protocol.ClientReady{VersionSkipCheck: true}, NodeID: "w_1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Send(b); err != nil {
		t.Fatal(err)
	}
	// Also waits for Run to serve.
	testpeer.Eventually(t, 10*time.Second, "the worker to register", func() bool { return len(m.Status().Workers) == 1 })
	h := web.New(web.Options{}, &masterRunner{m: m, distributed: true}).Handler()
	swarm := func(users, rate string) (ok bool, msg string) {
		t.Helper()
		form := url.Values{"user_count": {users}, "spawn_rate": {rate}}
		req := httptest.NewRequest(http.MethodPost, "/swarm", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var body struct {
			Success bool   `json:"success"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("POST /swarm %s: %v (%q)", form.Encode(), err, rec.Body.String())
		}
		return body.Success, body.Message
	}
	tests := []struct {
		users, rate string
		wantOK      bool
		wantSub     string
	}{
		{"1000000000000", "1000000000000", false, "above the ceiling of 10000000 users"},
		{"10", "1e308", false, "above the ceiling"},
		{"10", "1e-300", false, "below the least rate"},
		{"10", "0", false, "spawn_rate"},
		{"10", "nan", false, "spawn_rate"},
		{"10", "2", true, ""},
	}
	for _, tt := range tests {
		ok, msg := swarm(tt.users, tt.rate)
		if ok != tt.wantOK || !strings.Contains(msg, tt.wantSub) {
			t.Errorf("POST /swarm user_count=%s spawn_rate=%s = %v, %q; want %v, %q", tt.users, tt.rate, ok, msg, tt.wantOK, tt.wantSub)
		}
	}
	if s := m.Status(); s.State == "" {
		t.Errorf("master Status() = %+v after the requests; want a live master", s)
	}
}

// The same bounds on the command line: refused with the reason, never
// replaced (-r 0 used to become 1, -r 1e-300 spawned everyone at once).
func TestCommandLineRefusesCountsBeyondCeilings(t *testing.T) {
	tests := []struct {
		args    []string
		wantSub string
	}{
		{[]string{"-u", "1000000000000", "-r", "1000000000000"}, "above the ceiling of 10000000 users"},
		{[]string{"-u", "10", "-r", "1e-300"}, "below the least rate"},
		{[]string{"-u", "10", "-r", "1e308"}, "above the ceiling"},
		{[]string{"-u", "10", "-r", "0"}, "-r/--spawn-rate: must be a positive finite number"},
	}
	for _, tt := range tests {
		// Without the bounds, the master would give up waiting for workers.
		args := append([]string{"--master", "--headless", "--expect-workers-max-wait", "1", "--master-bind-host", "127.0.0.1",
			"--master-bind-port", strconv.Itoa(freePort(t))}, tt.args...)
		var stdout bytes.Buffer
		var stderr syncBuffer
		if code := run(args, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), tt.wantSub) {
			t.Errorf("run(%q) = %d, stderr %q; want a non-zero code and %q", tt.args, code, stderr.String(), tt.wantSub)
		}
	}
}
