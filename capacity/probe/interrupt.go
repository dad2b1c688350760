package probe

import (
	"context"
	"fmt"
	"net"
	"time"
)

// longAgo is a deadline in the past: it unblocks a connection's reads and
// writes at once.
var longAgo = time.Unix(1, 0)

// arm sets c's deadline to Timeout from now and makes ctx's end unblock c
// at once (a deadline in the past), so that a trial stopped by its
// context (SIGINT, a cluster's abort, a worker whose controller is gone)
// does not wait up to Timeout on each transaction or close in flight. The
// returned stop must be called when the operation ends.
//
// The order matters: the hook is registered before the deadline is set and
// ctx is checked after, so either the check sees ctx's end or the hook's
// past deadline lands after the one set here.
func (p *Prober) arm(ctx context.Context, c net.Conn) (stop func() bool, err error) {
	stop = context.AfterFunc(ctx, func() { _ = c.SetDeadline(longAgo) })
	if err := c.SetDeadline(time.Now().Add(p.o.Timeout)); err != nil {
		stop()
		return nil, fmt.Errorf("probe: deadline: %w", err)
	}
	if err := ctx.Err(); err != nil {
		stop()
		return nil, fmt.Errorf("probe: %w", err)
	}
	return stop, nil
}
