package scenario

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/worker"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUniqueFeedRefusedByPythonMaster: under a master whose ack is not
// cicada's (a Python Locust master), a user of a unique feed records a
// FEED failure saying why, logs it once, and stops; nothing is sent with
// an empty row.
func TestUniqueFeedRefusedByPythonMaster(t *testing.T) {
	path := writeFiles(t, map[string]string{"a.csv": "username,password\na,1\n"})
	if err := os.WriteFile(path, []byte(feedScenario("  - {name: accounts, file: a.csv, mode: unique}", "    feed: accounts")), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rc := &recorder{}
	srv := rc.serve(t)
	r, err := zmtp.Listen("tcp://127.0.0.1:0", zmtp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	logs := &syncBuf{}
	w, err := worker.New(worker.Options{MasterPort: r.Addr().(*net.TCPAddr).Port, StatsInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}, f.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	ran := testpeer.Go(t, "the worker", 10*time.Second, func(ctx context.Context) { _ = w.Run(ctx) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	send := func(typ string, data any) {
		b, err := protocol.Encode(protocol.Message{Type: typ, Data: data, NodeID: w.NodeID()})
		if err != nil {
			t.Fatal(err)
		}
		_ = r.Send(w.NodeID(), b)
	}
	var failure string
	for failure == "" {
		_, frames, err := r.Recv(ctx)
		if err != nil {
			t.Fatalf("no FEED failure reported: %v", err)
		}
		m, _ := protocol.Decode(frames[0])
		switch m.Type {
		case protocol.TypeClientReady:
			send(protocol.TypeAck, &protocol.Ack{Index: 0}) // no Cicada: a Python master
			send(protocol.TypeSpawn, &protocol.Spawn{Timestamp: 1, UserClassesCount: map[string]int64{"U": 3}, ParsedOptions: map[string]any{},
				Host: &srv.URL})
		case protocol.TypeStats:
			for _, e := range m.Data.(*protocol.StatsReport).Errors {
				if e.Method == "FEED" && e.Name == "accounts" {
					failure = e.Error
				}
			}
		}
	}
	if !strings.Contains(failure, "needs a cicada master") {
		t.Errorf("FEED failure = %q", failure)
	}
	if err := testpeer.Poll(10*time.Second, 10*time.Millisecond, func() bool { _, n := w.UserCount(); return n == 0 }); err != nil {
		t.Error("the users did not stop")
	}
	if n := strings.Count(logs.String(), "needs a cicada master"); n != 1 {
		t.Errorf("logged %d times; want once:\n%s", n, logs)
	}
	if got := rc.with("/row/"); len(got) != 0 {
		t.Errorf("requests sent without a row: %q", got)
	}
	send(protocol.TypeQuit, nil)
	<-ran
}
