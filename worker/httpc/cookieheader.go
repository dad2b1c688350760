package httpc

import (
	"bufio"
	"bytes"
	"strings"
	"time"
)

// CookieHeader returns the value of the Cookie header this Client would
// send with a request for path on its origin ("a=1; b=2"), or "" when no
// cookie matches (or cookies are disabled). secure says whether the
// request goes over TLS (Secure cookies are sent only then). It lets
// another protocol of the same user (a WebSocket handshake) carry the
// session the user's HTTP requests set. Like Do, it must not run
// concurrently with Do; it fails with ErrConcurrentUse if it does.
func (c *Client) CookieHeader(path string, secure bool) (string, error) {
	if !c.busy.CompareAndSwap(false, true) {
		return "", &Error{Kind: ClientClosed, Op: "request", Err: ErrConcurrentUse}
	}
	defer c.busy.Store(false)
	if c.jar == nil {
		return "", nil
	}
	var b bytes.Buffer
	bw := bufio.NewWriterSize(&b, 256)
	c.jar.write(bw, path, secure, time.Now())
	_ = bw.Flush()
	s := strings.TrimSuffix(strings.TrimPrefix(b.String(), "Cookie: "), "\r\n")
	return s, nil
}
