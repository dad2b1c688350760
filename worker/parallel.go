package worker

import (
	"context"
	"errors"
	"sync"

	"github.com/cicada-load/cicada/worker/httpc"
)

// ParallelRequestsFunc returns a task that sends reqs at once, one
// goroutine each, and returns when all are done: with HTTPOptions.HTTP2
// they are concurrent streams of the user's one connection (at most
// HTTPOptions.HTTP2Streams in flight; the rest wait for a stream). Each
// request is recorded in the stats as RequestsFunc records it. Without
// HTTP2 the user's HTTP/1.1 client serves one request at a time, so the
// others fail with ErrConcurrentUse: package scenario refuses
// `parallel: true` without `http2: true`. Set Task.Parallel beside it.
func ParallelRequestsFunc(reqs []Request) TaskFunc {
	return func(ctx context.Context, u *User) error {
		if len(reqs) == 0 {
			return nil
		}
		if _, err := u.HTTP(); err != nil {
			// No client: record the failure as the sequential task does.
			return u.DoDiscard(ctx, &reqs[0].HTTP, reqs[0].Expect)
		}
		u.lastReq = &reqs[len(reqs)-1].HTTP
		errs := make([]error, len(reqs))
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Go(func() { errs[i] = u.doDiscard(ctx, &reqs[i].HTTP, reqs[i].Expect, false) })
		}
		wg.Wait()
		if ctx.Err() != nil {
			return nil
		}
		for _, err := range errs {
			if errors.Is(err, ErrNoHost) || errors.Is(err, httpc.ErrInvalidURL) {
				return err // a configuration problem: reported as an exception
			}
		}
		return nil
	}
}
