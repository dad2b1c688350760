package worker_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// A worker with one Go user class joins a master. Here the master is a
// bare ZeroMQ Router standing in for `locust --master`: it sees the
// worker's client_ready, acknowledges it, and the worker's Quit then
// sends Locust's quit message before Run returns.
func Example() {
	sc := worker.Scenario{
		Host: "http://127.0.0.1:8080",
		Classes: []worker.UserClass{{
			Name: "WebUser",
			Wait: worker.Between(500*time.Millisecond, 2*time.Second),
			Tasks: []worker.Task{{Name: "index", Fn: func(ctx context.Context, u *worker.User) error {
				return u.DoDiscard(ctx, &httpc.Request{Path: "/"}, nil)
			}}},
		}},
	}

	master, err := zmtp.Listen("tcp://127.0.0.1:0", zmtp.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer master.Close()
	port := master.Addr().(*net.TCPAddr).Port

	w, err := worker.New(worker.Options{MasterHost: "127.0.0.1", MasterPort: port, DisableDiagnosis: true}, sc)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	recv := func() protocol.Message {
		_, frames, err := master.Recv(ctx)
		if err != nil {
			log.Fatal(err)
		}
		m, err := protocol.Decode(frames[0])
		if err != nil {
			log.Fatal(err)
		}
		return m
	}
	m := recv()
	fmt.Println("master got", m.Type, "from the worker:", m.NodeID == w.NodeID())
	ack, err := protocol.Encode(protocol.Message{Type: protocol.TypeAck, Data: &protocol.Ack{Index: 0}, NodeID: m.NodeID})
	if err != nil {
		log.Fatal(err)
	}
	if err := master.Send(m.NodeID, ack); err != nil {
		log.Fatal(err)
	}

	for !w.Registered() && ctx.Err() == nil {
		time.Sleep(time.Millisecond) // poll until the worker has read the ack
	}
	w.Quit()
	for m.Type != protocol.TypeQuit {
		m = recv() // heartbeats and the final stats report come first
	}
	fmt.Println("master got", m.Type)
	fmt.Println("Run returned", <-done)
	// Output:
	// master got client_ready from the worker: true
	// master got quit
	// Run returned <nil>
}
