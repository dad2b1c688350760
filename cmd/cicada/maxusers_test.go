package main

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
)

// TestWorkerMaxUsersFlag: `cicada --worker --max-users 3` asked for 10
// users by its master runs 3 and says so in spawning_complete, so the
// flag reaches worker.Options.MaxUsers (without it the ceiling would be
// twice the open-files limit, far above 10).
func TestWorkerMaxUsersFlag(t *testing.T) {
	srv := startTarget(t)
	path := writeScenario(t, "users:\n  - name: Web\n    wait: constant(1)\n    tasks: [{path: /}]\n")
	r, err := zmtp.Listen("tcp://127.0.0.1:0", zmtp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	port := r.Addr().(*net.TCPAddr).Port
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--worker", "-f", path, "-H", srv.URL(), "--master-host", "127.0.0.1",
			"--master-port", strconv.Itoa(port), "--max-users", "3"}, io.Discard, &out)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recv := func(typ string) (string, protocol.Message) {
		t.Helper()
		for {
			id, frames, err := r.Recv(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v; worker log:\n%s", typ, err, out.String())
			}
			m, err := protocol.Decode(frames[0])
			if err != nil {
				t.Fatalf("undecodable message: %v", err)
			}
			if m.Type == typ {
				return id, m
			}
		}
	}
	send := func(id, typ string, data any) {
		t.Helper()
		b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: "master"})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Send(id, b); err != nil {
			t.Fatalf("send %s: %v", typ, err)
		}
	}
	id, _ := recv(protocol.TypeClientReady)
	send(id, protocol.TypeAck, &protocol.Ack{Index: 0})
	host := srv.URL()
	send(id, protocol.TypeSpawn, &protocol.Spawn{Timestamp: float64(time.Now().UnixNano()) / 1e9,
		UserClassesCount: map[string]int64{"Web": 10}, Host: &host, ParsedOptions: map[string]any{}})
	_, m := recv(protocol.TypeSpawningComplete)
	if sc := m.Data.(*protocol.SpawningComplete); sc.UserCount != 3 || sc.UserClassesCount["Web"] != 3 {
		t.Errorf("spawning_complete = %+v; want the 3 users of --max-users", sc)
	}
	send(id, protocol.TypeQuit, nil)
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d; log:\n%s", code, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker did not quit; log:\n%s", out.String())
	}
}
