package zmtp_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/cicada-load/cicada/protocol/zmtp"
)

// A Router (the master's side) and a Dealer (a worker) exchange one
// message each way. The Dealer connects in the background and queues what
// it sends until then; the Router learns the peer's identity from the
// handshake and addresses its answer by it.
func Example() {
	r, err := zmtp.Listen("tcp://127.0.0.1:0", zmtp.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	d, err := zmtp.Dial("tcp://"+r.Addr().String(), "worker-1", zmtp.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	if err := d.Send([]byte("hello")); err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, frames, err := r.Recv(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("router got %q from %s\n", frames[0], id)

	if err := r.Send(id, []byte("welcome")); err != nil {
		log.Fatal(err)
	}
	frames, err = d.Recv(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("dealer got %q\n", frames[0])
	// Output:
	// router got "hello" from worker-1
	// dealer got "welcome"
}
