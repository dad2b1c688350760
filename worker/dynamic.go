package worker

import (
	"context"

	"github.com/cicada-load/cicada/worker/httpc"
)

// Checker decides whether a response is a success: Check returns the
// failure to record for resp (the answer to req), or nil. *Expect is the
// data form; package scenario's requests with captures implement it to
// read the response into the user's variables before it is recorded.
// Check runs on the user's goroutine and must not keep resp or its Body.
type Checker interface {
	Check(resp *httpc.Response, req *httpc.Request) error
}

// DoCheck is DoDiscard with a Checker instead of an Expect: the response
// (pooled, not returned) goes to c before the request is recorded, and
// c's error is the recorded failure. A nil c means a nil *Expect.
func (u *User) DoCheck(ctx context.Context, req *httpc.Request, c Checker) error {
	if c == nil {
		c = (*Expect)(nil)
	}
	resp := respPool.Get().(*httpc.Response)
	err := u.do(ctx, req, c, resp)
	if cap(resp.Body) <= 64<<10 {
		respPool.Put(resp)
	}
	return err
}

// Index returns the user's index on its worker: 0 for the first user the
// worker started, then 1, 2, ... in start order (users of every class
// count; a stopped user's index is not reused until 2^32 users started).
func (u *User) Index() int64 { return int64(u.src) }

// Worker returns the worker running the user, or nil for a user that a
// test built without one.
func (u *User) Worker() *Worker { return u.p.env.worker }

// CicadaMaster reports whether the master of the worker's latest ack is a
// cicada master (cicada's own messages are then understood); false before
// the first ack and for a Python Locust master.
func (w *Worker) CicadaMaster() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.cicadaMaster
}
