package target

import (
	"time"

	"github.com/valyala/fasthttp"
)

// Scripted stalls (issue 13): a window during which the server answers
// nothing. A request that arrives (or is being served) while a stall is on
// is held until the window ends, then served as usual; so is every request
// of the window, like a process paused by a long GC or a full disk. Two
// ways to script one:
//
//   - Options.StallAfter and StallFor (`cicada target --stall-after 5s
//     --stall-for 2s`): one window, StallAfter after New.
//   - /_cicada/stall?ms=N (any method, not counted as a request, never
//     stalled itself): a window of N milliseconds (at most MaxDelay) from
//     now, replacing any window not yet ended. It answers the window as
//     JSON {"from_unix_ns", "until_unix_ns"}.
//
// Stalls stop at shutdown, as /delay does.

var (
	pathStall = []byte("/_cicada/stall")
	argMS     = []byte("ms")
)

// setStall makes [from, until) the stall window (unix ns).
func (s *Server) setStall(from, until int64) {
	s.stallMu.Lock()
	s.stallFrom, s.stallUntil = from, until
	s.stallMu.Unlock()
}

// stallWait holds the caller until the stall window around now ends (or the
// server shuts down).
func (s *Server) stallWait() {
	s.stallMu.Lock()
	from, until := s.stallFrom, s.stallUntil
	s.stallMu.Unlock()
	if until == 0 {
		return
	}
	now := time.Now().UnixNano()
	if now < from || now >= until {
		return
	}
	t := time.NewTimer(time.Duration(until - now))
	select {
	case <-t.C:
	case <-s.done:
		t.Stop()
	}
}

func (s *Server) serveStall(ctx *fasthttp.RequestCtx) {
	ms, ok := atoiPath(ctx.QueryArgs().PeekBytes(argMS))
	if !ok {
		badRequest(ctx, "stall needs ms=<milliseconds>")
		return
	}
	d := min(time.Duration(ms)*time.Millisecond, s.opts.MaxDelay)
	now := time.Now().UnixNano()
	s.setStall(now, now+int64(d))
	ctx.SetContentType("application/json")
	ctx.Response.SetBodyString(`{"from_unix_ns":` + itoa64(now) + `,"until_unix_ns":` + itoa64(now+int64(d)) + "}\n")
}

func itoa64(v int64) string {
	var b [20]byte
	i := len(b)
	neg := v < 0
	if neg {
		v = -v
	}
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
